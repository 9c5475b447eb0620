"""Run bad-input cases as subprocesses and record what each did; standard library only.

It runs on the test host (unit tier) and inside the image (image tier, as an arbitrary UID on
a read-only root), so it takes a manifest of plain JSON cases and writes plain JSON results.

    python3 driver.py MANIFEST.json RESULTS.json [--home DIR] [--cache DIR] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

KEEP = 4000  # characters of stdout/stderr kept per case (enough to judge the contract)
# Seconds before a case counts as a hang: every case needs well under 10 on an idle host, and
# a host ten times slower (or as busy) must not turn a slow answer into a "hang".
HANG_S = 120.0
PROGRAMS = {"biotool": "biotool", "molperceive": "molperceive",
            "biotool-sandbox": "biotool_sandbox"}  # program: its module


def _slug(case_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in case_id)


def leftovers(cache: Path) -> list[str]:
    """Half-written things in a case's cache: temp folders and files, empty indexes, empty
    folders (a rejected input must leave nothing behind)."""
    found = []
    if not cache.is_dir():
        return found
    for dirpath, dirnames, filenames in os.walk(cache):
        d = Path(dirpath)
        for name in dirnames + filenames:
            p = d / name
            rel = str(p.relative_to(cache))
            if name.startswith(".work.") or name.endswith((".part", ".tmp")):
                found.append(rel)
            elif name.endswith(".mmi") and p.is_file() and p.stat().st_size == 0:
                found.append(rel)
            elif (len(p.relative_to(cache).parts) == 2 and p.is_dir() and not p.is_symlink()
                  and not any(p.iterdir())):  # an entry folder (namespace/key) left empty
                found.append(rel + "/ (empty folder)")
    return found


def stdout_kind(out: bytes) -> str:
    """"empty", "object" (exactly one JSON object), or what else it is; judged on all of it."""
    text = out.decode("utf-8", "replace").strip()
    if not text:
        return "empty"
    try:
        value = json.loads(text)
    except ValueError:
        return "not JSON"
    return "object" if isinstance(value, dict) else f"JSON {type(value).__name__}, not an object"


def run_case(case: dict, home: str, cache_base: str, cwd: str, timeout: float = HANG_S) -> dict:
    argv = [a.replace("{home}", home) for a in case["argv"]]
    if argv[0] in PROGRAMS:
        argv = [sys.executable, "-m", PROGRAMS[argv[0]], *argv[1:]]
    cache = Path(cache_base) / _slug(case["id"])
    env = dict(os.environ)
    for k in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
              "BIOTOOL_CONFIDENT", "BIOTOOL_ARMS", "BIOTOOL_DEBUG", "BIOTOOL_QUIET"):
        env.pop(k, None)
    env.update(BIOTOOL_HOME=home, BIOTOOL_CACHE=str(cache), PYTHONIOENCODING="utf-8")
    env.update({k: v.replace("{home}", home) for k, v in (case.get("env") or {}).items()})
    stdin = case.get("stdin")
    data = stdin.encode("utf-8", "surrogateescape") if stdin is not None else None
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True,
                            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    timed_out = False
    try:
        out, err = proc.communicate(data, timeout=case.get("timeout", timeout))
    except subprocess.TimeoutExpired:
        timed_out = True
        # The whole session: a hung command may have started minimap2, samtools or blastn.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    elapsed = time.monotonic() - start
    present = []
    for rel in case.get("outputs", []):
        p = Path(cwd) / rel
        if os.path.lexists(p) and not p.is_dir():
            present.append(rel)
        try:  # temp files beside it (an unreadable or missing folder holds none we made)
            present += [str(q.relative_to(cwd)) for q in p.parent.iterdir()
                        if q.name.startswith(f".{p.name}") or q.name.endswith(".part")]
        except OSError:
            pass
    # Folders (or anything) a refused command must not leave: an output folder, a .partial.
    present += [rel for rel in case.get("absent", []) if os.path.lexists(Path(cwd) / rel)]
    return {"id": case["id"], "rc": proc.returncode, "timed_out": timed_out,
            "stdout_kind": stdout_kind(out),
            "elapsed": round(elapsed, 3),
            "stdout": out.decode("utf-8", "replace")[:KEEP],
            "stdout_len": len(out),
            "stderr": err.decode("utf-8", "replace")[-KEEP:],
            "outputs_present": present, "leftovers": leftovers(cache)}


def run_all(cases: list[dict], home: str, cache_base: str, cwd: str, jobs: int = 2,
            timeout: float = HANG_S) -> list[dict]:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda c: run_case(c, home, cache_base, cwd, timeout), cases))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("results")
    ap.add_argument("--home", default=os.environ.get("BIOTOOL_HOME", "/opt/biotool"))
    ap.add_argument("--cache", default="/tmp/badinput-cache")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=HANG_S,
                    help=f"seconds before a case is a hang (default {HANG_S:g})")
    ap.add_argument("--family", action="append", help="only cases of this family (repeatable)")
    a = ap.parse_args(argv)
    manifest = json.loads(Path(a.manifest).read_text())
    cases = [c for c in manifest["cases"] if not a.family or c["family"] in a.family]
    cwd = str(Path(a.manifest).resolve().parent)
    results = run_all(cases, a.home, a.cache, cwd, a.jobs, a.timeout)
    Path(a.results).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
