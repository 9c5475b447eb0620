"""Staged references, indexes, databases and models: the run-time inventory.

The bottom layer every command reads (above biotool's core, below `alignment`): `staged.json`
as typed items (`StagedItem`, biotool.staging.item), `find` and `staged_items(kind)` to look
one up, `status` (a typed `Status`: how a manifest item stands here, and its remedy),
`usable` (the one rule)
and `require(kind, name, what)`, which returns a usable item or raises the one refusal,
naming what is staged. Nothing here fetches or builds: the build-time staging is
biotool.stagebuild, run as `python -m biotool.staging` (this package's __main__, the one
program of it) at image build, which writes `staged.json`. Nothing is fetched at run time.

A site overlay (BIOTOOL_SITE_DIR, a read-only directory staged on the host by the same
command with `--dest DIR`) is merged into the inventory: each item says its `origin`
("image" or "site"), and an item the image lacks or could not stage comes from the site.

Manifests (`refs/*.toml`) hold `[[reference]]`, `[[database]]`, `[[model]]` and `[[sample]]`
tables:
  name, aliases, title, set ("demo" | "production"), source (a path under refs/, an https
  URL, or a list of them), sha256 (digest of a source shipped in refs/), indexes (for
  references: "faidx", "bwa" for short reads, "minimap2:<preset>" for long reads; for
  databases: "blastdb"), prepare (what to make of the fetched files: "fasta",
  "blastdb-tar", "gene-table", "hf-model"), and for items built rather than fetched,
  builder (a name of biotool.stagebuild.hooks.BUILDERS); for an "hf-model" item, check (a
  name of biotool.stagebuild.hooks.CHECKS), which proves the model answers.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from biotool import settings
from biotool.cache import sha256_tree
from biotool.output import InputError
from biotool.staging.item import StagedItem
from biotool.staging.manifest import ManifestEntry, item_key

REPO_REFS = Path(__file__).resolve().parents[3] / "refs"
KINDS = ("reference", "database", "model", "sample")
INVENTORY = "staged.json"
# How a manifest item this image did not stage is said (status' reason starts with it).
NOT_STAGED = "not staged in this image"
LOCK = "pins.lock.toml"


class StagingError(RuntimeError):
    """A manifest item could not be staged; the message names the item and why."""


def home() -> Path:
    """Where staged items live: BIOTOOL_HOME, else /opt/biotool."""
    return settings.HOME.get()


def site_dir() -> Path | None:
    """The site overlay (BIOTOOL_SITE_DIR) when it holds a staged.json, else None."""
    site = settings.SITE_DIR.get()
    return site if site and (site / INVENTORY).is_file() else None


def manifest_dir() -> Path:
    """The manifests: staged beside the items in the image, else the repository's refs/."""
    if settings.MANIFESTS.get():
        return settings.MANIFESTS.get()
    staged_copy = home() / "manifests"
    return staged_copy if staged_copy.is_dir() else REPO_REFS


def load_manifests(directory: Path | None = None) -> list[ManifestEntry]:
    """Every manifest item, frozen with its `kind` and key, in file then declaration order."""
    directory = Path(directory or manifest_dir())
    items = []
    for path in sorted(directory.glob("*.toml")):
        if path.name == LOCK:
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise StagingError(f"{path}: not valid TOML: {exc}") from None
        for kind in KINDS:
            for entry in data.get(kind, []):
                if "name" not in entry:
                    raise StagingError(f"{path}: a [[{kind}]] entry has no name")
                items.append(ManifestEntry(kind, path.name, entry))
    return items


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return -1.0


def _load(root: Path) -> dict:
    try:
        return json.loads((root / INVENTORY).read_text())
    except (OSError, ValueError):
        return {"items": {}}


def usable(item: StagedItem | None) -> bool:
    """Whether a looked-up item (None: there is none) is one a command may use
    (StagedItem.usable, the one rule)."""
    return item is not None and item.usable


@dataclass(frozen=True)
class Inventory:
    """The staged items a command may look up, by "kind/name", and the site overlay merged
    into them (None without one)."""
    items: Mapping[str, StagedItem]
    site: str | None


@lru_cache(maxsize=8)
def _merged(home_dir: str, home_mtime: float, site: str | None, site_mtime: float) -> Inventory:
    merged: dict[str, StagedItem] = {}
    base = _load(Path(home_dir))
    for key, record in base.get("items", {}).items():
        merged[key] = StagedItem.from_record(record, "image", Path(home_dir))
    if site is not None:
        for key, record in _load(Path(site)).get("items", {}).items():
            item = StagedItem.from_record(record, "site", Path(site))
            if key not in merged or (not merged[key].usable and item.usable):
                merged[key] = item
    return Inventory(MappingProxyType(merged), site)


def inventory() -> Inventory:
    """The image's staged.json merged with the site overlay's.

    A site item fills a key the image lacks or could not stage, never replaces a usable one.
    """
    site = site_dir()
    return _merged(str(home()), _mtime(home() / INVENTORY), str(site) if site else None,
                   _mtime(site / INVENTORY) if site else -1.0)


