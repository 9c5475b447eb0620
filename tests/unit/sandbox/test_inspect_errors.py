"""The Inspect provider's error mapping, on the exact messages the engine (Docker 20.10, runc)
and GNU timeout print in the image (tests/image/test_harness.py runs Inspect's own checks)."""

from __future__ import annotations

import pytest

from biotool_sandbox.engine import execute  # the one exec, the CLI's and the provider's (run_in)

pytest.importorskip("inspect_ai")
from biotool_sandbox.providers import files  # noqa: E402

RUNC = (b'OCI runtime exec failed: exec failed: unable to start container process: '
        b'exec: "/etc/passwd": permission denied: unknown\r\n')
WRAPPER = "/usr/bin/timeout: failed to run command \u2018/etc/passwd\u2019: Permission denied\n".encode()


@pytest.mark.parametrize("out,err,cmd,wrapped,started", [
    (RUNC, b"", ["/etc/passwd"], False, False),
    (b"", WRAPPER, ["/etc/passwd"], True, True),
    # timeout's ASCII quotes under LC_ALL=C
    (b"", b"/usr/bin/timeout: failed to run command '/etc/passwd': Permission denied\n",
     ["/etc/passwd"], True, True),
], ids=["engine", "wrapper", "wrapper-C-locale"])
def test_a_command_that_cannot_be_executed_is_a_refusal(out, err, cmd, wrapped, started):
    assert execute._exec_refusal(126, out, err, cmd, wrapped, started=started) == \
        (out or err).decode().strip()


@pytest.mark.parametrize("code,out,err,cmd,wrapped,started", [
    # the command's own shell reporting its script: an ordinary result
    (126, b"", b"sh: 1: /etc/passwd: Permission denied\n", ["sh", "-c", "/etc/passwd"], False,
     True),
    # the caller's own timeout (bare or by our wrapper's path) refusing its target
    (126, b"", b"timeout: failed to run command \xe2\x80\x98./x\xe2\x80\x99: Permission denied\n",
     ["timeout", "5", "./x"], True, True),
    (126, b"", WRAPPER.replace(b"/etc/passwd", b"./x"), ["/usr/bin/timeout", "5", "./x"], True,
     True),
    # the engine failing to start our wrapper is not cmd's refusal (its workdir, say)
    (126, RUNC, b"", ["/etc/passwd"], True, False),
    # a missing binary stays a result, as in Inspect's docker provider
    (126, b'OCI runtime exec failed: exec failed: unable to start container process: exec: '
          b'"/nope": stat /nope: no such file or directory: unknown\r\n', b"", ["/nope"], False,
     False),
    (1, RUNC, b"", ["/etc/passwd"], False, True),
    # a command that started and prints the engine's words: its own output, whatever it says
    (126, RUNC, b"", ["/etc/passwd"], False, True),
    (126, RUNC, b"x\n", ["/etc/passwd"], False, True),
], ids=["own-shell", "own-timeout", "own-timeout-abs", "engine-when-wrapped", "missing",
        "other-code", "engine-words-from-a-started-command", "both-streams"])
def test_the_commands_own_output_is_not_a_refusal(code, out, err, cmd, wrapped, started):
    assert execute._exec_refusal(code, out, err, cmd, wrapped, started=started) is None


def test_a_directory_read_names_the_path_and_says_directory():
    with pytest.raises(IsADirectoryError) as info:
        files.raise_file_error("/etc", "cat: /etc: Is a directory\n")
    assert info.value.filename == "/etc" and "directory" in str(info.value)
