"""Staged references, indexes, databases and models: manifests in, verified files out.

At build time `python -m biotool.staging --refs refs --dest /opt/biotool --sets demo` fetches
each manifest item of the chosen sets, checks its sha256, builds its indexes and writes
`staged.json`, the inventory every command reads at run time. Nothing is fetched at run time.

Manifests (`refs/*.toml`) hold `[[reference]]`, `[[database]]`, `[[model]]` and `[[sample]]`
tables:
  name, aliases, title, set ("demo" | "production"), source (a path under refs/, an https
  URL, or a list of them for databases), sha256 (pinned digest of the source), indexes
  (for references: "faidx", "minimap2:<preset>"; for databases: "blastdb"), and for items
  built rather than fetched, builder = "module:function" called as fn(dest_dir, refs_dir).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tomllib
import urllib.request
from functools import lru_cache
from pathlib import Path

from biotool.cache import atomic_path, sha256_tree

IMAGE_HOME = Path("/opt/biotool")
REPO_REFS = Path(__file__).resolve().parents[2] / "refs"
KINDS = ("reference", "database", "model", "sample")
INVENTORY = "staged.json"


class StagingError(RuntimeError):
    """A manifest item could not be staged; the message names the item and why."""


def home() -> Path:
    """Where staged items live: BIOTOOL_HOME, else /opt/biotool."""
    return Path(os.environ.get("BIOTOOL_HOME", IMAGE_HOME))


def manifest_dir() -> Path:
    """The manifests: staged beside the items in the image, else the repository's refs/."""
    env = os.environ.get("BIOTOOL_MANIFESTS")
    if env:
        return Path(env)
    staged_copy = home() / "manifests"
    return staged_copy if staged_copy.is_dir() else REPO_REFS


def load_manifests(directory: Path | None = None) -> list[dict]:
    """Every manifest item, each with its `kind`, in file then declaration order."""
    directory = Path(directory or manifest_dir())
    items = []
    for path in sorted(directory.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise StagingError(f"{path}: not valid TOML: {exc}") from None
        for kind in KINDS:
            for entry in data.get(kind, []):
                if "name" not in entry:
                    raise StagingError(f"{path}: a [[{kind}]] entry has no name")
                items.append({"kind": kind, "manifest": path.name, **entry})
    return items


@lru_cache(maxsize=4)
def _inventory(path: str, mtime: float) -> dict:
    return json.loads(Path(path).read_text())


def inventory() -> dict:
    """staged.json as a dict {"items": {kind/name: record}, ...}; empty when nothing is staged."""
    path = home() / INVENTORY
    try:
        return _inventory(str(path), path.stat().st_mtime)
    except (OSError, ValueError):
        return {"items": {}}


def staged_items(kind: str | None = None) -> list[dict]:
    items = inventory().get("items", {}).values()
    return [i for i in items if kind is None or i["kind"] == kind]


def find(kind: str, name: str) -> dict | None:
    """A staged item by name or alias (case-insensitive), or None."""
    want = name.strip().lower()
    for item in staged_items(kind):
        names = [item["name"], *item.get("aliases", [])]
        if want in (n.lower() for n in names):
            return item
    return None


def path_of(item: dict, file_key: str = "main") -> Path:
    """Absolute path of one of a staged item's files ("main", "faidx", "minimap2:sr", ...)."""
    return home() / item["files"][file_key]["path"]


def verify(item: dict) -> list[str]:
    """Problems with a staged item's files on disk: missing, or sha256 not as recorded."""
    problems = []
    for key, rec in item.get("files", {}).items():
        p = path_of(item, key)
        if not p.exists():
            problems.append(f"{key}: {p} is missing")
        elif sha256_tree(p) != rec["sha256"]:
            problems.append(f"{key}: {p} does not match its recorded sha256")
    return problems


def status(entry: dict) -> dict:
    """How a manifest item stands here: staged and usable, or why not."""
    staged = inventory().get("items", {}).get(f"{entry['kind']}/{entry['name']}")
    out = {"kind": entry["kind"], "name": entry["name"], "set": entry.get("set", "production"),
           "title": entry.get("title", "")}
    if staged is None:
        out.update(staged=False, usable=False, reason=_unstaged_reason(entry))
        return out
    if staged.get("error"):
        out.update(staged=False, usable=False, reason=staged["error"])
        return out
    missing = [k for k in staged["files"] if not path_of(staged, k).exists()]
    out.update(staged=True, usable=not missing, sha256=staged["sha256"],
               path=str(path_of(staged)))
    if missing:
        out["reason"] = f"staged files missing: {', '.join(missing)}"
    return out


def _unstaged_reason(entry: dict) -> str:
    src = entry.get("source") or entry.get("builder") or "?"
    src = src[0] if isinstance(src, list) else src
    set_name = entry.get("set", "production")
    return (f"not staged in this image: set '{set_name}' (build with "
            f"--build-arg BIOTOOL_STAGE={set_name} on a host that can reach {src})")


# ---------------------------------------------------------------- build time

def _fetch(source: str, refs_dir: Path, dest: Path) -> None:
    if source.startswith(("https://", "http://")):
        with urllib.request.urlopen(source, timeout=600) as resp, atomic_path(dest) as tmp:
            with open(tmp, "wb") as out:
                shutil.copyfileobj(resp, out, 1 << 20)
        return
    src = (refs_dir / source).resolve()
    if not src.exists():
        raise StagingError(f"source {src} does not exist")
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True)
    else:
        shutil.copyfile(src, dest)


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise StagingError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")