def staged_items(kind: str | None = None) -> list[StagedItem]:
    items = inventory().items.values()
    return [i for i in items if kind is None or i.kind == kind]


def find(kind: str, name: str) -> StagedItem | None:
    """A staged item by name or alias (case-insensitive), or None."""
    want = name.strip().lower()
    for item in staged_items(kind):
        if want in (n.lower() for n in item.names):
            return item
    return None


def require(kind: str, name: str, what: str, otherwise: str | None = None) -> StagedItem:
    """The usable staged `kind` of that name or alias; else the one refusal (InputError, exit
    2) of an item a command was asked for and cannot use here. It names where the name was
    given (`what`: `--database`, `args.reference`), the item (by its own name where the
    inventory or a manifest knows it), why (staging's error, or the manifests' word: a set
    this image did not stage, or no manifest names it), what of that kind is staged, and
    `otherwise`, what else the option takes (a FASTA file, a folder)."""
    item = find(kind, name)
    if usable(item):
        return item
    if item is not None:
        name, why = item.name, item.error or "no files"
    else:
        want = name.strip().lower()
        named = [e for e in load_manifests() if e["kind"] == kind and
                 want in (n.lower() for n in (e["name"], *e.get("aliases", ())))]
        why = "no manifest names it"
        if named:
            name, why = named[0]["name"], status(named[0]).reason or NOT_STAGED
    staged = sorted(i.name for i in staged_items(kind) if i.usable)
    raise InputError(f"{what}: no usable staged {kind} {name!r} ({why}); staged {kind}s: "
                     f"{', '.join(staged) or 'none'}; see `biotool list`"
                     + (f", or give {otherwise}" if otherwise else ""))


def verify(item: StagedItem) -> list[str]:
    """Problems with a staged item's files on disk: missing, or sha256 not as recorded."""
    problems = []
    for key, rec in item.files.items():
        p = item.path(key)
        if not p.exists():
            problems.append(f"{key}: {p} is missing")
        elif sha256_tree(p) != rec.sha256:
            problems.append(f"{key}: {p} does not match its recorded sha256")
    return problems


@dataclass(frozen=True)
class Status:
    """How a manifest item stands here: staged and usable, or why not (`reason`; for an item of
    a set this image did not stage, `remedy` says how to stage it), and where it came from."""
    kind: str
    name: str
    set: str
    title: str
    staged: bool
    usable: bool
    origin: str | None = None  # "image" or "site", where a record of it was found
    sha256: str | None = None
    path: str | None = None
    source: Any = None         # where its files came from (URLs, a refs/ path, a builder)
    use: str | None = None     # how a tool is pointed at it
    tofu: bool = False
    reason: str | None = None
    remedy: str | None = None

    def record(self) -> dict[str, Any]:
        """As `list` and `references` print it: what was found, in this order (the digest,
        path and source only of a staged item; the remedy is in the reason)."""
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "set": self.set,
                               "title": self.title}
        if self.origin is not None:
            out["origin"] = self.origin
        out.update(staged=self.staged, usable=self.usable)
        if self.staged:
            out.update(sha256=self.sha256, path=self.path, source=self.source)
        if self.use is not None:
            out["use"] = self.use
        if self.tofu:
            out["tofu"] = True
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def status(entry: Mapping[str, Any]) -> Status:
    """How a manifest item (or a staged item's record) stands here."""
    staged = inventory().items.get(item_key(entry["kind"], entry["name"]))
    said = dict(kind=entry["kind"], name=entry["name"], set=entry.get("set", "production"),
                title=entry.get("title", ""))
    if staged is None:
        remedy = _remedy(entry)
        return Status(**said, staged=False, usable=False, remedy=remedy,
                      reason=f"{NOT_STAGED}: set '{said['set']}' ({remedy})")
    if staged.error:
        return Status(**said, origin=staged.origin, staged=False, usable=False,
                      reason=staged.error)
    missing = [k for k in staged.files if not staged.path(k).exists()]
    return Status(**said, origin=staged.origin, staged=True, usable=not missing,
                  sha256=staged.sha256, path=str(staged.path()),
                  source=list(staged.fetched_from or ()) or entry.get("source") or
                  entry.get("builder"),
                  use=staged.use_line() if staged.use and not missing else None,
                  tofu=bool(staged.tofu),
                  reason=f"staged files missing: {', '.join(missing)}" if missing else None)


def how_to_stage(set_name: str, source: str = "the sources in refs/*.toml") -> str:
    """The one remedy for what a set this image did not stage holds (an item's, or a whole
    set's in `biotool list`): build it in, or stage it on the host into a site overlay."""
    return (f"build with --build-arg {settings.STAGE.name}={set_name} (make image "
            f"{settings.STAGE.name}={set_name}) on a host that can reach {source}, or stage it "
            f"into a site directory mounted at {settings.SITE_DIR.name}")


def _remedy(entry: Mapping[str, Any]) -> str:
    """How to stage an item of a set this image did not stage."""
    src = entry.get("source") or entry.get("builder") or "?"
    return how_to_stage(entry.get("set", "production"), src[0] if isinstance(src, list) else src)
