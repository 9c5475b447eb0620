"""The command-line layer all three programs share (entrypoints/commandline): parsing, the
checks every option gets, help pages and the one exception-to-exit-code ladder."""

from __future__ import annotations

import json

import pytest

from commandline import program
from commandline.choice import exactly_one
from commandline.errors import ProgramError, UsageError
from commandline.kinds import count, seconds
from commandline.typed import parse
from commandline.spec import Argument, Command, Option

CMD = Command("go", lambda **v: v, help="Does it.\n\n\b\nkept   as\n  written", options=(
    Option(("--name", "-n"), "A name.", required=True),
    Option(("--count",), "How many.", kind=count(1, 9), default=3),
    Option(("--wait",), "Seconds.", kind=seconds(max=60)),
    Option(("--ratio",), kind=float, default=0.5),
    Option(("--fast", "-f"), "Quickly.", flag=True),
    Option(("--file",), multiple=True, gather="each"),
    Option(("--pair",), multiple=True, gather="grouped"),
    Option(("--new",), default="x", aliases=("--old",)),
), arguments=(Argument("what", "The thing."),))


def values(*args: str) -> dict:
    return parse(CMD, list(args))


def test_option_forms():
    v = values("-fnA", "--count=4", "--file", "a", "b", "--pair", "R1", "R2", "--old", "y", "it")
    assert (v["name"], v["count"], v["fast"], v["what"], v["new"]) == ("A", 4, True, "it", "y")
    assert v["file"] == ["a", "b"] and v["pair"] == ["R1,R2"] and v["ratio"] == 0.5
    assert values("-n", "-odd")["name"] == "-odd"  # an option's own value, whatever it looks like


@pytest.mark.parametrize("args,message", [
    ([], "Missing option '--name' / '-n'."),
    (["-n", "a", "--count", "x"], "Invalid value for '--count': 'x' is not a valid int."),
    (["-n", "a", "--count", "10"], "Invalid value for '--count': 10 is not in the range 1<=x<=9."),
    (["-n", "a", "--new", ""], "--new '': empty value (leave the option out for its default)"),
    (["-n", "a", "-n", "b"], "option --name given 2 times; it takes one value"),
    (["-n", "a", "--old", "1", "--new", "2"], "option --new given 2 times; it takes one value"),
    (["-n", "a", "--nam"], "No such option: --nam (Possible options: --name, --new)"),
    (["-n", "a", "--zzzz"], "No such option: --zzzz"),
    (["-n", "a", "--fast=1"], "Option '--fast' does not take a value."),
    (["-n"], "Option '-n' requires an argument."),
    (["-n", "a", "--old"], "Option '--old' requires an argument."),  # as written, an old spelling
    (["-n", "a", "x", "y"], "Got unexpected extra argument(s) (y)"),
    (["-n", "a", "--ratio", "1" * 30], None),  # a float that large is a float: no refusal
    (["-n", "a", "--ratio", "nan"], "Invalid value for '--ratio': nan is not a finite number."),
    (["-n", "a", "--ratio", "-inf"], "Invalid value for '--ratio': -inf is not a finite number."),
    (["-n", "a", "--wait", "0"], "Invalid value for '--wait': 0 is not in the range 0<x<=60."),
    (["-n", "a", "--wait", "61"], "Invalid value for '--wait': 61 is not in the range 0<x<=60."),
    (["-n", "a", "--wait", "Infinity"], "Invalid value for '--wait': Infinity is not a finite number."),
])
def test_usage_errors_name_the_culprit(args, message):
    if message is None:
        assert values(*args)["ratio"] == float("1" * 30)
        return
    with pytest.raises(UsageError) as err:
        values(*args)
    assert err.value.message == message and err.value.command == "go"


@pytest.mark.parametrize("kind,bounds,takes,refuses", [
    (seconds(), "x>0", ["0.5", "1e300"], ["0", "-0", "-1", "nan", "inf", "soon"]),
    (seconds(zero_ok=True), "x>=0", ["0", "2"], ["-1", "nan", "-inf"]),
    (seconds(max=604800), "0<x<=604800", ["604800"], ["604800.5", "1e300", "0"]),
    (count(), "x>=1", ["1", "50"], ["0", "-3", "1.5", "nan"]),
    (count(0, 255), "0<=x<=255", ["0", "255"], ["-1", "256"]),
])
def test_option_kinds_hold_one_rule_in_one_wording(kind, bounds, takes, refuses):
    """seconds() and count(): every --timeout, --top, --threads of every family (biotool.options)."""
    assert kind.bounds() == bounds
    for raw in takes:
        assert kind(raw) == kind.type(raw)
    for raw in refuses:
        with pytest.raises(ValueError, match=r"(is not a valid \w+|is not a finite number|is not in "
                           r"the range [^ ]+)\.$"):
            kind(raw)


@pytest.mark.parametrize("given,answer", [
    ({"--fasta": "a.fa", "--fastq": None}, "--fasta"),
    ({"--fastq": [], "--bam": ["x.bam"]}, "--bam"),
    ({"--a": None, "--b": None, "--c": "1"}, "--c"),
    ({"--fasta": "a.fa", "--fastq": "b.fq"}, None),
    ({"--fastq": [], "--bam": []}, None),
    ({"--a": "1", "--b": None, "--c": "1"}, None),
])
def test_exactly_one_of_several_options_in_one_wording(given, answer):
    if answer is not None:
        assert exactly_one(given) == answer
        return
    with pytest.raises(UsageError) as err:
        exactly_one(given)
    names = list(given)
    assert err.value.message == ("give exactly one of " + ", ".join(names[:-1]) + " or "
                                 + names[-1]) and err.value.exit_code == 2


