"""Argument checks every biotool command shares (biotool.cli): one usage line, exit 2."""

from __future__ import annotations

import pytest

from biotool_testing.contract import error_line
from biotool_testing.ran import Ran


def _usage(res, *needles):
    error_line(res, *needles, alone=True)


@pytest.mark.parametrize("args,needles", [
    (["align", "--fastq", "r.fq", "--reference", "x", "--seed", "1" * 25], ["--seed", "out of range"]),
    (["align", "--fastq", "r.fq", "--reference", ""], ["--reference '': empty value"]),
    (["variants", "--fastq", "r.fq", "--reference", "x", "--vcf", ""], ["--vcf '': empty value"]),
    (["taxonomy", "--fastq", "r.fq", "--database", " "], ["--database ' ': empty value"]),
    (["align", "--fastq", "r.fq", "--reference", "r" * 20000], ["--reference", "20,000 characters"]),
    (["align", "--fastq", "r.fq", "--fastq", "s.fq", "--reference", "x"], ["--fastq given 2 times"]),
    (["align", "--fastq=r.fq", "--fastq", "s.fq", "--reference", "x"], ["--fastq given 2 times"]),
])
def test_option_values_every_command_refuses(biotool, args, needles):
    _usage(biotool(*args), *needles)


def test_non_utf8_option_value_is_refused(biotool_env):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "biotool", "align", "--fastq", b"r\xff.fq",
                           "--reference", "x"], capture_output=True, env=biotool_env)
    ran = Ran(proc.returncode, proc.stdout.decode(errors="replace"),
              proc.stderr.decode(errors="replace"))
    error_line(ran, "not valid UTF-8", alone=True)


def test_empty_is_accepted_where_it_is_the_default(biotool):
    res = biotool("call", "--list", "--filter", "", "--offered")
    assert res.code == 0, res.stderr
    assert res.json["tools"]


def test_repeatable_options_stay_repeatable(biotool, tmp_path):
    # variants takes one library per --fastq: two are not "given twice" (they fail later,
    # on the missing files, naming the first).
    res = biotool("variants", "--fastq", str(tmp_path / "a.fq"), "--fastq",
                  str(tmp_path / "b.fq"), "--reference", "MN908947.3")
    assert res.code == 2 and "given 2 times" not in res.stderr and "a.fq" in res.stderr
