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


# ---- a task's own checks: MolPerceive's scoring rule, and the tool's output as evidence

MOLPERCEIVE_KEY = REPO / "harbor" / "tasks" / "molperceive-batch" / "key.json"
MOLECULES = {"caffeine": ("C8H10N4O2", 14), "aspirin": ("C9H8O4", 13), "phenol": ("C6H6O", 7)}


def _molecules(**override) -> dict:
    answer = {}
    for name, (formula, heavy) in MOLECULES.items():
        answer[f"{name}_formula"], answer[f"{name}_heavy_atoms"] = formula, heavy
    return {**answer, **override}


def test_the_chemistry_task_is_scored_by_molperceives_rule_with_each_component_named(tmp_path):
    rc, reward, detail, _ = grade(tmp_path, answer=_molecules(), key=MOLPERCEIVE_KEY)
    assert rc == 0
    assert set(reward) == COMPONENTS | {"molperceive_formula", "molperceive_heavy_atom_count",
                                        "molperceive_drift"}
    assert (reward["reward"], reward["molperceive_formula"],
            reward["molperceive_heavy_atom_count"], reward["molperceive_drift"]) == (1, 1.0, 1.0, 0)
    scored = detail["answer"]["molperceive"]
    assert scored["drift"] == [] and scored["rdkit"]["version"]
    # MolPerceive's contract, not string equality: a count written as digits, a formula with
    # space around it, are right; a formula in another order is not.
    _, reward, detail, _ = grade(tmp_path, key=MOLPERCEIVE_KEY, out="v2", answer=_molecules(
        caffeine_heavy_atoms="14", aspirin_formula=" C9H8O4 ", phenol_formula="H6C6O"))
    assert (reward["reward"], reward["molperceive_formula"]) == (0, round(2 / 3, 4))
    assert reward["molperceive_heavy_atom_count"] == 1.0
    assert detail["answer"]["fields"]["phenol_formula"]["expected"] == \
        "expected 'C6H6O' (molperceive's rule for formula)"


def test_a_stored_label_this_rdkit_no_longer_gives_is_reported_as_drift(tmp_path):
    key = json.loads(MOLPERCEIVE_KEY.read_text())
    key["fields"]["phenol_heavy_atoms"]["stored"] = 8
    (tmp_path / "key.json").write_text(json.dumps(key))
    _, reward, detail, _ = grade(tmp_path, answer=_molecules(phenol_heavy_atoms=8),
                                 key=tmp_path / "key.json")
    # Scored against the key as stored (the answer matches it), the drift named beside it.
    assert (reward["reward"], reward["molperceive_drift"]) == (1, 1)
    assert detail["answer"]["molperceive"]["drift"] == [
        {"field": "phenol_heavy_atoms", "stored": 8, "recomputed": 7}]


DELETION_KEY = REPO / "harbor" / "tasks" / "sarscov2-deletion" / "key.json"
DELETION = {"pos": 29749, "ref": "ACGATCGAGTG", "alt": "A"}
BUILD = {"image": "biotool-sandbox:test", "revision": "abc123", "created": "2026-01-01T00:00:00Z"}


@pytest.fixture(scope="module")
def variants_run(tmp_path_factory):
    """`biotool variants` run for real on the staged reads, as the image's build: the key
    pointed at the repository's copy of the staged reads."""
    d = tmp_path_factory.mktemp("evidence")
    (d / "build.json").write_text(json.dumps(BUILD))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "BIOTOOL_CACHE": str(d / "c"),
           "BIOTOOL_BUILD_INFO": str(d / "build.json")}
    reads = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
    done = subprocess.run([sys.executable, "-m", "biotool", "-q", "variants", "--reference",
                           str(REPO / "refs" / "demo" / "sarscov2" / "MN908947.3.reference.fasta"),
                           "--fastq", str(reads), "--top", "10"],
                          capture_output=True, text=True, timeout=300, env=env, check=True)
    key = json.loads(DELETION_KEY.read_text())
    key["evidence"]["reads"] = str(reads)
    (d / "key.json").write_text(json.dumps(key))
    return {"output": json.loads(done.stdout), "key": d / "key.json"}


def _evidence(tmp_path, monkeypatch, run, evidence, answer=DELETION, out="verifier"):
    build_path = tmp_path / "build.json"
    build_path.write_text(json.dumps(BUILD))
    monkeypatch.setenv("BIOTOOL_BUILD_INFO", str(build_path))
    if evidence is not None:
        (tmp_path / "variants.json").write_text(json.dumps(evidence))
    return grade(tmp_path, answer=answer, key=run["key"], out=out)


