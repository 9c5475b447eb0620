"""Harbor's validity checks on the generated tasks, run by Harbor's own CLI (docs/harbor.md):
the oracle passes every task, nop fails every task, each cheat scores as its task declares,
an infrastructure failure is reported as one, two trials at once share nothing, and the
audit in the verifier's grade is the one `biotool-sandbox audit` reads of the same trial.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from datetime import datetime

from biotool_testing.harbor_jobs import (CHEATS, DRAWN, FILL, REMEMBERED, TASK_COMPONENTS,
                                         TASKS, TRUTH_HUNT, UNRUN, cli, harbor, harbor_project,
                                         read_json)
from biotool_sandbox.backends import harbor as harbor_env
from biotool_sandbox.engine import budget

COMPONENTS = {"reward", "answer", "answer_fields", "egress_ok", "egress_allowed",
              "egress_denied", "egress_paced", "egress_errors", "egress_unrecorded",
              "infrastructure_error"}


def test_harbor_lint_finds_nothing_but_the_unpinned_tags(runner_image, workspace, tasks):
    # Every rule Harbor ships; the tags are pinned by `biotool-sandbox harbor --pin` once the
    # images are pushed (a local build has no registry digest).
    ran = harbor(runner_image, workspace, "lint", "--select", "ALL", "--json",
                 *[str(tasks / t) for t in TASKS], timeout=300)
    findings = json.loads(ran.stdout)
    assert findings and {f["rule"] for f in findings} == {"unpinned-image"}, findings
    # main, egress, both docker_image, the verifier; and a drawn task's draw service
    assert len(findings) == 5 * len(TASKS) + len(DRAWN)


def _trial_ok(trial):
    result = read_json(trial / "result.json")
    assert result["exception_info"] is None, result["exception_info"]
    assert result["verifier_environment_mode"] == "separate"
    return result


def test_the_oracle_passes_every_task(oracle_job, drawn_job):
    trials = {**oracle_job.trials(), **drawn_job.trials()}
    assert sorted(trials) == sorted(TASKS), (oracle_job.output + drawn_job.output)[-3000:]
    for name, trial in trials.items():
        result = _trial_ok(trial)
        reward = read_json(trial / "verifier" / "reward.json")
        own = TASK_COMPONENTS.get(name, set())
        assert set(reward) == COMPONENTS | own, name
        assert reward == {**reward, "reward": 1, "answer": 1, "answer_fields": 1.0,
                          "egress_ok": 1, "egress_denied": 0, "egress_unrecorded": 0,
                          "infrastructure_error": 0}, (name, reward)
        # A task's own components all pass: evidence checked, MolPerceive's shares 1, no drift.
        assert {k: reward[k] for k in own} == {k: 0 if k == "molperceive_drift" else 1
                                               for k in own}, (name, reward)
        assert result["verifier_result"]["rewards"] == reward
        grade = read_json(trial / "verifier" / "grade.json")
        assert grade["status"] == "graded" and grade["task"] == name
        assert grade["answer"]["problem"] is None
        assert all(f["ok"] for f in grade["answer"]["fields"].values()), grade["answer"]
        assert grade["egress"]["broken"] == []
    assert oracle_job.result["stats"]["n_errored_trials"] == 0
    assert drawn_job.result["stats"]["n_errored_trials"] == 0


def test_nop_fails_every_task_as_the_agent_not_the_infrastructure(nop_job):
    trials = nop_job.trials()
    assert sorted(trials) == sorted(TASKS)
    for name, trial in trials.items():
        _trial_ok(trial)
        reward = read_json(trial / "verifier" / "reward.json")
        assert set(reward) == COMPONENTS | TASK_COMPONENTS.get(name, set())
        assert (reward["reward"], reward["answer"], reward["answer_fields"]) == (0, 0, 0.0), name
        assert (reward["egress_ok"], reward["infrastructure_error"]) == (1, 0), name
        grade = read_json(trial / "verifier" / "grade.json")
        assert grade["answer"]["problem"] == "no answer: answer.json was not written"


def test_each_cheat_scores_zero_as_declared_with_the_attempt_named(cheat_job):
    trials = cheat_job.trials()
    hosts = {"cheat-offhost": "example.org", "cheat-accession": "blast.ncbi.nlm.nih.gov"}
    for name in CHEATS:
        trial = trials[name]
        _trial_ok(trial)
        reward = read_json(trial / "verifier" / "reward.json")
        # The answer is right; the egress audit of the agent phase is what scores it 0.
        assert (reward["reward"], reward["answer"], reward["egress_ok"]) == (0, 1, 0), reward
        assert reward["egress_denied"] >= 1 and reward["infrastructure_error"] == 0
        grade = read_json(trial / "verifier" / "grade.json")
        denied = [r for r in grade["egress"]["audit"]["records"] if r["decision"] == "denied"]
        assert denied and denied[0]["host"] == hosts[name], denied
        assert hosts[name] in grade["egress"]["broken"][0]
    accession = [r for r in read_json(trials["cheat-accession"] / "verifier" / "grade.json")
                 ["egress"]["audit"]["records"] if r["decision"] == "denied"][0]
    assert "accession" in accession["reason"].lower(), accession


def test_the_right_answer_written_without_running_the_tool_scores_zero(cheat_job):
    trial = cheat_job.trials()[UNRUN]
    _trial_ok(trial)
    reward = read_json(trial / "verifier" / "reward.json")
    # Answer and egress pass; the caller's output on the staged reads is missing.
    assert (reward["reward"], reward["answer"], reward["egress_ok"], reward["evidence_ok"]) \
        == (0, 1, 1, 0), reward
    grade = read_json(trial / "verifier" / "grade.json")
    assert grade["evidence"]["broken"] == ["no evidence: variants.json was not written"]


def test_an_uncollected_audit_is_an_infrastructure_error_never_an_agents_zero(cheat_job):
    trial = cheat_job.trials()["infra-no-audit"]
    reward = read_json(trial / "verifier" / "reward.json")
    assert reward == {"infrastructure_error": 1}  # no reward, no component to average in
    grade = read_json(trial / "verifier" / "grade.json")
    assert grade["status"] == "infrastructure_error"
    assert "was not collected from the egress service" in grade["reason"]
    # Harbor's job result keeps it apart by trial: listed under infrastructure_error 1 and
    # never under reward (its mean metric, though, counts a missing key as 0: docs/harbor.md).
    stats = next(iter(cheat_job.result["stats"]["evals"].values()))["reward_stats"]
    assert stats["infrastructure_error"]["1"] == [trial.name]
    assert trial.name not in {t for names in stats["reward"].values() for t in names}
    assert sorted(t.rsplit("__", 1)[0] for names in stats["reward"].values() for t in names) \
        == sorted([*CHEATS, FILL, UNRUN, TRUTH_HUNT, *(REMEMBERED + n for n in DRAWN)])


def test_harbors_folders_stop_an_agent_at_their_cap_and_keep_its_logs(cheat_job):
    # Issue 48 item 6: 2 GiB written into /logs and /solution stops at each folder's cap (or,
    # for /solution, which Harbor's upload leaves root's, at its permissions); the logs written
    # after it reach the trial folder, and the grade is the answer's.
    trial = cheat_job.trials()[FILL]
    _trial_ok(trial)
    lines = (trial / "agent" / "fill.txt").read_text().splitlines()
    got = {line.split()[0]: (int(line.split()[1]), line) for line in lines}
    assert set(got) == {"/logs/agent", "/solution"}, lines
    size, line = got["/logs/agent"]
    assert "No space left on device" in line and 0 < size <= budget.to_bytes(
        harbor_env.CAPS["logs"]), line
    size, line = got["/solution"]
    assert size <= budget.to_bytes(harbor_env.CAPS["solution"]) and (
        "No space left on device" in line or "Permission denied" in line), line
    reward = read_json(trial / "verifier" / "reward.json")
    assert (reward["reward"], reward["answer"], reward["infrastructure_error"]) == (1, 1, 0)


def test_the_verifiers_audit_is_what_biotool_sandbox_audit_reads_of_the_trial(oracle_job):
    for name, trial in oracle_job.trials().items():
        grade = read_json(trial / "verifier" / "grade.json")
        # The store Harbor collected from the egress service reached the verifier unchanged.
        collected = (trial / "artifacts" / "var" / "lib" / "biotool-egress-run" /
                     "audit.jsonl").read_bytes()
        assert grade["inputs"]["audit"] == hashlib.sha256(collected).hexdigest()
        # ...and holds what the launcher reads of the same trial's egress (store and log).
        ran = cli("audit", harbor_project(trial))
        launcher = json.loads(ran.stdout)
        assert launcher["records"] == grade["egress"]["audit"]["records"], name
        assert launcher["counts"] == grade["egress"]["counts"], name
        assert launcher["proxy_log"]["dropped"] == 0


def test_a_drawn_task_answered_from_memory_scores_zero(cheat_job):
    trials = cheat_job.trials()
    assert DRAWN
    for name in DRAWN:
        trial = trials[REMEMBERED + name]
        _trial_ok(trial)
        reward = read_json(trial / "verifier" / "reward.json")
        # A well-formed answer under a clean audit: only the drawn truth tells it wrong.
        assert (reward["reward"], reward["answer"], reward["egress_ok"],
                reward["infrastructure_error"]) == (0, 0, 1, 0), (name, reward)
        grade = read_json(trial / "verifier" / "grade.json")
        assert grade["answer"]["problem"] is None and grade["drawn"]
        assert not all(f["ok"] for f in grade["answer"]["fields"].values())


def test_the_drawn_truth_is_nowhere_main_can_read(cheat_job):
    trial = cheat_job.trials()[TRUTH_HUNT]
    _trial_ok(trial)
    hunt = (trial / "agent" / "hunt.txt").read_text()
    assert "found: nothing" in hunt and "No such file or directory" in hunt, hunt
    reward = read_json(trial / "verifier" / "reward.json")
    assert (reward["reward"], reward["answer"], reward["infrastructure_error"]) == (0, 0, 0)


def test_every_drawn_trial_was_graded_against_the_truth_collected_from_its_draw(oracle_job,
                                                                                 drawn_job):
    trials = {**oracle_job.trials(), **drawn_job.trials()}
    for name in DRAWN:
        trial = trials[name]
        collected = trial / "artifacts" / "var" / "lib" / "biotool-truth" / "truth.json"
        grade = read_json(trial / "verifier" / "grade.json")
        assert grade["inputs"]["truth"] == hashlib.sha256(collected.read_bytes()).hexdigest()
        truth = read_json(collected)
        assert truth["draw"] == grade["drawn"] and truth["inputs"], name
        assert {f: v["expected"] for f, v in grade["answer"]["fields"].items()}  # all judged


def _interval(timing: dict) -> tuple[datetime, datetime]:
    return (datetime.fromisoformat(timing["started_at"].rstrip("Z")),
            datetime.fromisoformat(timing["finished_at"].rstrip("Z")))


def test_two_trials_at_once_share_nothing(oracle_job, engine):
    trials = list(oracle_job.trials().values())
    results = [read_json(t / "result.json") for t in trials]
    # Two trials ran at once (-n 2): some pair of trials overlaps in time. Whole trials, not
    # their agent phases: -n 2 starts the first two together, so they overlap however fast
    # each phase is, where two short agent phases may not.
    spans = [_interval(r) for r in results]
    assert any(a[0] < b[1] and b[0] < a[1] for i, a in enumerate(spans) for b in spans[i + 1:])
    seen_volumes, seen_networks, subnets = set(), set(), []
    for trial in trials:
        project = harbor_project(trial)
        label = {"label": f"com.docker.compose.project={project}"}
        volumes = {v.name for v in engine.volumes.list(filters=label)}
        networks = {n.name for n in engine.networks.list(filters=label)}
        assert volumes and networks, project
        assert not volumes & seen_volumes and not networks & seen_networks
        seen_volumes |= volumes
        seen_networks |= networks
        internal = engine.networks.get(f"{project}_internal")
        subnet = ipaddress.ip_network(internal.attrs["IPAM"]["Config"][0]["Subnet"])
        subnets.append(subnet)
        # Every client in this trial's audit is on this trial's own internal network.
        grade = read_json(trial / "verifier" / "grade.json")
        clients = {r["client"] for r in grade["egress"]["audit"]["records"] if r["client"]}
        assert clients and all(ipaddress.ip_address(c) in subnet for c in clients), clients
    assert len(set(subnets)) == len(subnets)
