"""An out-of-memory kill says so through `biotool-sandbox exec` (the same run_in the Inspect
provider uses): exit 137 with `oom_killed` and a one-line reason, while a `kill -9` of the
agent's own stays a plain 137."""

from __future__ import annotations

from biotool_testing import stack

HOG = ["python3", "-c", "b = b'x' * (6 << 30)"]  # writes 6 GiB, over the 5g limit below


def test_an_oom_kill_is_named_and_a_plain_sigkill_is_not(images):
    # The smallest /work leaves the most of the limit to processes (the tmpfs count against it).
    up = stack.launcher("up", "--memory", "5g", "--work-size", "512m")
    try:
        first = stack.launcher("exec", up["run"], "--", *HOG, timeout=600)
        assert first["exit_code"] == 137 and first["oom_killed"] is True, first
        line = first["stderr"].strip().splitlines()[-1]
        assert line.startswith("biotool-sandbox: exit 137: the sandbox reached its memory limit (5.0g)")
        assert "out-of-memory killer" in line and "(1 in this sandbox so far)" in line, line

        killed = stack.launcher("exec", up["run"], "--", "sh", "-c", "kill -9 $$")
        assert killed["exit_code"] == 137 and killed["oom_killed"] is False, killed
        assert "out-of-memory" not in killed["stderr"], killed

        again = stack.launcher("exec", up["run"], "--", *HOG, timeout=600)
        assert again["oom_killed"] is True and "(2 in this sandbox so far)" in again["stderr"], again
    finally:
        stack.launcher("down", up["run"])
