"""Build-time staging of one home: manifests + pin lock in, verified items and staged.json
out (`stage`; the command is biotool.stagebuild.cli, run as `python -m biotool.staging`).

Every production item is fetched from the URLs its pin records and checked byte for byte
against the pin's sha256 and size, in three passes that fail fast: pins, downloads, then
preparing (biotool.stagebuild.prepare) and indexing. Each item is built in a hidden folder
and renamed into place only when complete, so nothing half-staged is ever left. The manifest
entries are frozen: a preparer returns what it made and found, and the record is written
from that.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from biotool.cache import atomic_path, sha256_tree
from biotool.staging import INVENTORY, LOCK, StagingError, load_manifests, usable
from biotool.staging.item import StagedItem
from biotool.staging.manifest import ManifestEntry
from biotool.stagebuild import pins as pinning
from biotool.stagebuild.fetch import PinMismatch, download, head_size
from biotool.stagebuild.hooks import BUILDERS, named
from biotool.stagebuild.prepare import Beside, prepare
from biotool.stagebuild.tools import Prepared

Entry = ManifestEntry  # frozen by the loader: read, never changed


def _built(entry: Entry, dest: Path, refs_dir: Path) -> Prepared:
    """An item its manifest's `builder` makes (a name of hooks.BUILDERS)."""
    build = named(BUILDERS, "builder", entry["builder"], pinning.label(entry))
    return Prepared({"main": Path(build(dest, refs_dir))})


def _local_sources(entry: Entry, refs_dir: Path, into: Path) -> list[Path]:
    """Files shipped in refs/ (or URLs pinned in the manifest itself), checked by its sha256."""
    srcs = pinning.sources(entry)
    digests = entry.get("sha256")
    digests = digests if isinstance(digests, list) else [digests] * (len(srcs) == 1)
    if len(digests) != len(srcs) or not all(digests):
        raise StagingError(f"{pinning.label(entry)}: one sha256 per source is required")
    out = []
    for src, digest in zip(srcs, digests):
        part = into / (Path(src).name if len(srcs) > 1 else entry.get("filename", Path(src).name))
        if src.startswith(("https://", "http://")):
            download(src, part, pinning.label(entry), sha256=digest)
        else:
            path = (refs_dir / src).resolve()
            if not path.exists():
                raise StagingError(f"source {path} does not exist")
            if path.is_dir():
                shutil.copytree(path, part, dirs_exist_ok=True)
            else:
                shutil.copyfile(path, part)
            got = sha256_tree(part)
            if got != digest:
                raise StagingError(f"{pinning.label(entry)}: {src} has sha256 {got}, manifest "
                                   f"pins {digest}")
        out.append(part)
    return out


def _pinned_sources(entry: Entry, pin: dict, into: Path) -> list[Path]:
    out = []
    for f in pin["files"]:
        path = into / f["path"]
        download(f["url"], path, f"{pinning.label(entry)}: {f['path']}", sha256=f["sha256"],
                 size=f["size"])
        out.append(path)
    return out


def _unpinned_line(entry: Entry) -> str:
    return (f"{pinning.label(entry)}: not pinned in refs/{LOCK}; pin it on a host that reaches "
            f"{pinning.sources(entry)[0]} with `make pins` (python -m biotool.staging pin "
            f"--sets {entry.get('set', 'production')} --only {entry['name']}) and commit the "
            "lock, or build with --build-arg BIOTOOL_TOFU=1 to trust what it serves now")


@dataclass(frozen=True)
class Fetched:
    """One item with its sources downloaded and verified into its hidden work folder."""
    entry: Entry
    work: Path
    files: list[Path] | None  # None: a builder makes the item
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.entry.key


def _refresh(entry: Entry) -> str:
    return (f"refresh its pin with `make pins PINS_ONLY={entry['name']}` (python -m "
            f"biotool.staging pin --only {entry['name']}) and commit refs/{LOCK}")


