"""A staged item as every command reads it: one record of the inventory (`staged.json`, or a
site overlay's), typed, with where its files are and whether a command may use it.

Standard library only: `biotool list` reads every item, and its start-up imports no heavy
library (tests/unit/system/test_contract.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

# The keys a merged record carried beside staged.json's (where it came from, what its paths
# are relative to): attributes here, never written back into a record.
PLACED = ("origin", "root")


@dataclass(frozen=True)
class StagedFile:
    """One of an item's files ("main", "faidx", "bwa": a folder, ...), its path relative to
    the item's root and its sha256 (biotool.cache.sha256_tree)."""
    path: str
    sha256: str


@dataclass(frozen=True)
class StagedItem:
    """One staged record. The manifest fields families read are attributes, None where the
    record has none (so a record reads back exactly as written); the rest (pin, manifest,
    indexes, prepare, ...) stay in `extra`."""
    kind: str
    name: str
    files: Mapping[str, StagedFile]
    origin: str  # "image" or "site"
    root: Path   # the directory its file paths are relative to
    error: str | None = None
    sha256: str | None = None
    aliases: tuple[str, ...] | None = None
    title: str | None = None
    set: str | None = None
    organism: str | None = None
    format: str | None = None
    reference: str | None = None  # a GTF's genome
    framework: str | None = None
    tissue: str | None = None
    tokenizer: str | None = None
    molecule: str | None = None
    taxa: Mapping[str, Any] | None = None
    use: str | None = None
    tofu: bool | None = None
    fetched_from: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        """The one rule for a staged item a command may use: it has files, and staging
        recorded no error for it."""
        return bool(self.files) and not self.error

    @property
    def names(self) -> tuple[str, ...]:
        """Its name and aliases, as `find` matches them."""
        return (self.name, *(self.aliases or ()))

    def path(self, file_key: str = "main") -> Path:
        """Absolute path of one of its files."""
        return self.root / self.files[file_key].path

    def use_line(self) -> str:
        """How a tool is pointed at it (`use`, recorded at staging), with its paths."""
        return (self.use or "").format(**{k: self.path(k) for k in self.files})

    @classmethod
    def from_record(cls, record: Mapping[str, Any], origin: str, root: Path) -> StagedItem:
        """The item of one staged.json record, staged into `root`."""
        typed = {f.name for f in fields(cls)} - {"files", "origin", "root", "extra"}
        # A key recorded as null stays in extra, so the record reads back as written.
        values = {k: v for k, v in record.items() if k in typed and v is not None}
        for key in ("aliases", "fetched_from"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        if values.get("taxa") is not None:
            values["taxa"] = MappingProxyType(values["taxa"])
        files = {k: StagedFile(f["path"], f["sha256"]) for k, f in record["files"].items()}
        extra = {k: v for k, v in record.items()
                 if k not in values and k != "files" and k not in PLACED}
        return cls(files=MappingProxyType(files), origin=origin, root=Path(root),
                   extra=MappingProxyType(extra), **values)

    def record(self) -> dict[str, Any]:
        """The staged.json record it was read from, key for key."""
        out: dict[str, Any] = dict(self.extra)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("files", "extra", *PLACED) or value is None:
                continue
            out[f.name] = (list(value) if isinstance(value, tuple) else
                           dict(value) if isinstance(value, MappingProxyType) else value)
        out["files"] = {k: {"path": f.path, "sha256": f.sha256} for k, f in self.files.items()}
        return out
