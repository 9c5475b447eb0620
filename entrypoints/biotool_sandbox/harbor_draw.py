"""The draw of a Harbor task (docs/harbor.md#drawn-tasks): its ground truth, drawn at
environment start outside `main`.

`python -m biotool_sandbox.harbor_draw --draw MODULE.FUNCTION --public /task --truth FILE`
runs one draw function (biotool_sandbox.draws) with a generator seeded from the system's
randomness: it writes the agent's inputs into --public (which `main` mounts read-only) and
returns the truth, written to --truth with the sha256 of every input it wrote. The draw service
keeps --truth on a volume only it mounts; Harbor collects it after the agent phase and the
verifier grades against it (harbor_grade --truth). A remembered answer then scores 0.

Exit 0 when the truth is written; 2 for a draw name that is not one; 4 when the draw fails
(the trial's environment never becomes healthy: an environment error, never an agent's 0).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import random
import re
import secrets
import sys
import time
from pathlib import Path

from commandline.errors import EXIT_FAILED, EXIT_INPUT

_NAME = re.compile(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*")


def resolve(name: str):
    """The draw function `name` ("module.function" in biotool_sandbox.draws), else ValueError."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"draw {name!r} is not MODULE.FUNCTION of biotool_sandbox.draws")
    module, function = name.split(".")
    try:
        fn = getattr(importlib.import_module(f"biotool_sandbox.draws.{module}"), function)
    except (ImportError, AttributeError):
        raise ValueError(f"draw {name!r}: no such function in biotool_sandbox.draws") from None
    if not callable(fn) or function.startswith("_"):
        raise ValueError(f"draw {name!r} is not a draw function")
    return fn


def _inputs(public: Path) -> dict[str, str]:
    out = {}
    for path in sorted(p for p in public.rglob("*") if p.is_file()):
        out[str(path.relative_to(public))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _readable(public: Path) -> None:
    """Every input readable by `main`'s user, whoever the draw ran as; nothing writable."""
    for path in [public, *public.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def draw(name: str, public: Path, truth: Path, seed: int | None = None) -> dict:
    """Run draw `name` into `public` and write its truth to `truth` (atomically, last)."""
    fn = resolve(name)
    seed = secrets.randbits(128) if seed is None else seed
    public.mkdir(parents=True, exist_ok=True)
    values = fn(random.Random(seed), public)
    if not isinstance(values, dict) or not values:
        raise TypeError(f"draw {name} returned no truth")
    _readable(public)
    doc = {"draw": name, "values": values, "inputs": _inputs(public), "drawn_at": time.time()}
    truth.parent.mkdir(parents=True, exist_ok=True)
    tmp = truth.with_name(f".{truth.name}.partial")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(truth)
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m biotool_sandbox.harbor_draw",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--draw", required=True, help="MODULE.FUNCTION of biotool_sandbox.draws")
    parser.add_argument("--public", type=Path, required=True,
                        help="where the agent's inputs go (main mounts it read-only)")
    parser.add_argument("--truth", type=Path, required=True,
                        help="the truth file (a volume only the draw service mounts)")
    args = parser.parse_args(argv)
    try:
        resolve(args.draw)
    except ValueError as exc:
        print(f"harbor_draw: {exc}", file=sys.stderr)
        return EXIT_INPUT
    try:
        doc = draw(args.draw, args.public, args.truth)
    except Exception as exc:  # noqa: BLE001 - any failure leaves no truth: the trial errors
        print(f"harbor_draw: draw {args.draw} failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps({"draw": doc["draw"], "inputs": sorted(doc["inputs"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