def fetch_item(entry: Entry, refs_dir: Path, dest_home: Path, pins: dict | None = None,
               tofu: bool = False) -> Fetched:
    """Download and verify one item's sources into dest_home/<kind>s/.<name>.staging."""
    kind, name = entry.kind, entry.name
    work = dest_home / f"{kind}s" / f".{name}.staging"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        if entry.get("builder"):
            return Fetched(entry, work, None)
        if not pinning.sources(entry):
            raise StagingError(f"{kind} {name}: neither source nor builder")
        into = work / "weights" if entry.get("prepare") == "hf-model" else work
        if entry.get("sha256"):
            return Fetched(entry, work, _local_sources(entry, refs_dir, into))
        extra: dict = {}
        pin = (pins or {}).get(entry.key)
        if pin is None:
            if not tofu:
                raise StagingError(_unpinned_line(entry))
            revision, resolved = pinning.resolve(entry)
            pinning.refuse_rewritten(entry, resolved)
            pin = pinning.fetch_resolved(entry, revision, resolved, into)
            fetched = [into / f["path"] for f in pin["files"]]
            extra["tofu"] = True
        else:
            try:
                fetched = _pinned_sources(entry, pin, into)
            except PinMismatch as exc:
                raise StagingError(f"{exc.url} changed since it was pinned on {pin['pinned']} "
                                   f"({exc.what}): {_refresh(entry)}") from None
        extra["pin"] = pin
        extra["fetched_from"] = [f["url"] for f in pin["files"]]
        return Fetched(entry, work, fetched, extra)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def finish_item(item: Fetched, refs_dir: Path, dest_home: Path,
                staged: dict | None = None) -> dict:
    """Prepare a fetched item (unpack, index, check), rename it into place; its record.
    `staged`: the records already staged in dest_home, for an item checked against another."""
    entry, work = item.entry, item.work
    kind, name = entry["kind"], entry["name"]
    try:
        if item.files is None:
            made = _built(entry, work, refs_dir)
        else:
            made = prepare(entry, item.files, work, Beside(dest_home, dict(staged or {})))
        # The manifest's fields, then what preparing found, then where it was fetched from.
        record = {k: v for k, v in entry.items() if k != "kind"}
        record.update(made.facts)
        record.update(item.extra, kind=kind, files={
            k: {"path": str(Path(f"{kind}s") / name / p.relative_to(work)),
                "sha256": sha256_tree(p)} for k, p in made.files.items()})
        record["sha256"] = record["files"]["main"]["sha256"]
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    final = dest_home / f"{kind}s" / name
    shutil.rmtree(final, ignore_errors=True)
    os.replace(work, final)
    return record


def preflight(entries: list[Entry], pins: dict, tofu: bool) -> dict[str, str]:
    """Before any download: {key: why} for items that cannot stage as pinned: unpinned (with
    no trust on first use), or a source whose size is no longer the pinned one (a HEAD
    request; a server that does not say is checked by the download itself)."""
    bad = {}
    for entry in entries:
        key = entry.key
        if entry.get("builder") or entry.get("sha256") or not pinning.sources(entry):
            continue
        pin = pins.get(key)
        if pin is None:
            if not tofu:
                bad[key] = _unpinned_line(entry)
            continue
        for f in pin["files"]:
            size = head_size(f["url"])
            if size is not None and size != f["size"]:
                bad[key] = (f"{pinning.label(entry)}: {f['url']} changed since it was pinned on "
                            f"{pin['pinned']} (it is {size} bytes now, the lock pins "
                            f"{f['size']}): {_refresh(entry)}")
                break
    return bad


def _summary(items: dict, dest: Path) -> str:
    ok = [k for k, i in items.items() if not i.get("error")]
    lines = [f"staging: summary: {len(ok)} of {len(items)} items staged into {dest}"]
    for key, item in items.items():
        if item.get("error"):
            lines.append(f"  not staged  {key}: {item['error']}")
        else:
            how = ("TOFU, not in the lock" if item.get("tofu") else
                   f"pinned {item['pin']['pinned']}" if item.get("pin") else "from refs/")
            size = sum(f.get("size", 0) for f in item.get("pin", {}).get("files", []))
            fetched = (f", {size / 1e6:.1f} MB fetched" if size >= 1e6 else
                       f", {size / 1e3:.1f} kB fetched" if size else "")
            lines.append(f"  staged      {key} ({how}{fetched})")
    return "\n".join(lines)


def _still_there(record: dict, dest_home: Path) -> bool:
    """Whether an earlier run's record is usable and its files are all still in dest_home."""
    item = StagedItem.from_record(record, "image", dest_home)
    return usable(item) and all(item.path(k).exists() for k in item.files)


