"""The bad-input corpus inside the image, as an arbitrary UID on a read-only root.

The same cases as tests/unit/test_bad_input_corpus.py (tests/badinput), materialised on the
host and mounted at /work; the driver runs them inside ONE container per family (two at a
time, each with a timeout), so the permission cases (mode 000 files, read-only folders, an
unwritable cache) mean what they mean for an agent. Prints the summary count.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from badinput import cases as corpus
from badinput.contract import problems
from badinput.tier import failure, report, restore_permissions, selected_ids
from biotool_testing.contract import error_line

TESTS = Path(__file__).resolve().parents[1]

# The launcher's cases run on the host alone (tests/unit): the image carries no launcher.
CASES = [c for c in corpus.cases() if c["family"] != "launcher"]
# Per case inside the container: only a case that hangs meets it (a refusal takes seconds,
# cold imports on a loaded host included), so it is ten times that and more.
TIMEOUT = 600


def _run_batch(client, image: str, root: Path, family: str, shape: dict) -> tuple[int, str]:
    """One container runs every selected case of `family`; (driver exit code, its logs).
    Labelled apart from the shared runner's containers, which other sessions sweep."""
    container = client.containers.run(
        image, ["python3", "/opt/badinput/driver.py", "/work/cases.json",
                f"/work/results-{family}.json", "--home", "/opt/biotool", "--cache",
                "/tmp/badinput-cache", "--jobs", "2", "--timeout", str(TIMEOUT),
                "--family", family],
        detach=True, name=f"badinput-{family}-{uuid.uuid4().hex[:8]}",
        labels={"biotool-badinput-test": "1"}, working_dir="/work",
        volumes={str(root): {"bind": "/work", "mode": "rw"},
                 str(TESTS / "badinput"): {"bind": "/opt/badinput", "mode": "ro"}},
        **shape)
    try:
        code = container.wait(timeout=4 * 3600)["StatusCode"]  # a hung batch, not a slow one
        return code, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)


@pytest.fixture(scope="module")
def image_results(request, docker_client, images, apptainer_shape) -> dict:
    wanted = selected_ids(request)
    selected = [c for c in CASES if c["id"] in wanted]
    base = Path(tempfile.mkdtemp(prefix="badinput-image-"))
    os.chmod(base, 0o755)
    results: list[dict] = []
    try:
        root = corpus.materialise(base / "corpus")
        (root / "cases.json").write_text(json.dumps({"cases": selected}))
        for family in sorted({c["family"] for c in selected}):
            out = f"results-{family}.json"
            code, logs = _run_batch(docker_client, images["sandbox"], root, family,
                                    apptainer_shape)
            assert code == 0, f"driver failed for {family} (exit {code}): {logs[-3000:]}"
            results += json.loads((root / out).read_text())
    finally:
        restore_permissions(base / "corpus")
        shutil.rmtree(base, ignore_errors=True)
    return report(request, "image tier, uid 12345, read-only root", selected, results)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input_in_image(case, image_results):
    result = image_results[case["id"]]
    bad = problems(case, result)
    assert not bad, failure(case, result, bad)


@pytest.mark.parametrize("argv", [
    ["variants", "--fastq", "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq", "--reference",
     "MN908947.3"],
    ["doctor"],
], ids=["variants", "doctor"])
def test_a_read_only_root_with_no_tmpfs_is_exit_2_naming_what_is_not_writable(sandbox, argv):
    """The Apptainer shape without its private /tmp (a read-only root, nothing writable): the
    caller's setup, refused in one line as an unwritable cache is, never an internal error."""
    ran = sandbox.run(["biotool", *argv], user="12345:12345", read_only=True, working_dir="/",
                      environment={"HOME": "/home/agent"})
    line = error_line(ran, "/tmp", code=2)
    assert "internal error" not in line and ("writable" in line or "read-only" in line.lower()), ran
