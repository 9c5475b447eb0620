"""The production data below the code: the Dockerfile's data stage stages it with the staging
code alone (the files it copies, no others), and leaves it as numbered layer folders, one per
large part, which the sandbox stage copies in before the project and merges with the demo."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = (REPO / "Dockerfile").read_text()


def _data_stage() -> str:
    return DOCKERFILE.split("FROM tools AS data", 1)[1].split("\nFROM ", 1)[0]


def _copied_code() -> list[tuple[str, str]]:
    """(repository path, destination folder) of every code file the data stage copies."""
    out = []
    for block in re.findall(r"^COPY ((?:.*\\\n)*.*)$", _data_stage(), re.M):
        words = block.replace("\\\n", " ").split()
        out += [(w, words[-1]) for w in words[:-1] if w.startswith("entrypoints/")]
    return out


def test_the_sandbox_copies_every_layer_folder_before_the_project():
    from biotool.stagebuild import layers

    sandbox = DOCKERFILE.split("FROM tools AS sandbox", 1)[1]
    copies = re.findall(r"^COPY --from=data /data/(\d+)/ /opt/biotool/$", sandbox, re.M)
    assert copies == [str(n) for n in range(1, layers.SLOTS + 1)]
    assert sandbox.index("COPY --from=data /data/") < sandbox.index("COPY wheelhouse/project/")
    # ...and the build context holds the data stage's code files (and no other code).
    allowed = {l[1:].rstrip("/") for l in (REPO / ".dockerignore").read_text().splitlines()
               if l.startswith("!entrypoints/")}
    # The egress stage's own copies (the shared allowlist reader and NCBI's rule) are the rest.
    egress = re.findall(r"^COPY (.*)$", DOCKERFILE.split("FROM ${BASE_IMAGE} AS os", 1)[0], re.M)
    egress_code = {w for line in egress for w in line.split()[:-1] if w.startswith("entrypoints/")}
    assert {src.rstrip("/") for src, _ in _copied_code()} | egress_code == allowed


def test_the_data_stage_stages_with_only_the_code_it_copies(server, pinned, tmp_path,
                                                          item_names):
    # The files the Dockerfile copies, laid out as there, and nothing else on the path: a
    # module staging imports (at once or only for one kind of item) and the Dockerfile misses
    # fails here, not in an operator's production build.
    code = tmp_path / "staging-code"
    for src, dest in _copied_code():
        target = code / dest.removeprefix("/opt/staging/")
        if src.endswith("/"):
            shutil.copytree(REPO / src, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / src, target)
    out = tmp_path / "data"
    only = [a for n in item_names for a in ("--only", n)]
    run = ("import sys, biotool; assert biotool.__file__.startswith(sys.argv[1]), biotool.__file__; "
           "from biotool.stagebuild.cli import main; sys.exit(main(sys.argv[2:]))")
    proc = subprocess.run([sys.executable, "-c", run, str(code / "biotool"), "layers", "--refs",
                           str(REPO / "refs"), "--lock", str(pinned), "--sets", "demo,production",
                           "--out", str(out), *only],
                          capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "PYTHONPATH": str(code)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == [str(n) for n in range(1, 9)]
    inv = json.loads(next(out.glob("*/staged.json")).read_text())
    assert sorted(i["name"] for i in inv["items"].values()) == sorted(item_names)
    assert "staging: layer 1: reference GRCh38" in proc.stderr
    assert not (out / ".home").exists()


def test_each_large_part_gets_a_layer_and_the_demo_merges_over_them(prod_home, tmp_path,
                                                                    use_home):
    from biotool import staging
    from biotool.stagebuild import build, layers

    home = tmp_path / "staged"
    shutil.copytree(prod_home, home)
    out = tmp_path / "data"
    report = layers.split(home, out)
    holds = [r["holds"] for r in report]
    assert holds == ["reference GRCh38", "reference GRCh38 bwa index", "databases", "models",
                     "inventory"]
    assert sorted(p.name for p in (out / "1/references/GRCh38").iterdir()) == \
        ["GRCh38.fa", "GRCh38.fa.fai"]
    assert [p.name for p in (out / "2/references/GRCh38").iterdir()] == ["bwa"]
    assert {p.name for p in (out / "3/databases").iterdir()} == \
        {"human-gene-annotation", "ref_viruses_rep_genomes", "human-gtf", "swissprot", "k2_viral"}
    assert (out / "5/staged.json").is_file() and not any((out / "6").iterdir())
    # The sandbox stage: every layer copied into one home, then the demo staged beside it.
    image = tmp_path / "image"
    for n in range(1, layers.SLOTS + 1):
        shutil.copytree(out / str(n), image, dirs_exist_ok=True)
    inv = build.stage(REPO / "refs", image, ["demo"], only=["MN908947.3"])
    assert set(inv["sets"]) == {"demo", "production"}
    assert {"reference/GRCh38", "model/C2S-Pythia-410m-cell-type-prediction",
            "reference/MN908947.3"} <= set(inv["items"])
    use_home(image)
    for item in staging.staged_items():
        assert staging.verify(item) == [], item.name
