"""The Harbor grader is total on agent input (issue 48, item 2): whatever the agent leaves at
its answer path (or its evidence's), the verifier reads a bounded amount of it and scores it:
reward 0 with the reason in grade.json, never an exception, never an infrastructure error.

Every task's own key (harbor/tasks/*/key.json, their staged paths pointed at the repository's
copies) against the malformed answers the held-out trials used and the classes they stand for.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from biotool_sandbox import harbor_grade

REPO = Path(__file__).resolve().parents[3]
CLEAN = Path(__file__).parent / "data" / "harbor-audit-clean.jsonl"
TASKS = sorted(p.name for p in (REPO / "harbor" / "tasks").iterdir() if (p / "key.json").is_file())
STAGED = {"/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq":
          str(REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq")}
DEEP = 100_000


def _key(tmp: Path, task: str) -> Path:
    text = (REPO / "harbor" / "tasks" / task / "key.json").read_text()
    for staged, here in STAGED.items():
        text = text.replace(staged, here)
    path = tmp / "key.json"
    path.write_text(text)
    return path


def _fields(task: str) -> list[str]:
    return list(json.loads((REPO / "harbor" / "tasks" / task / "key.json").read_text())["fields"])


def _write(path: Path, how) -> None:
    """Leave `how` at `path`: bytes or text as the file, or a callable that makes it."""
    if callable(how):
        how(path)
    elif isinstance(how, bytes):
        path.write_bytes(how)
    else:
        path.write_text(how, encoding="utf-8")


def _sparse(size: int):
    def make(path: Path) -> None:
        with path.open("wb") as fh:  # sparse: the size without the disk, read or not
            fh.truncate(size)
    return make


# Whole-file forms: each is the agent's 0 with answer.problem saying why.
FILES = {
    "deep-list": ("[" * DEEP + "]" * DEEP, "nests deeper than"),
    "deep-in-a-field": ('{"x": ' + "[" * DEEP + "]" * DEEP + "}", "nests deeper than"),
    "120-MB": (_sparse(120 << 20), "over the"),
    "just-over-the-cap": (lambda p: p.write_text(
        json.dumps({"x": "A" * harbor_grade.MAX_AGENT_FILE})), "over the"),
    "fifo": (lambda p: os.mkfifo(p), "not a regular file"),
    "directory": (lambda p: p.mkdir(), "not a regular file"),
    "symlink-to-the-key": (lambda p: p.symlink_to(p.parent / "key.json"), "symbolic link"),
    "not-utf8": (b'{"x": "\xff\xfe"}', "not JSON"),
    "huge-integer": ('{"x": ' + "9" * 5000 + "}", "not JSON"),
    "empty": ("", "not JSON"),
    "a-list": ("[1, 2]", "not a JSON object"),
    "a-string": ('"S"', "not a JSON object"),
    "null": ("null", "not a JSON object"),
}

# Field values of every JSON type and odd form, each given to every field of the task.
VALUES = {
    "superscript-digits": "¹⁴",
    "double-minus": "--14",
    "arabic-digits": "١٤",
    "huge-int": 10 ** 4000,
    "infinity": float("inf"),
    "nan": float("nan"),
    "bool": True,
    "list": [1, [2, {"a": None}]],
    "object": {"used": 1},
    "long-text": "C" * 500_000,
    "nul-and-controls": "S\x00\n\x1b[31m",
}


# A drawn task's truth file by task, drawn once for the module (_draw_truths).
TRUTHS: dict[str, Path] = {}


@pytest.fixture(scope="module", autouse=True)
def _draw_truths(staged_home, tmp_path_factory):
    """Each drawn task's truth, drawn once from the staged demo data (seeded)."""
    from biotool_sandbox import harbor_draw

    before = os.environ.get("BIOTOOL_HOME")
    os.environ["BIOTOOL_HOME"] = str(staged_home)
    try:
        for task in TASKS:
            key = json.loads((REPO / "harbor" / "tasks" / task / "key.json").read_text())
            if key.get("draw"):
                tmp = tmp_path_factory.mktemp(task)
                harbor_draw.draw(key["draw"], tmp / "task", tmp / "truth.json", seed=1)
                TRUTHS[task] = tmp / "truth.json"
    finally:
        if before is None:
            os.environ.pop("BIOTOOL_HOME", None)
        else:
            os.environ["BIOTOOL_HOME"] = before
    yield
    TRUTHS.clear()


def grade(tmp: Path, task: str) -> tuple[int, dict, dict]:
    truth = ["--truth", str(TRUTHS[task])] if task in TRUTHS else []
    rc = harbor_grade.main(["--key", str(_key(tmp, task)), "--answer", str(tmp / "answer.json"),
                            "--audit", str(CLEAN), "--out", str(tmp / "v"), *truth])
    return (rc, json.loads((tmp / "v" / "reward.json").read_text()),
            json.loads((tmp / "v" / "grade.json").read_text()))


