"""The Harbor task answered through NCBI BLAST (harbor/tasks/reads-organism-blast), run the
way the image tier runs remote BLAST: in the enforced stack (`biotool-sandbox up`) whose
egress reaches the mock NCBI (biotool_testing/mock_ncbi.py, TLS as blast.ncbi.nlm.nih.gov,
a test CA the gate trusts upstream), then graded by the task's own grader in the image,
offline, on the egress audit store of the run.

Not through Harbor (docs/harbor.md): a Harbor trial's environment is the stack as
compose.yaml renders it, whose egress trusts only the public CAs and resolves NCBI's real
name; pointing it at the mock would mean a task environment with a test CA and a fake NCBI,
which the tier refuses to publish as the rule.
"""

from __future__ import annotations

import json

import pytest

from biotool_sandbox.audit import STORE
from biotool_testing import stack

TASK = stack.REPO / "harbor" / "tasks" / "reads-organism-blast"
ARTIFACTS = "/tmp/logs/artifacts"  # /logs is Harbor's mount; the stack's root is read-only


@pytest.fixture(scope="module")
def run(tmp_path_factory, images):
    yield from stack.run_with_mock_ncbi(tmp_path_factory.mktemp("test-ca"), "--rtoe", "1")


def _grade(tmp_path, answer: str, store: str) -> tuple[int, dict, dict]:
    """The task's test.sh, as the separate verifier runs it, with the draw's truth."""
    (tmp_path / "key.json").write_bytes((TASK / "key.json").read_bytes())
    (tmp_path / "answer.json").write_text(answer)
    (tmp_path / "audit.jsonl").write_text(store)
    (tmp_path / "out").mkdir()
    done = stack.python_in_image(tmp_path, "-m", "biotool_sandbox.harbor_grade", "--key", "/g/key.json",
                     "--answer", "/g/answer.json", "--audit", "/g/audit.jsonl",
                     "--out", "/g/out", "--truth", "/g/truth.json")
    return (done.returncode, json.loads((tmp_path / "out" / "reward.json").read_text()),
            json.loads((tmp_path / "out" / "grade.json").read_text()))


def test_the_blast_tasks_oracle_through_the_egress_scores_1(run, tmp_path):
    # The trial's draw, as its draw service makes it: one organism's reads and the truth.
    key = json.loads((TASK / "key.json").read_text())
    drew = stack.python_in_image(tmp_path, "-m", "biotool_sandbox.harbor_draw", "--draw", key["draw"],
                     "--public", "/g/task", "--truth", "/g/truth.json")
    assert drew.returncode == 0, drew.stderr
    truth = json.loads((tmp_path / "truth.json").read_text())["values"]
    stack.launcher("exec", run["run"], "--", "mkdir", "-p", "/work/task")
    stack.launcher("cp", str(tmp_path / "task" / "reads.fastq"),
                   f"{run['run']}:/work/task/reads.fastq")
    stack.launcher("cp", str(TASK / "solve.sh"), f"{run['run']}:/work/solve.sh")
    # The oracle as written, its artifacts folder moved off Harbor's /logs mount and its
    # reads from where the test put them (a trial mounts the draw's folder at /task).
    # The limits only stop what hangs: NCBI's intervals take a minute, the rest is this host's.
    res = stack.launcher("exec", run["run"], "--timeout", "900", "--", "bash", "-c",
                         f"mkdir -p {ARTIFACTS} && sed -e 's#/logs/artifacts#{ARTIFACTS}#g' "
                         f"-e 's#/task/#/work/task/#g' /work/solve.sh | bash && "
                         f"cat {ARTIFACTS}/answer.json", timeout=1020)
    assert res["exit_code"] == 0, res
    answer = res["stdout"]
    assert json.loads(answer) == {"organism": truth["organism"]}
    seen = stack.mock_requests(run["mock"])
    assert seen["violations"] == [] and [r for r in seen["requests"] if r["what"] == "put"]
    # A request's record is written as it ends, maybe after its client has the answer: the
    # store is taken once it holds one allowed record per request the mock got.
    stack.audit_when(run, lambda au: sum(r["event"] == "request" and r["decision"] == "allowed"
                                         for r in au["records"]) >= len(seen["requests"]),
                     "an allowed record of every request the mock got")
    egress = stack.container(run["containers"]["egress"])
    code, store = egress.exec_run(["cat", "--", STORE], user="proxy")
    assert code == 0, store
    rc, reward, grade = _grade(tmp_path, answer, store.decode())
    assert rc == 0, grade
    assert (reward["reward"], reward["answer"], reward["egress_ok"]) == (1, 1, 1), grade
    # The search the key asks for, told from the audit: 10 drawn reads, polled and fetched.
    assert (reward["search_ok"], reward["search_reads"]) == (1, 10), grade["search"]
    # Every request the mock answered is an allowed record the grader counted.
    assert reward["egress_allowed"] >= len(seen["requests"]) >= 1
    assert reward["egress_denied"] == 0 and reward["infrastructure_error"] == 0
