"""The egress image's Python as the Dockerfile lays it out, and NCBI's rule read once by both images.

The egress stage copies image/egress/ and a few biotool modules (the rules reader, NCBI's
interval rule, the locked state file) into /usr/local/lib/egress; the sandbox gets the whole
biotool package. Here that layout is rebuilt from the Dockerfile's own COPY lines and every
egress module is imported in a bare interpreter (no site-packages, no PYTHONPATH), as the
image runs it: a module the Dockerfile does not copy fails here, not at an episode's start.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LIB = "/usr/local/lib/egress"


def egress_copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of each COPY in the Dockerfile's egress stage into LIB."""
    text = (REPO / "Dockerfile").read_text()
    stage = text.split(" AS egress\n", 1)[1].split("\nFROM ", 1)[0]
    out = []
    for line in stage.splitlines():
        if line.startswith("COPY "):
            *sources, dest = line.split()[1:]
            if dest.startswith(LIB):
                out.append((sources, dest))
    return out


def build_layout(root: Path) -> Path:
    for sources, dest in egress_copies():
        target = root / dest.lstrip("/")
        for src in sources:
            path = REPO / src
            if path.is_dir():
                shutil.copytree(path, target, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__"))
            else:
                into = target / path.name if dest.endswith("/") else target
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, into)
    return root / LIB.lstrip("/")


PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import importlib
names = sys.argv[2].split(",")
mods = {n: importlib.import_module(n) for n in names}
import inspect
import biotool, gate, relay, schedule
from biotool import ncbirule
relay_default = inspect.signature(relay.Relay).parameters["min_interval"].default
print(json.dumps({"biotool": list(biotool.__path__), "imported": sorted(mods),
                  "rule": [ncbirule.MIN_INTERVAL_S, ncbirule.POLL_INTERVAL_S],
                  "gate": [gate.MIN_INTERVAL_S - gate.JITTER_S,
                           gate.POLL_INTERVAL_S - gate.JITTER_S],
                  "relay": relay_default - gate.JITTER_S,
                  "schedule": schedule.Schedule.min_interval}))
"""


def test_every_egress_module_imports_from_what_the_dockerfile_copies(tmp_path):
    lib = build_layout(tmp_path)
    names = sorted(p.stem for p in (REPO / "image" / "egress").glob("*.py"))
    assert {"gatekeeper", "gate", "tunnel", "relay", "render", "schedule"} <= set(names)
    # -I -S: no PYTHONPATH, no site-packages (no editable biotool): only what the image has.
    done = subprocess.run([sys.executable, "-I", "-S", "-c", PROBE, str(lib), ",".join(names)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["imported"] == names
    assert all(p.startswith(str(lib)) for p in seen["biotool"]), seen["biotool"]
    # The egress enforces the very numbers biotool's client paces by (one file, both images).
    from biotool import ncbirule

    rule = [ncbirule.MIN_INTERVAL_S, ncbirule.POLL_INTERVAL_S]
    assert seen["rule"] == seen["gate"] == rule
    assert seen["relay"] == seen["schedule"] == rule[0]


def test_biotools_client_paces_by_the_same_rule(tmp_path):
    from biotool import ncbirule
    from biotool.taxonomy.ncbi import Settings, is_ncbi_url
    from biotool.taxonomy.pacing import Pacer

    s, p = Settings(), Pacer(tmp_path)
    assert (s.min_interval, s.poll_interval) == (p.min_interval, p.poll_interval) == \
        (ncbirule.MIN_INTERVAL_S, ncbirule.POLL_INTERVAL_S)
    assert is_ncbi_url(s.url) and re.fullmatch(r"[a-z.]+", ncbirule.HOST)