def test_help_pages(capsys):
    for argv in (["go", "--help"], ["-h"]):
        with pytest.raises(SystemExit) as done:
            program.main("prog", [CMD], help="The program.", argv=argv)
        assert done.value.code == 0
    page, top = capsys.readouterr().out.split("Usage: prog [OPTIONS]")
    assert page.startswith("Usage: prog go [OPTIONS] [what]\n\n  Does it.\n\n  kept   as\n    written")
    assert "  -n, --name <str>" in page and "[required]" in page
    assert "[default: 3; 1<=x<=9]" in page and "--old" not in page
    assert "  -h, --help" in page and "Arguments:\n  what" in page
    assert "Commands:\n  go  Does it.\n" in top


def _main(capsys, run, argv, **kw):
    with pytest.raises(SystemExit) as done:
        program.main("prog", [Command("go", run, tail=kw.pop("tail", False),
                                      arguments=kw.pop("arguments", ()))],
                     help="P.", emit=lambda r: print(json.dumps(r)), argv=argv, **kw)
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


def test_the_ladder(capsys, monkeypatch):
    def failed():
        raise ProgramError("it broke\non two lines", result={"report": 1})

    assert _main(capsys, lambda: {"ok": 1}, ["go"]) == (0, '{"ok": 1}\n', "")
    # A report the error carries comes first, then the one error line.
    assert _main(capsys, failed, ["go"]) == (4, '{"report": 1}\n', "prog: error: it broke on two lines\n")
    monkeypatch.delenv("BIOTOOL_DEBUG", raising=False)
    code, out, err = _main(capsys, lambda: 1 / 0, ["go"])
    assert (code, out) == (4, "") and err == "prog: error: internal error: ZeroDivisionError: division by zero\n"
    code, _, err = _main(capsys, lambda: {}, ["goo"])
    assert code == 2 and err == "prog: error: No such command 'goo'. Did you mean 'go'?\n"
    code, out, _ = _main(capsys, lambda: {}, [])
    assert code == 0 and out.startswith("Usage: prog [OPTIONS] COMMAND [ARGS]...")


def test_program_flags_anywhere_and_the_tail(capsys):
    seen = []
    quiet = Option(("--quiet", "-q"), flag=True)
    assert _main(capsys, lambda: {}, ["go", "-q"], options=(quiet,), setup=seen.append)[0] == 0
    assert seen == [{"quiet"}]
    run = Argument("cmd", many=True)
    code, out, _ = _main(capsys, lambda cmd: {"cmd": cmd}, ["go", "a", "--", "--x", "-y"],
                         tail=True, arguments=(run,))
    assert code == 0 and json.loads(out) == {"cmd": ["a", "--x", "-y"]}
    # The command line after `--` goes to the last argument whole, never to a missing one.
    named = (Argument("run", required=True), run)
    code, _, err = _main(capsys, lambda run, cmd: {}, ["go", "--", "x"], tail=True,
                         arguments=named)
    assert code == 2 and err == "prog: error: go: Missing argument 'RUN'.\n"


LEAVE = """
import atexit, json, sys, tempfile, threading, time
from pathlib import Path
from commandline import program
from commandline.ladder import run_process
from commandline.spec import Command

mode, marks = sys.argv[1], Path(sys.argv[2])
atexit.register(lambda: (marks / "atexit").write_text("ran"))
held = tempfile.TemporaryDirectory(dir=marks)  # never closed: its finalizer must still run


def go():
    if mode == "thread":  # a worker the process must wait for, as the ordinary exit does
        threading.Thread(target=lambda: (time.sleep(0.5), (marks / "worker").write_text("done"))
                         ).start()
    if mode == "fails":
        raise ValueError("no")
    if mode == "interrupt":  # waits for the test's Ctrl-C (SIGINT)
        (marks / "ready").write_text("")
        time.sleep(600)
    return {"rows": ["x" * 100] * 2000}


run_process(lambda: program.main("prog", [Command("go", go)], help="P.",
                                 emit=lambda r: print(json.dumps(r)), argv=["go"]))
"""


def test_ctrl_c_is_one_line_and_exit_130_after_the_atexit_work(tmp_path):
    import signal
    import subprocess
    import sys

    from biotool_testing.polling import until

    proc = subprocess.Popen([sys.executable, "-c", LEAVE, "interrupt", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        until("the command waiting", lambda: (tmp_path / "ready").exists())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert (proc.returncode, out, err) == (130, "", "prog: error: interrupted\n")
    assert (tmp_path / "atexit").read_text() == "ran"


@pytest.mark.parametrize("mode,code", [("ok", 0), ("fails", 4), ("thread", 0)])
def test_a_process_leaves_after_its_output_its_atexit_work_and_its_threads(tmp_path, mode, code):
    """run_process skips the interpreter's teardown but nothing a caller sees: the whole output
    through a pipe, the exit code, atexit functions, an unclosed temporary folder removed, a
    non-daemon thread's work."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", LEAVE, mode, str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == code, proc.stderr
    if mode == "fails":
        assert proc.stdout == "" and proc.stderr == "prog: error: internal error: ValueError: no\n"
    else:
        assert len(json.loads(proc.stdout)["rows"]) == 2000 and proc.stderr == ""
    assert (tmp_path / "atexit").read_text() == "ran"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["atexit"] + (["worker"] if mode == "thread" else []))