def stage(refs_dir: Path, dest_home: Path, sets: list[str], lock: Path | None = None,
          tofu: bool = False, keep_going: bool = False, only: list[str] | None = None) -> dict:
    """Stage every manifest item in `sets`; StagingError at the end if any did not stage
    (a demo item at once), unless keep_going records it as not staged with the reason."""
    refs_dir, dest_home = Path(refs_dir), Path(dest_home)
    dest_home.mkdir(parents=True, exist_ok=True)
    pins = pinning.read_lock(Path(lock) if lock else refs_dir / LOCK)
    items, failed, tofu_pins = {}, [], []
    wanted = [e for e in load_manifests(refs_dir)
              if e.get("set", "production") in sets and not (only and e["name"] not in only)]

    def fail(entry: Entry, why: str) -> None:
        key = entry.key
        why = " ".join(why.split())  # one line, whatever a tool printed
        if entry.get("set") == "demo":
            raise StagingError(f"{key}: {why}")
        failed.append(f"{key}: {why}")
        items[key] = {"kind": entry["kind"], "name": entry["name"], "set": entry.get("set"),
                      "error": f"staging failed at build time: {why}", "files": {}}

    # A stale or missing pin stops the run before anything is downloaded, and any source that
    # fails its check stops it before any index is built: minutes, not hours, into a build.
    stopped = preflight(wanted, pins, tofu)
    if stopped and not keep_going:
        raise StagingError("; ".join(stopped.values()))
    fetched: list[Fetched] = []
    try:
        for entry in wanted:
            key = entry.key
            if key in stopped:
                fail(entry, stopped[key])
                continue
            print(f"staging {key}: fetching", file=sys.stderr)
            try:
                fetched.append(fetch_item(entry, refs_dir, dest_home, pins, tofu=tofu))
            except (StagingError, OSError) as exc:
                why = " ".join(str(exc).split())
                if not why.startswith(pinning.label(entry)):
                    why = f"{pinning.label(entry)}: {why}"
                if not keep_going and entry.get("set") != "demo":
                    raise StagingError(f"{why} (stopped before any index was built)") from None
                fail(entry, why)
    except BaseException:
        for item in fetched:
            shutil.rmtree(item.work, ignore_errors=True)
        raise
    # Items staged by an earlier run into the same directory (a site staged item by item with
    # --only) stay listed when their files are still there.
    try:
        earlier = json.loads((dest_home / INVENTORY).read_text()).get("items", {})
    except (OSError, ValueError):
        earlier = {}
    # References first: an annotation is checked against its genome's staged sequence names.
    fetched.sort(key=lambda f: f.entry["kind"] != "reference")
    try:
        for item in fetched:
            print(f"staging {item.key}: preparing", file=sys.stderr)
            try:
                items[item.key] = finish_item(item, refs_dir, dest_home, {**earlier, **items})
                if items[item.key].get("tofu"):
                    tofu_pins.append(items[item.key]["pin"])
            except (StagingError, OSError) as exc:
                fail(item.entry, str(exc))
    finally:  # a failure that stops the run leaves no later item's work folder behind
        for item in fetched:
            shutil.rmtree(item.work, ignore_errors=True)
    shutil.copytree(refs_dir, dest_home / "manifests", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("demo", "__pycache__"))
    kept = {k: v for k, v in earlier.items() if k not in items and _still_there(v, dest_home)}
    inv = {"sets": sets + sorted({v["set"] for v in kept.values() if v.get("set")} - set(sets)),
           "items": {**kept, **items}}
    with atomic_path(dest_home / INVENTORY) as tmp:
        tmp.write_text(json.dumps(inv, indent=1, sort_keys=True))
    if tofu_pins:
        text = "\n".join(line for p in tofu_pins for line in pinning.pin_lines(p) + [""])
        (dest_home / "pins.tofu.toml").write_text(text)
        print(f"staging: trust on first use: add these lines to refs/{LOCK} and commit them:\n"
              + text, file=sys.stderr)
    print(_summary(items, dest_home), file=sys.stderr)
    if failed and not keep_going:
        raise StagingError(f"{len(failed)} item(s) not staged: " + "; ".join(failed))
    return inv
