"""The experiment's control arm (BIOTOOL_CONFIDENT=1) is the tool minus its declared hedges,
by construction: every command's help and every command's answer on the demo data, run
marked, as the tool and as the control, differ between the arms exactly by what the marked
run declares (biotool.arms), and the control teaches no lesson. Also: every default output
stays under 8 KB."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from biotool_testing.arms import MODES, check_answer, check_help, lessons_in, present
from biotool_testing.ran import Ran

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "refs" / "demo"
ARTIC = DEMO / "sarscov2" / "MT007544.fastq"
FLU = DEMO / "influenza" / "influenza_a_h1n1.fasta"
PBMC = "demo-pbmc68k-heldout"
OUTPUT_BOUND = 8 * 1024

READS = ("--fastq", str(ARTIC), "--reference", "MN908947.3")
# Every built-in annotation tool on its help's examples or a demo sequence.
CALLS = {
    "seq_stats": '{"sequence": "ATGGCCATTGTAATGGGCCGCTGAAAGGGTGCCCGATAG"}',
    "reverse_complement": '{"sequence": "ATGGCCATTGTAATG"}',
    "translate": '{"sequence": "ATGGCC", "frame": "all", "table": 11}',
    "find_orfs": '{"reference": "MN908947.3", "start": 21000, "end": 26000}',
    "align_pairwise": '{"seq_a": "ACGTACGTGG", "seq_b": "ACGTTCGTGG"}',
    "primer_tm": '{"sequence": "AGCGGATAACAATTTCACACAGG"}',
    "restriction_sites": '{"sequence": "GAATTCAAGCTTGGATCCGCGGCCGC"}',
    "gene_lookup": '{"query": "HA"}',
    "variant_annotate": '{"gene": "S", "hgvs": "c.1841A>G"}',
}
# (name, argv, whether the tool's answer has hedges to declare)
COMMANDS = [
    ("list", ["list"], True),
    ("references", ["references"], False),
    ("version", ["version"], False),
    ("doctor", ["doctor"], False),
    ("index", ["index", "--reference", "MN908947.3", "--kind", "minimap2:map-ont"], False),
    ("align", ["align", *READS], True),
    ("breakpoints", ["breakpoints", *READS], True),
    ("variants", ["variants", *READS], True),
    ("taxonomy-reads", ["taxonomy", "--fastq", str(ARTIC), "--local", "--sample", "200"], True),
    ("taxonomy-influenza", ["taxonomy", "--fasta", str(FLU), "--local"], True),
    ("celltype", ["celltype", "--matrix", "{samples}/" + PBMC], True),
    ("celltype-all", ["celltype", "--matrix", "{samples}/" + PBMC, "--model", "all"], True),
    ("call-list", ["call", "--list"], True),
    # Cut to the bound as the tool arm prints it, so both arms cut the same fields.
    ("call-list-bounded", ["call", "--list", "--max-chars", "1500"], True),
    ("call-schema", ["call", "primer_tm", "--schema"], True),
    *((f"call-{tool}", ["call", tool, args], True) for tool, args in CALLS.items()),
]
# What defines an answer stays in both arms (the design keeps `note` and `convention`).
KEPT = {"align": {"convention"}, "breakpoints": {"convention", "note", "discounted_why"},
        "variants": {"convention", "note", "floor"}}


def _run(program: str, argv: list[str], env: dict) -> Ran:
    proc = subprocess.run([sys.executable, "-m", program, *argv], capture_output=True,
                          text=True, env=env, timeout=600)
    return Ran(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def arms_env(staged_home, tmp_path_factory) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("https_proxy", "http_proxy", "all_proxy", "biotool_confident",
                                "biotool_arms")}
    env.update(BIOTOOL_HOME=str(staged_home), BIOTOOL_CACHE=str(tmp_path_factory.mktemp("c")))
    return env


@pytest.fixture(scope="module")
def outputs(arms_env, staged_home) -> dict[tuple[str, str], Ran]:
    """Every command, marked, as the tool and as the control, as the agent runs them."""
    out = {}
    for name, argv, _ in COMMANDS:
        argv = [a.replace("{samples}", str(staged_home / "samples")) for a in argv]
        for mode, extra in MODES.items():
            out[name, mode] = _run("biotool", ["-q", *argv], {**arms_env, **extra})
    return out


def test_every_command_is_walked():
    from biotool.cli import commands

    assert {c.name for c in commands()} <= {argv[0] for _, argv, _ in COMMANDS}


@pytest.mark.parametrize("name,hedged", [(c[0], c[2]) for c in COMMANDS],
                         ids=[c[0] for c in COMMANDS])
def test_the_arms_differ_by_the_declared_hedges_only(outputs, name, hedged):
    marked, tool, control = (outputs[name, m] for m in MODES)
    # doctor exits 4 when a required check fails (e.g. run as root), still with its JSON.
    assert tool.code in (0, 4) and marked.code == control.code == tool.code, \
        (tool.stderr, control.stderr)
    hedges = check_answer(name, marked.json, tool.json, control.json)
    if hedged:  # the declaration is not vacuous: the tool's answer has hedges to leave out
        assert any(present(tool.json, p) for p in hedges.paths), name
    assert KEPT.get(name, set()) <= set(control.json), name


def test_the_named_restatements_are_gone_from_the_control(outputs):
    tool, control = outputs["taxonomy-reads", "tool"].json, outputs["taxonomy-reads", "control"].json
    assert tool["summary"]["organisms"][0]["fraction"] == tool["summary"]["dominant_fraction"]
    assert "fraction" not in control["summary"]["organisms"][0]
    assert control["summary"]["organisms"][0]["reads"] == 200
    # The panel's title names what it holds; the tool says it is not nt in its hedges only.
    assert "not nt" in tool["summary"]["caveat"] and control["search"]["title"].startswith(
        "Demo panel") and "not nt" not in json.dumps(control)
    ct = outputs["celltype", "control"].json["celltypist"]
    assert {"composition", "ranking", "fit", "coverage"} <= set(ct)
    assert all("skipped" not in row for row in ct["ranking"])
    note = outputs["variants", "control"].json["note"]
    assert note.startswith("only variants with depth >= 10") and "fell below" not in note
    # Why the floor is there is a finding, not a hedge: the control keeps it.
    assert "indistinguishable from sequencing and alignment error" in note
    # What was searched is a finding too: the whole FASTA, in both arms.
    flu = outputs["taxonomy-influenza", "control"].json
    assert flu["summary"]["whole_input"] is True and flu["input"]["sampled"] is False


@pytest.mark.parametrize("name", [c[0] for c in COMMANDS])
def test_every_default_output_on_the_demo_data_is_under_8_kb(outputs, name):
    size = len(outputs[name, "tool"].stdout.encode())
    assert size < OUTPUT_BOUND, size


def _pages(program: str, env: dict) -> dict[str, str]:
    top = _run(program, ["--help"], env)
    assert top.code == 0, top.stderr
    names = re.findall(r"^  (\w[\w-]*)  ", top.stdout.split("Commands:", 1)[1], re.M)
    pages = {program: top.stdout}
    for name in names:
        r = _run(program, [name, "--help"], env)
        assert r.code == 0, (name, r.stderr)
        pages[f"{program} {name}"] = r.stdout
    return pages


@pytest.fixture(scope="module")
def helps(arms_env) -> dict[tuple[str, str], dict[str, str]]:
    return {(program, mode): _pages(program, {**arms_env, **extra})
            for program in ("biotool", "molperceive", "biotool_sandbox")
            for mode, extra in MODES.items()}


def test_every_help_page_differs_between_the_arms_by_its_declared_hedges_only(helps):
    marked, tool, control = (helps["biotool", m] for m in MODES)
    assert marked.keys() == tool.keys() == control.keys()
    assert {"biotool align", "biotool taxonomy", "biotool celltype", "biotool call"} <= set(tool)
    for page in tool:
        check_help(page, marked[page], tool[page], control[page])
        # What the command does and its options stay: every option is still there.
        options = set(re.findall(r"^\s+(--[\w-]+)", tool[page], re.M))
        assert options <= set(re.findall(r"^\s+(--[\w-]+)", control[page], re.M)), page
    # The tool teaches the lessons; the control keeps every plain sentence, those that merely
    # name a hedge's subject included.
    assert lessons_in(tool["biotool"]) and lessons_in(tool["biotool taxonomy"])
    plain = {page: " ".join(text.split()) for page, text in control.items()}
    assert "VCF convention" in plain["biotool variants"]
    assert "1-based LAST" in plain["biotool breakpoints"]
    assert "ranked by support times the number of signatures" in plain["biotool breakpoints"]
    assert "--reference auto scores every staged CellTypist model" in plain["biotool celltype"]
    assert "The gene names win over an --organism that disagrees" in plain["biotool celltype"]
    assert "a small panel)" in plain["biotool taxonomy"]


def test_molperceive_and_the_launcher_have_one_arm(helps):
    # Neither answers the agent's questions with hedges: the control changes nothing there.
    for program in ("molperceive", "biotool_sandbox"):
        assert helps[program, "marked"] == helps[program, "tool"] == helps[program, "control"]


def test_no_help_text_is_emptied_in_the_control_arm():
    from biotool.arms import check_marks, text_for_arm
    from biotool.cli import HELP, commands

    check_marks(HELP)
    for command in commands():
        for text in (command.help, *(p.help for p in (*command.options, *command.arguments))):
            if text:
                check_marks(text)
                assert text_for_arm(text, True).strip(), (command.name, text)


def test_the_checks_fail_on_any_undeclared_difference():
    # The walk's own checks, on answers and pages that differ by more than their declarations.
    from biotool.arms import hedge
    from biotool_testing.arms import MARKED_KEY

    marked = {"calls": [{"pos": 1, "competence": {"confidence": 1.0}}], "fit": 0.9,
              "note": "shown" + hedge(": below the floor"), MARKED_KEY: ["calls[].competence"]}
    tool = {"calls": [{"pos": 1, "competence": {"confidence": 1.0}}], "fit": 0.9,
            "note": "shown: below the floor"}
    control = {"calls": [{"pos": 1}], "fit": 0.9, "note": "shown"}
    check_answer("ok", marked, tool, control)
    for wrong in ({**control, "fit": None}, {"calls": [{"pos": 1}], "note": "shown"},
                  {**control, "note": "shown: below the floor"},
                  {**control, "calls": [{"pos": 1, "competence": {"confidence": 1.0}}]}):
        with pytest.raises(AssertionError):
            check_answer("wrong", marked, tool, wrong)
    with pytest.raises(AssertionError):  # a lesson left undeclared is caught by its words
        check_answer("lesson", {**marked, "caveat": "x"}, {**tool, "caveat": "x"},
                     {**control, "caveat": "x"})
    # A finding declared as a hedge is caught: the control would lose what happened.
    found = {"note": "shown" + hedge(": indistinguishable from sequencing error below it"),
             MARKED_KEY: []}
    with pytest.raises(AssertionError, match="lost findings"):
        check_answer("finding", found, {"note": "shown: indistinguishable from sequencing "
                                                 "error below it"}, {"note": "shown"})
    failed = {"errors": {"celltypist": "no CellTypist reference could be scored"},
              "competence": {"confidence": 0.0}, MARKED_KEY: ["errors", "competence"]}
    with pytest.raises(AssertionError, match="lost findings"):
        check_answer("failure", failed, {k: v for k, v in failed.items() if k != MARKED_KEY},
                     {})
    page = "Does a thing." + hedge(" Read blind_spots first.") + " Ranked by support."
    check_help("ok", page, "Does a thing. Read blind_spots first. Ranked by support.",
               "Does a thing. Ranked by support.")
    with pytest.raises(AssertionError):  # a plain sentence lost with the hedge
        check_help("wrong", page, "Does a thing. Read blind_spots first. Ranked by support.",
                   "Does a thing.")