def test_the_tools_output_on_the_staged_input_is_evidence_and_its_absence_scores_0(
        tmp_path, monkeypatch, variants_run):
    rc, reward, detail, _ = _evidence(tmp_path, monkeypatch, variants_run, variants_run["output"])
    assert rc == 0 and set(reward) == COMPONENTS | {"evidence_ok"}
    assert (reward["reward"], reward["evidence_ok"]) == (1, 1), detail.get("evidence")
    assert detail["inputs"]["evidence"] == hashlib.sha256(
        (tmp_path / "variants.json").read_bytes()).hexdigest()
    # The right answer written without running anything: the agent's 0, the reason named.
    (tmp_path / "variants.json").unlink()
    rc, reward, detail, _ = _evidence(tmp_path, monkeypatch, variants_run, None, out="v2")
    assert rc == 0 and (reward["reward"], reward["answer"], reward["evidence_ok"]) == (0, 1, 0)
    assert detail["evidence"]["broken"] == ["no evidence: variants.json was not written"]


def _forged(output: dict, **change) -> dict:
    doc = json.loads(json.dumps(output))
    for path, value in change.items():
        *parents, leaf = path.split("__")
        node = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        node[leaf] = value
    return doc


@pytest.mark.parametrize("change,why", [
    ({"provenance__image__revision": "0ld"}, "not this image build's output"),
    ({"provenance__used__0__sha256": "0" * 64}, "used no reference with the staged MN908947.3"),
    ({"samples__0__reads_used": 150}, "not of the staged reads (MT007544.fastq, 200 reads used)"),
    ({"variants": []}, "is not in the evidence's variants"),
])
def test_evidence_from_another_build_reference_read_set_or_without_the_answer_scores_0(
        tmp_path, monkeypatch, variants_run, change, why):
    _, reward, detail, _ = _evidence(tmp_path, monkeypatch, variants_run,
                                     _forged(variants_run["output"], **change))
    assert (reward["reward"], reward["answer"], reward["evidence_ok"]) == (0, 1, 0)
    assert len(detail["evidence"]["broken"]) == 1 and why in detail["evidence"]["broken"][0]


def test_a_verifier_without_its_build_identity_cannot_judge_evidence(tmp_path, monkeypatch,
                                                                      variants_run):
    monkeypatch.setenv("BIOTOOL_BUILD_INFO", str(tmp_path / "absent.json"))
    (tmp_path / "variants.json").write_text(json.dumps(variants_run["output"]))
    _infrastructure(*grade(tmp_path, answer=DELETION, key=variants_run["key"])[:3],
                    "no image build identity")


def test_a_regrade_with_evidence_and_molperceive_is_byte_identical(tmp_path, monkeypatch,
                                                                    variants_run):
    for out in ("a", "b"):
        _evidence(tmp_path, monkeypatch, variants_run, variants_run["output"], out=out)
        grade(tmp_path / out, answer=_molecules(), key=MOLPERCEIVE_KEY, out="m")
    for name in ("a/reward.json", "a/grade.json", "a/m/reward.json", "a/m/grade.json"):
        assert (tmp_path / name).read_bytes() == (tmp_path / name.replace("a/", "b/", 1)).read_bytes()


def test_a_task_answered_through_blast_scores_0_when_no_search_reached_ncbi(tmp_path):
    # The right organism, under an audit with no allowed request (read off the sample's
    # manifest, or from the staged panel): the route the task asks for was not taken.
    # The task's key in its staged-file form (a search of a file the image holds, no draw).
    key = json.loads((REPO / "harbor" / "tasks" / "reads-organism-blast" / "key.json").read_text())
    del key["draw"]
    key["fields"] = {"organism": {"equals_ci": "Severe acute respiratory syndrome coronavirus 2"}}
    key["search"]["reads"] = str(REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq")
    (tmp_path / "key.json").write_text(json.dumps(key))
    _, reward, detail, _ = grade(tmp_path, key=tmp_path / "key.json", answer={
        "organism": "Severe acute respiratory syndrome coronavirus 2"})
    assert (reward["reward"], reward["answer"], reward["egress_ok"], reward["search_ok"]) == \
        (0, 1, 1, 0)
    assert detail["search"]["broken"] == [
        "no search reached NCBI: the task needs a blastn against nt of at least 10 reads of "
        "MT007544.fastq, polled and fetched"]
