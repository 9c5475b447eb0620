"""Build-time staging: manifests + pin lock in, verified items and staged.json out.

    python -m biotool.staging --refs refs --dest /opt/biotool --sets demo,production [--tofu]
    python -m biotool.staging pin --sets production [--only NAME ...]
    python -m biotool.staging layers --refs refs --sets demo,production --out /data  # image data stage

Every production item is fetched from the URLs its pin records and checked byte for byte
against the pin's sha256 and size. An unpinned item fails the run with one line saying how to
pin it, unless trust-on-first-use is asked for (`--tofu`, BIOTOOL_TOFU=1): then what the
source serves now is staged, recorded as `tofu` in staged.json, and its lock lines printed
(and written to <dest>/pins.tofu.toml) to commit.

A run fails fast, in three passes: every pin is checked first (present, and each source's
size as a HEAD request reports it), then every source is downloaded and verified, and only
then is anything unpacked or indexed. A stale pin therefore stops the run in seconds, and a
source whose bytes changed at the same size stops it before the first index, each with one
line naming the item, its URL and the `make pins` that refreshes it. Each item is built in
a hidden folder and renamed into place only when complete, so nothing half-staged is ever
left; a summary of what was staged and what was not ends the run, which fails if any
asked-for item did not stage (unless --keep-going, which records it as not staged with the
reason and goes on).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from biotool.staging import LOCK, REPO_REFS, StagingError, home
from biotool.stagebuild import layers
from biotool.stagebuild import pins as pinning
from biotool.settings import TOFU
from biotool.stagebuild.build import stage


def stage_layers(refs_dir: Path, out: Path, sets: list[str], lock: Path | None = None,
                 tofu: bool = False, only: list[str] | None = None) -> list[dict]:
    """Stage the layers.DATA_SETS among `sets` into out/.home, then split it into
    out/1..layers.SLOTS (the image's data stage)."""
    out = Path(out)
    scratch = out / ".home"
    wanted = [s for s in sets if s in layers.DATA_SETS]
    try:
        if wanted:
            stage(refs_dir, scratch, wanted, lock=lock, tofu=tofu, only=only)
        return layers.split(scratch, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    mode = argv[0] if argv and argv[0] in ("pin", "layers") else None
    ap = argparse.ArgumentParser(prog="python -m biotool.staging" + (f" {mode}" if mode else ""),
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refs", type=Path, default=REPO_REFS, help="manifest directory")
    ap.add_argument("--lock", type=Path, default=None, help=f"pin lock (default: <refs>/{LOCK})")
    if mode == "pin":
        ap.add_argument("--sets", default="production", help="comma-separated sets to pin")
        ap.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="pin only this item (repeatable)")
    elif mode == "layers":
        ap.add_argument("--sets", default="demo", help="comma-separated sets asked for (only "
                        f"{', '.join(layers.DATA_SETS)} is staged here; the rest is skipped)")
        ap.add_argument("--out", type=Path, required=True,
                        help=f"folder of the {layers.SLOTS} layer folders 1..{layers.SLOTS}")
        ap.add_argument("--tofu", action="store_true", default=TOFU.get(),
                        help="trust on first use: stage unpinned items and print their lock lines")
        ap.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="stage only this item (repeatable)")
    else:
        ap.add_argument("--dest", type=Path, default=None,
                        help="staging root (BIOTOOL_HOME; a site directory for BIOTOOL_SITE_DIR)")
        ap.add_argument("--sets", default="demo", help="comma-separated sets to stage")
        ap.add_argument("--tofu", action="store_true", default=TOFU.get(),
                        help="trust on first use: stage unpinned items and print their lock lines")
        ap.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="stage only this item (repeatable)")
        ap.add_argument("--keep-going", action="store_true",
                        help="record items that fail as not staged instead of failing")
        ap.add_argument("--skip-sets", default="", metavar="SETS",
                        help="comma-separated sets staged elsewhere (the image's data stage): "
                             "not staged here, their staged items kept in the inventory")
    args = ap.parse_args(argv[1:] if mode else argv)
    sets = [s for s in args.sets.split(",") if s]
    try:
        if mode == "pin":
            lock = args.lock or args.refs / LOCK
            pinned = pinning.pin(args.refs.resolve(), sets, lock, only=args.only or None)
            print(f"staging: {len(pinned)} pins in {lock}", file=sys.stderr)
        elif mode == "layers":
            stage_layers(args.refs.resolve(), args.out, sets, lock=args.lock,
                                tofu=args.tofu, only=args.only or None)
        else:
            skip = set(args.skip_sets.split(","))
            stage(args.refs.resolve(), args.dest or home(), [s for s in sets if s not in skip],
                  lock=args.lock, tofu=args.tofu, keep_going=args.keep_going,
                  only=args.only or None)
    except StagingError as exc:
        print(f"staging: error: {exc}", file=sys.stderr)
        return 1
    return 0
