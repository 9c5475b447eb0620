"""The Harbor verifier's grader (biotool_sandbox.harbor_grade) on real inputs: the tasks' own
answer keys and egress audit stores collected by Harbor from trials of the enforced stack
(data/harbor-audit-*.jsonl: an oracle trial's, and a cheat's that tried example.org).

An agent's failure is a reward of 0 with its reason in grade.json; an infrastructure failure
is `infrastructure_error: 1` with no reward at all and exit 4, never an agent's 0.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biotool_sandbox import harbor_grade

REPO = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data"
CLEAN, OFFHOST = DATA / "harbor-audit-clean.jsonl", DATA / "harbor-audit-offhost.jsonl"
KEY = REPO / "harbor" / "tasks" / "spike-d614g" / "key.json"
RIGHT = {"gene": "S", "hgvs_p": "p.Asp614Gly", "effect": "missense"}
COMPONENTS = {"reward", "answer", "answer_fields", "egress_ok", "egress_allowed",
              "egress_denied", "egress_paced", "egress_errors", "egress_unrecorded",
              "infrastructure_error"}


def grade(tmp_path: Path, answer=RIGHT, audit: Path = CLEAN, key: Path = KEY,
          out: str = "verifier") -> tuple[int, dict, dict, str]:
    answer_path = tmp_path / "answer.json"
    if isinstance(answer, (dict, list)):
        answer_path.write_text(json.dumps(answer))
    elif isinstance(answer, str):
        answer_path.write_text(answer)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "biotool_sandbox.harbor_grade", "--key",
                           str(key), "--answer", str(answer_path), "--audit", str(audit),
                           "--out", str(tmp_path / out)], capture_output=True, text=True,
                          timeout=60, env=env)
    reward = json.loads((tmp_path / out / "reward.json").read_text())
    detail = json.loads((tmp_path / out / "grade.json").read_text())
    assert json.loads(done.stdout) == reward
    return done.returncode, reward, detail, done.stderr


def test_the_right_answer_under_a_clean_audit_is_reward_1_with_every_component(tmp_path):
    rc, reward, detail, _ = grade(tmp_path)
    assert rc == 0 and set(reward) == COMPONENTS
    assert reward == {"reward": 1, "answer": 1, "answer_fields": 1.0, "egress_ok": 1,
                      "egress_allowed": 0, "egress_denied": 0, "egress_paced": 0,
                      # the stack's own reachability probe: a connection closed unused
                      "egress_errors": 1, "egress_unrecorded": 0, "infrastructure_error": 0}
    assert detail["status"] == "graded" and detail["task"] == "spike-d614g"
    assert detail["egress"]["broken"] == [] and detail["answer"]["problem"] is None
    assert detail["inputs"]["audit"] == hashlib.sha256(CLEAN.read_bytes()).hexdigest()
    assert detail["inputs"]["key"] == hashlib.sha256(KEY.read_bytes()).hexdigest()


def test_an_attempt_off_the_allowlist_scores_0_with_the_host_named(tmp_path):
    rc, reward, detail, _ = grade(tmp_path, audit=OFFHOST)
    assert rc == 0
    assert (reward["reward"], reward["answer"], reward["egress_ok"]) == (0, 1, 0)
    assert reward["egress_denied"] == 1 and reward["infrastructure_error"] == 0
    assert detail["egress"]["broken"] == [
        "1 denied attempt(s), at most 0 allowed; first: example.org (CONNECT target is not an "
        "allowlisted host:port)"]


def test_a_task_may_declare_denied_attempts_tolerated(tmp_path):
    key = json.loads(KEY.read_text())
    key["egress"]["max_denied"] = 1
    (tmp_path / "key.json").write_text(json.dumps(key))
    _, reward, _, _ = grade(tmp_path, audit=OFFHOST, key=tmp_path / "key.json")
    assert (reward["reward"], reward["egress_ok"], reward["egress_denied"]) == (1, 1, 1)


@pytest.mark.parametrize("answer,problem", [
    (None, "no answer: answer.json was not written"),
    ("{not json", "the answer is not JSON"),
    (["S"], "the answer is not a JSON object"),
])
def test_a_missing_or_malformed_answer_is_the_agents_0_with_a_reason(tmp_path, answer, problem):
    rc, reward, detail, _ = grade(tmp_path, answer=answer)
    assert rc == 0 and set(reward) == COMPONENTS
    assert (reward["reward"], reward["answer"], reward["answer_fields"]) == (0, 0, 0.0)
    assert reward["infrastructure_error"] == 0 and reward["egress_ok"] == 1
    assert detail["answer"]["problem"].startswith(problem)
    assert {f["given"] for f in detail["answer"]["fields"].values()} == {None}


def test_each_field_is_judged_and_named(tmp_path):
    answer = {"gene": " s ", "hgvs_p": "p.D614G", "effect": "Missense"}
    _, reward, detail, _ = grade(tmp_path, answer=answer)
    assert (reward["reward"], reward["answer_fields"]) == (0, round(2 / 3, 4))
    fields = detail["answer"]["fields"]
    assert fields["gene"]["ok"] and fields["effect"]["ok"]  # case and space ignored there
    assert fields["hgvs_p"] == {"ok": False, "given": "p.D614G", "expected": "expected "
                                "'p.Asp614Gly'"}


def test_numbers_are_numbers_and_approx_has_its_tolerance():
    assert harbor_grade.check_field({"equals": 209}, 209)[0]
    assert not harbor_grade.check_field({"equals": 209}, "209")[0]
    assert not harbor_grade.check_field({"equals": 1}, True)[0]
    assert harbor_grade.check_field({"approx": 0.5, "tol": 0.01}, 0.505)[0]
    assert not harbor_grade.check_field({"approx": 0.5, "tol": 0.01}, float("nan"))[0]
    assert not harbor_grade.check_field({"approx": 0.5, "tol": 0.01}, 0.52)[0]


def _infrastructure(rc, reward, detail, reason):
    assert rc == 4
    assert reward == {"infrastructure_error": 1}  # no reward to average in as a 0
    assert detail["status"] == "infrastructure_error" and reason in detail["reason"]


def test_an_audit_never_collected_is_an_infrastructure_error(tmp_path):
    _infrastructure(*grade(tmp_path, audit=tmp_path / "absent.jsonl")[:3],
                    "was not collected from the egress service")


def test_an_empty_or_gate_only_audit_is_an_infrastructure_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    _infrastructure(*grade(tmp_path, audit=empty)[:3], "is empty")
    gate_only = tmp_path / "gate.jsonl"
    gate_only.write_text(CLEAN.read_text().replace('["gate","proxy"]', '["gate"]'))
    _infrastructure(*grade(tmp_path, audit=gate_only, out="v2")[:3], "gate's records only")


def test_a_broken_key_is_the_graders_fault_not_the_agents(tmp_path):
    (tmp_path / "nokey.json").write_text('{"task": "x"}')
    _infrastructure(*grade(tmp_path, key=tmp_path / "nokey.json")[:3], "has no fields")
    (tmp_path / "badrule.json").write_text('{"task": "x", "fields": {"gene": {"like": "S"}}}')
    _infrastructure(*grade(tmp_path, key=tmp_path / "badrule.json", out="v2")[:3],
                    "names no known check")


def test_a_regrade_of_the_same_inputs_is_byte_identical(tmp_path):
    grade(tmp_path, audit=OFFHOST, out="a")
    grade(tmp_path, audit=OFFHOST, out="b")
    for name in ("reward.json", "grade.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert not list((tmp_path / "a").glob(".*partial"))