def _build_index(kind: str, fasta: Path, index: str, item_dir: Path) -> Path:
    """Build one index next to the item and return the path recorded for it."""
    if index == "faidx":
        _run(["samtools", "faidx", str(fasta)])
        return Path(str(fasta) + ".fai")
    if index.startswith("minimap2:"):
        preset = index.split(":", 1)[1]
        out = item_dir / f"{fasta.stem}.{preset}.mmi"
        _run(["minimap2", "-x", preset, "-d", str(out), str(fasta)])
        return out
    if index == "blastdb":
        db = item_dir / "db"
        _run(["makeblastdb", "-in", str(fasta), "-dbtype", "nucl", "-parse_seqids",
              "-title", fasta.stem, "-out", str(db)])
        return item_dir  # the database is the directory of db.* files
    raise StagingError(f"unknown index {index!r} for {kind}")


def _call_builder(spec: str, dest: Path, refs_dir: Path) -> Path:
    import importlib

    module, _, func = spec.partition(":")
    return Path(getattr(importlib.import_module(module), func)(dest, refs_dir))


def stage_item(entry: dict, refs_dir: Path, dest_home: Path) -> dict:
    kind, name = entry["kind"], entry["name"]
    item_dir = dest_home / f"{kind}s" / name
    if item_dir.exists():
        shutil.rmtree(item_dir)
    item_dir.mkdir(parents=True)
    files: dict[str, Path] = {}
    if entry.get("builder"):
        files["main"] = _call_builder(entry["builder"], item_dir, refs_dir)
    else:
        sources = entry.get("source")
        if not sources:
            raise StagingError(f"{kind} {name}: neither source nor builder")
        sources = sources if isinstance(sources, list) else [sources]
        pins = entry.get("sha256")
        pins = pins if isinstance(pins, list) else [pins] * (len(sources) == 1)
        if len(pins) != len(sources) or not all(pins):
            raise StagingError(f"{kind} {name}: one sha256 per source is required")
        parts = []
        for src, pin in zip(sources, pins):
            part = item_dir / (Path(src).name if len(sources) > 1 else
                               entry.get("filename", Path(src).name))
            _fetch(src, refs_dir, part)
            got = sha256_tree(part)
            if got != pin:
                raise StagingError(f"{kind} {name}: {src} has sha256 {got}, manifest pins {pin}")
            parts.append(part)
        if len(parts) > 1:  # a database from several FASTA files: concatenate once
            main = item_dir / f"{name}.fasta"
            with open(main, "wb") as out:
                for part in parts:
                    out.write(part.read_bytes().rstrip(b"\n") + b"\n")
                    part.unlink()
            files["main"] = main
        else:
            files["main"] = parts[0]
        for index in entry.get("indexes", []):
            files[index] = _build_index(kind, files["main"], index, item_dir)
    record = {k: v for k, v in entry.items() if k not in ("kind",)}
    record.update(
        kind=kind,
        files={k: {"path": str(p.relative_to(dest_home)),
                   "sha256": sha256_tree(p)} for k, p in files.items()},
    )
    record["sha256"] = record["files"]["main"]["sha256"]
    return record


def stage(refs_dir: Path, dest_home: Path, sets: list[str]) -> dict:
    """Stage every manifest item in `sets`; unreachable production items are recorded, not fatal."""
    dest_home.mkdir(parents=True, exist_ok=True)
    items = {}
    for entry in load_manifests(refs_dir):
        if entry.get("set", "production") not in sets:
            continue
        key = f"{entry['kind']}/{entry['name']}"
        print(f"staging {key}", file=sys.stderr)
        try:
            items[key] = stage_item(entry, refs_dir, dest_home)
        except (StagingError, OSError) as exc:
            # A pinned demo item must stage; a production item the host cannot reach is reported.
            if entry.get("set") == "demo":
                raise StagingError(f"{key}: {exc}") from None
            items[key] = {"kind": entry["kind"], "name": entry["name"], "set": entry.get("set"),
                          "error": f"staging failed at build time: {exc}", "files": {}}
    shutil.copytree(refs_dir, dest_home / "manifests", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("demo", "__pycache__"))
    inv = {"sets": sets, "items": items}
    with atomic_path(dest_home / INVENTORY) as tmp:
        tmp.write_text(json.dumps(inv, indent=1, sort_keys=True))
    return inv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m biotool.staging", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refs", type=Path, default=REPO_REFS, help="manifest directory")
    ap.add_argument("--dest", type=Path, default=None, help="staging root (BIOTOOL_HOME)")
    ap.add_argument("--sets", default="demo", help="comma-separated sets to stage")
    args = ap.parse_args(argv)
    dest = args.dest or home()
    try:
        inv = stage(args.refs.resolve(), dest, [s for s in args.sets.split(",") if s])
    except StagingError as exc:
        print(f"staging: error: {exc}", file=sys.stderr)
        return 1
    ok = sum(1 for i in inv["items"].values() if not i.get("error"))
    print(f"staged {ok}/{len(inv['items'])} items into {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
