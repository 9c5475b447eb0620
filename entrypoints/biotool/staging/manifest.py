"""A manifest entry (`refs/*.toml`): one item to stage, read once by the loader
(`staging.load_manifests`) into a frozen value that carries its inventory key."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterator, Mapping


def item_key(kind: str, name: str) -> str:
    """The one spelling of an item's key, in the inventory, the pin lock and the manifests."""
    return f"{kind}/{name}"


@dataclass(frozen=True, eq=False)
class ManifestEntry(Mapping[str, Any]):
    """One `[[KIND]]` table of manifest file `manifest`. Its own fields (`name` first among
    them) differ by kind and preparer, so the entry reads as a read-only mapping too: `kind`,
    `manifest`, then every field as the manifest declares it."""

    kind: str
    manifest: str
    fields: Mapping[str, Any]

    def __post_init__(self) -> None:
        # A caller's dict is copied, so no one changes an entry after the loader made it.
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))

    @property
    def name(self) -> str:
        return self.fields["name"]

    @property
    def key(self) -> str:
        return item_key(self.kind, self.name)

    def __getitem__(self, field: str) -> Any:
        if field == "kind":
            return self.kind
        if field == "manifest":
            return self.manifest
        return self.fields[field]

    def __iter__(self) -> Iterator[str]:
        yield "kind"
        yield "manifest"
        yield from (k for k in self.fields if k not in ("kind", "manifest"))

    def __len__(self) -> int:
        return 2 + sum(k not in ("kind", "manifest") for k in self.fields)
