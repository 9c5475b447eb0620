"""The experimental control (BIOTOOL_CONFIDENT=1) and bounded output, on every command run on
the demo data: confident output carries no hedge at any depth (biotool.competence.HEDGES, one
definition), the same command without it does, and every default output stays under 8 KB."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from biotool.competence import HEDGES, strip_hedges

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "refs" / "demo"
ARTIC = DEMO / "sarscov2" / "MT007544.fastq"
FLU = DEMO / "influenza" / "influenza_a_h1n1.fasta"
PBMC = "demo-pbmc68k-heldout"
OUTPUT_BOUND = 8 * 1024
DESIGN_HEDGES = {"caveat", "can_see_minority", "detection_floor", "dominant_fraction", "competence",
               "reference_is_conclusive", "blind_spots", "margin"}

# (name, argv, fields the answer must keep in confident mode, has hedges when not confident)
READS = ("--fastq", str(ARTIC), "--reference", "MN908947.3")
COMMANDS = [
    ("list", ["list"], {"items"}, True),
    ("references", ["references"], {"references"}, False),
    ("version", ["version"], {"biotool"}, False),
    ("doctor", ["doctor"], {"checks"}, False),
    # `convention` defines the answer (positions, windows), so both arms keep it.
    ("align", ["align", *READS], {"mapped", "convention"}, True),
    ("breakpoints", ["breakpoints", *READS], {"consensus", "convention"}, True),
    ("variants", ["variants", *READS], {"variants", "af", "convention"}, True),
    ("taxonomy-reads", ["taxonomy", "--fastq", str(ARTIC), "--local", "--sample", "200"],
     {"dominant", "organisms", "hits"}, True),
    ("taxonomy-influenza", ["taxonomy", "--fasta", str(FLU), "--local"],
     {"influenza", "candidates", "dominant"}, True),
    ("celltype", ["celltype", "--matrix", "{samples}/" + PBMC], {"composition", "ranking"}, True),
    ("celltype-all", ["celltype", "--matrix", "{samples}/" + PBMC, "--model", "all"],
     {"composition", "errors"}, True),
    ("call", ["call", "gene_lookup", '{"query": "HA"}'], set(), True),
]
# Over the bound on the landed code, in files outside this work's remit; strict, so the day
# they fit this test says so.
OVER_BOUND: dict[str, str] = {}


def keys(obj) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in keys(v)}
    return set()


def test_the_design_set_is_inside_the_one_definition():
    assert DESIGN_HEDGES <= HEDGES
    assert {"p_minority_seen", "host_dominated", "n_below_floor", "note"} <= HEDGES


@pytest.fixture(scope="module")
def outputs(staged_home, tmp_path_factory):
    """Every command, once plain and once confident, as the agent runs them."""
    import os
    import subprocess
    import sys

    cache = tmp_path_factory.mktemp("cache")
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("https_proxy", "http_proxy", "all_proxy", "biotool_confident")}
    env.update(BIOTOOL_HOME=str(staged_home), BIOTOOL_CACHE=str(cache))
    out = {}
    for name, argv, _, _ in COMMANDS:
        argv = [a.replace("{samples}", str(staged_home / "samples")) for a in argv]
        for confident in (False, True):
            e = {**env, "BIOTOOL_CONFIDENT": "1"} if confident else env
            proc = subprocess.run([sys.executable, "-m", "biotool", "-q", *argv],
                                  capture_output=True, text=True, env=e, timeout=600)
            out[name, confident] = proc
    return out


@pytest.mark.parametrize("name,wanted,hedged", [(c[0], c[2], c[3]) for c in COMMANDS],
                         ids=[c[0] for c in COMMANDS])
def test_confident_output_carries_the_answer_and_no_hedge(outputs, name, wanted, hedged):
    plain, confident = outputs[name, False], outputs[name, True]
    # doctor exits 4 when a required check fails (e.g. run as root), still with its JSON.
    assert plain.returncode in (0, 4) and confident.returncode == plain.returncode, \
        plain.stderr + confident.stderr
    p, c = json.loads(plain.stdout), json.loads(confident.stdout)
    assert not keys(c) & HEDGES, sorted(keys(c) & HEDGES)
    assert wanted <= keys(c)
    if hedged:
        assert keys(p) & HEDGES  # the stripping is not vacuous: the plain answer had hedges
    # Nothing but the hedges went: the rest of the answer is the same shape.
    assert keys(c) == keys(strip_hedges(p))


@pytest.mark.parametrize("name", [c[0] for c in COMMANDS])
def test_every_default_output_on_the_demo_data_is_under_8_kb(outputs, name, request):
    if name in OVER_BOUND:
        request.applymarker(pytest.mark.xfail(strict=True, reason=OVER_BOUND[name]))
    assert len(outputs[name, False].stdout.encode()) < OUTPUT_BOUND


# The words of the lessons: every hedge field, what the help says about reading them, and
# the control itself. Written out here, not taken from the filter, so the test checks it.
LESSONS = re.compile(r"blind.?spots?|caveat|detection.floor|unobserved|not absent|deplet|"
                     r"can.see.minority|minority|conclusive|\bmargin\b|competence|"
                     r"confiden|hedge|BIOTOOL_CONFIDENT|n_below_floor|p_minority_seen|"
                     r"host_dominated|fraction_assessed|no_hit_caveat|trusting", re.I)


def _all_help(biotool, env: dict) -> dict[str, str]:
    top = biotool("--help", env=env)
    assert top.code == 0, top.stderr
    names = re.findall(r"^  (\w[\w-]*)  ", top.stdout.split("Commands:", 1)[1], re.M)
    assert {"align", "taxonomy", "celltype", "variants", "breakpoints", "call"} <= set(names)
    out = {"biotool": top.stdout}
    for name in names:
        r = biotool(name, "--help", env=env)
        assert r.code == 0, (name, r.stderr)
        out[name] = r.stdout
    return out


def test_confident_help_reads_like_a_conventional_tools(biotool):
    plain = _all_help(biotool, {"BIOTOOL_CONFIDENT": "1"})
    hedged = _all_help(biotool, {})
    for name, text in plain.items():
        assert not LESSONS.search(text), (name, LESSONS.search(text).group(0))
        # What the command does and its options stay: every option is still there.
        options = set(re.findall(r"^\s+(--[\w-]+)", hedged[name], re.M))
        assert options <= set(re.findall(r"^\s+(--[\w-]+)", text, re.M)), name
    # The other arm is taught the lessons.
    assert LESSONS.search(hedged["biotool"]) and LESSONS.search(hedged["taxonomy"])
    assert "VCF convention" in plain["variants"] and "1-based LAST" in plain["breakpoints"]
    assert "--reference auto scores every staged CellTypist model" in plain["celltype"]


def test_no_help_text_is_emptied_in_confident_mode():
    from biotool.cli import commands
    from biotool.competence import plain_help

    for command in commands():
        assert plain_help(command.help).strip(), command.name
        for param in (*command.options, *command.arguments):
            if param.help:
                assert plain_help(param.help).strip(), (command.name, param.key, param.help)
