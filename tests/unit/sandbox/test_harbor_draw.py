"""Drawn Harbor tasks without an engine (docs/harbor.md#drawn-tasks): the draw entry
(biotool_sandbox.harbor_draw) on real draws and staged data, the grader against a drawn truth,
and the environment `biotool-sandbox harbor` writes for a drawn task. Harbor's own CLI runs
them in tests/harbor."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from biotool_sandbox import harbor_draw, harbor_grade, harbor_tasks
from biotool_sandbox.backends import harbor as harbor_env
from biotool_sandbox.errors import LauncherError

REPO = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data"
CLEAN = DATA / "harbor-audit-clean.jsonl"
TASKS = REPO / "harbor" / "tasks"
DRAWN = sorted(n for n, p in harbor_tasks.sources().items()
               if "draw" in json.loads((p / "key.json").read_text()))


def _entry(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "biotool_sandbox.harbor_draw", *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
                               **(env or {})})


@pytest.mark.parametrize("name", ["os.system", "chemistry._pool", "chemistry", "../x.y",
                                  "chemistry.molecules;id", "nosuch.draw", "chemistry.nosuch",
                                  "chemistry.POOL"])
def test_a_draw_is_a_public_function_of_the_draws_package_else_exit_2(tmp_path, name):
    with pytest.raises(ValueError):
        harbor_draw.resolve(name)
    ran = _entry("--draw", name, "--public", str(tmp_path / "task"),
                 "--truth", str(tmp_path / "truth.json"))
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert not (tmp_path / "truth.json").exists() and not (tmp_path / "task").exists()


def test_the_truth_is_written_last_private_with_each_inputs_digest(tmp_path, biotool_env):
    doc = harbor_draw.draw("annotate.orf_drawn", tmp_path / "task", tmp_path / "t" / "truth.json",
                           seed=7)
    truth = tmp_path / "t" / "truth.json"
    assert json.loads(truth.read_text()) == doc
    assert stat.S_IMODE(truth.stat().st_mode) == 0o600
    files = [p for p in (tmp_path / "task").rglob("*") if p.is_file()]
    assert sorted(doc["inputs"]) == sorted(str(p.relative_to(tmp_path / "task")) for p in files)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in files)
    again = harbor_draw.draw("annotate.orf_drawn", tmp_path / "again", tmp_path / "t2.json",
                             seed=7)
    assert again["values"] == doc["values"] and again["inputs"] == doc["inputs"]
    assert list(tmp_path.glob("t/.*")) == []  # no partial file left beside it


def test_two_draws_without_a_seed_differ(tmp_path, biotool_env):
    a, b = (_entry("--draw", "annotate.variant_annotate_drawn", "--public", str(tmp_path / n),
                   "--truth", str(tmp_path / f"{n}.json")) for n in ("a", "b"))
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert json.loads((tmp_path / "a.json").read_text())["values"] \
        != json.loads((tmp_path / "b.json").read_text())["values"]


def test_a_draw_that_fails_leaves_no_truth_and_exits_4(tmp_path, biotool_env):
    # No staged annotation in this home: the draw cannot read its reference.
    empty = tmp_path / "empty-home"
    empty.mkdir()
    ran = _entry("--draw", "annotate.variant_annotate_drawn", "--public", str(tmp_path / "task"),
                 "--truth", str(tmp_path / "truth.json"), env={"BIOTOOL_HOME": str(empty)})
    assert ran.returncode == 4, ran.stderr
    assert "draw annotate.variant_annotate_drawn failed" in ran.stderr
    assert not (tmp_path / "truth.json").exists()


# ---- the grader against a drawn truth

def _grade(tmp_path: Path, key: dict, answer, truth: dict | None | str):
    (tmp_path / "key.json").write_text(json.dumps(key))
    (tmp_path / "answer.json").write_text(json.dumps(answer))
    args = ["--key", str(tmp_path / "key.json"), "--answer", str(tmp_path / "answer.json"),
            "--audit", str(CLEAN), "--out", str(tmp_path / "verifier")]
    if truth is not None:
        (tmp_path / "truth.json").write_text(truth if isinstance(truth, str) else
                                             json.dumps({"values": truth}))
        args += ["--truth", str(tmp_path / "truth.json")]
    rc = harbor_grade.main(args)
    return (rc, json.loads((tmp_path / "verifier" / "reward.json").read_text()),
            json.loads((tmp_path / "verifier" / "grade.json").read_text()))


def _drawn(fields: dict) -> dict:
    return {"task": "t", "draw": "annotate.orf_drawn", "fields": fields}


def test_each_drawn_rule_is_checked_against_the_truths_value(tmp_path):
    key = _drawn({"pos": {"drawn": "equals"}, "gene": {"drawn": "equals_ci"},
                  "share": {"drawn": "approx", "tol": 0.05}, "up": {"drawn": "set_ci"},
                  "cuts": {"drawn": "equals"}, "fixed": {"equals": 3}})
    truth = {"pos": 1841, "gene": "S", "share": 0.7, "up": ["G00012", "G00417"],
             "cuts": [12, 480]}
    right = {"pos": 1841, "gene": "s ", "share": 0.66, "up": ["g00417", "G00012"],
             "cuts": [12, 480], "fixed": 3}
    rc, reward, detail = _grade(tmp_path, key, right, truth)
    assert rc == 0 and reward["answer"] == 1, detail["answer"]
    assert detail["drawn"] == "annotate.orf_drawn" and "truth" in detail["inputs"]
    wrong = {**right, "pos": 1842, "up": ["G00417"], "cuts": [480, 12], "share": 0.6}
    rc, reward, detail = _grade(tmp_path, key, wrong, truth)
    assert rc == 0 and reward["reward"] == 0
    assert {n for n, f in detail["answer"]["fields"].items() if not f["ok"]} \
        == {"pos", "up", "cuts", "share"}


def test_a_remembered_answer_from_another_draw_scores_0(tmp_path, biotool_env):
    key = json.loads((TASKS / "variant-annotate-drawn" / "key.json").read_text())
    first = harbor_draw.draw(key["draw"], tmp_path / "a", tmp_path / "a.json", seed=1)
    second = harbor_draw.draw(key["draw"], tmp_path / "b", tmp_path / "b.json", seed=2)
    rc, reward, _ = _grade(tmp_path, key, first["values"], first["values"])
    assert reward["reward"] == 1
    rc, reward, detail = _grade(tmp_path, key, first["values"], second["values"])
    assert rc == 0 and reward["reward"] == 0 and reward["infrastructure_error"] == 0


@pytest.mark.parametrize("truth,why", [
    (None, "given no --truth"),
    ("{not json", "is not JSON"),
    ('{"values": []}', "holds no values"),
    ({"other": 1}, "no value for field pos"),
])
def test_a_missing_or_broken_truth_is_an_infrastructure_error_never_the_agents_0(
        tmp_path, truth, why):
    rc, reward, detail = _grade(tmp_path, _drawn({"pos": {"drawn": "equals"}}), {"pos": 1},
                                truth)
    assert rc == 4 and reward == {"infrastructure_error": 1}
    assert why in detail["reason"]


def test_a_truth_never_collected_is_named_as_such(tmp_path):
    (tmp_path / "key.json").write_text(json.dumps(_drawn({"pos": {"drawn": "equals"}})))
    rc = harbor_grade.main(["--key", str(tmp_path / "key.json"), "--answer",
                            str(tmp_path / "none.json"), "--audit", str(CLEAN), "--out",
                            str(tmp_path / "v"), "--truth", str(tmp_path / "absent.json")])
    detail = json.loads((tmp_path / "v" / "grade.json").read_text())
    assert rc == 4 and "was not collected from the draw service" in detail["reason"]


def test_a_set_answer_of_another_type_is_the_agents_0_not_a_crash():
    for given in ("G1", [1, 2], {"G1": 1}, None, [["G1"]]):
        ok, _ = harbor_grade.check_field({"set_ci": ["G1"]}, given)
        assert ok is False


# ---- the environment a drawn task runs in

@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("drawn-tasks")
    harbor_tasks.write(out, REPO / "compose.yaml", "biotool-sandbox:t3st", "biotool-egress:t3st",
                       only=DRAWN)
    return out


def test_every_drawn_task_draws_offline_and_main_never_mounts_the_truth(written):
    assert DRAWN, "no drawn task source"
    for name in DRAWN:
        task = written / name
        env = yaml.safe_load((task / "environment" / "docker-compose.yaml").read_text())
        draw, main = env["services"][harbor_env.DRAW], env["services"][harbor_env.MAIN]
        assert draw["network_mode"] == "none" and draw["cap_drop"] == ["ALL"]
        assert draw["read_only"] and f"truth:{harbor_env.TRUTH_DIR}" in draw["volumes"]
        assert f"task:{harbor_env.TASK_INPUTS}:ro" in main["volumes"]
        assert not [v for v in main["volumes"] if v.startswith("truth:")]
        assert main["depends_on"] == {"draw": {"condition": "service_healthy"}}
        key = json.loads((task / "tests" / "key.json").read_text())
        assert draw["command"][-1] == key["draw"]
        assert f"--truth {harbor_env.TRUTH_ARTIFACT}" in (task / "tests" / "test.sh").read_text()
        toml = (task / "task.toml").read_text()
        assert f'source = "{harbor_env.TRUTH_ARTIFACT}"\nservice = "draw"' in toml
        assert harbor_tasks.check(task)["ok"]


def test_a_drawn_task_edited_to_give_main_the_truth_is_refused(written, tmp_path):
    task = Path(shutil.copytree(written / DRAWN[0], tmp_path / DRAWN[0]))
    path = task / "environment" / "docker-compose.yaml"
    env = yaml.safe_load(path.read_text())
    env["services"]["main"]["volumes"].append(f"truth:{harbor_env.TRUTH_DIR}:ro")
    path.write_text(yaml.safe_dump(env))
    with pytest.raises(LauncherError, match="mounts the drawn truth"):
        harbor_tasks.check(task)
    del env["services"]["main"]["volumes"][-1]
    env["services"]["draw"]["network_mode"] = "bridge"
    path.write_text(yaml.safe_dump(env))
    with pytest.raises(LauncherError, match="draw service is not offline"):
        harbor_tasks.check(task)


@pytest.mark.parametrize("change,why", [
    ({"draw": "../draws.x"}, "is not MODULE.FUNCTION"),
    ({"draw": "os.system"}, "no such function"),
    ({"draw": "annotate.nosuch"}, "no such function"),
    ({"fields": {"gene": {"equals": "S"}}}, "no field marked drawn"),
    ({"fields": {"gene": {"drawn": "regex"}}}, "drawn rule 'regex'"),
])
def test_a_drawn_key_that_cannot_be_drawn_or_graded_is_refused_before_writing(
        tmp_path, change, why):
    src = Path(shutil.copytree(TASKS / "variant-annotate-drawn", tmp_path / "src" /
                               "variant-annotate-drawn"))
    key = {**json.loads((src / "key.json").read_text()), **change}
    (src / "key.json").write_text(json.dumps(key))
    with pytest.raises(LauncherError, match=why):
        harbor_tasks.write(tmp_path / "out", REPO / "compose.yaml", "i:t", "e:t",
                           root=tmp_path / "src")
    assert not (tmp_path / "out").exists()