@pytest.fixture(autouse=True)
def _build_identity(tmp_path, monkeypatch):
    """The verifier's build identity (the evidence check needs one), this test's own."""
    from biotool.provenance import build_identity

    (tmp_path / "build.json").write_text(json.dumps({"image": "biotool-sandbox:test"}))
    monkeypatch.setenv("BIOTOOL_BUILD_INFO", str(tmp_path / "build.json"))
    build_identity.cache_clear()
    yield
    build_identity.cache_clear()


def _agents_zero(rc: int, reward: dict, detail: dict) -> None:
    assert rc == 0 and detail["status"] == "graded", detail
    assert (reward["reward"], reward["answer"], reward["infrastructure_error"]) == (0, 0, 0)
    json.dumps(detail, allow_nan=False)  # grade.json is JSON a strict reader takes


@pytest.mark.parametrize("form", FILES)
@pytest.mark.parametrize("task", TASKS)
def test_a_malformed_answer_file_is_the_agents_0_with_the_reason(tmp_path, task, form):
    how, why = FILES[form]
    _write(tmp_path / "answer.json", how)
    rc, reward, detail = grade(tmp_path, task)
    _agents_zero(rc, reward, detail)
    assert why in (detail["answer"]["problem"] or ""), detail["answer"]
    assert (tmp_path / "v" / "grade.json").stat().st_size < 100_000


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("task", TASKS)
def test_an_odd_value_in_every_field_is_scored_wrong_never_raised(tmp_path, task, value):
    (tmp_path / "answer.json").write_text(json.dumps({f: VALUES[value] for f in _fields(task)}))
    rc, reward, detail = grade(tmp_path, task)
    _agents_zero(rc, reward, detail)
    fields = detail["answer"]["fields"]
    assert not any(f["ok"] for f in fields.values())
    assert all(f["expected"] for f in fields.values())  # each names what it wanted
    for f in fields.values():  # the agent's value repeated, bounded
        assert len(json.dumps(f["given"])) <= harbor_grade.SHOWN + 10


EVIDENCE = {
    "used-is-a-number": {"provenance": {"used": 1}},
    "every-part-the-wrong-type": {"provenance": [], "samples": {"x": 1}, "variants": "29749"},
    "items-the-wrong-type": {"provenance": {"image": ["x"], "used": [1, None, {"kind": 2}]},
                             "samples": [1, {"sample": {}}], "variants": [None, 3]},
    "deep": "[" * DEEP + "]" * DEEP,
    "120-MB": _sparse(120 << 20),
}


@pytest.mark.parametrize("form", EVIDENCE)
def test_malformed_evidence_is_the_agents_0_with_the_reason(tmp_path, form):
    (tmp_path / "answer.json").write_text(json.dumps({"pos": 29749, "ref": "ACGATCGAGTG",
                                                      "alt": "A"}))
    how = EVIDENCE[form]
    _write(tmp_path / "variants.json", json.dumps(how) if isinstance(how, dict) else how)
    rc, reward, detail = grade(tmp_path, "sarscov2-deletion")
    assert rc == 0 and detail["status"] == "graded", detail
    assert (reward["reward"], reward["answer"], reward["evidence_ok"],
            reward["infrastructure_error"]) == (0, 1, 0, 0)
    assert detail["evidence"]["broken"], detail["evidence"]


def test_the_verifiers_own_faults_stay_infrastructure_errors(tmp_path):
    (tmp_path / "answer.json").write_text("{}")
    drawn = json.loads(_key(tmp_path, "reads-organism-blast").read_text())
    staged = {**drawn, "fields": {"organism": {"equals_ci": "x"}},
              "search": {**drawn["search"], "reads": str(tmp_path / "absent.fastq")}}
    del staged["draw"]
    # A search of a staged file the verifier's image lacks; a drawn search whose truth lacks
    # the drawn reads' digests.
    (tmp_path / "truth.json").write_text(json.dumps({"values": {"organism": "x"}}))
    for key, why in ((staged, "cannot be read in the verifier"),
                     (drawn, "the draw's truth has no search_reads")):
        (tmp_path / "key.json").write_text(json.dumps(key))
        rc = harbor_grade.main(["--key", str(tmp_path / "key.json"), "--answer",
                                str(tmp_path / "answer.json"), "--audit", str(CLEAN),
                                "--out", str(tmp_path / "v"), "--truth",
                                str(tmp_path / "truth.json")])
        assert rc == 4
        assert json.loads((tmp_path / "v" / "reward.json").read_text()) == {
            "infrastructure_error": 1}
        assert why in json.loads((tmp_path / "v" / "grade.json").read_text())["reason"]
