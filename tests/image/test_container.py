"""The agent is not root and can write only its workspace and /tmp (docs/rules.md, the container layer)."""


import pytest


def test_agent_is_not_root(sandbox):
    ran = sandbox.run("id -u; id -un; echo $HOME; pwd")
    assert ran.code == 0, ran
    uid, name, home, cwd = ran.stdout.split()
    assert uid == "1000" and name == "agent"
    assert home == "/home/agent" and cwd == "/work"


@pytest.mark.parametrize("path", ["/probe", "/opt/biotool/probe", "/etc/probe",
                                  "/etc/biotool/probe", "/opt/venv/probe", "/usr/local/bin/probe"])
def test_writing_outside_the_workspace_fails(sandbox, path):
    ran = sandbox.run(f"touch {path}")
    assert ran.code != 0, f"agent could create {path}"
    assert "Permission denied" in ran.stderr


@pytest.mark.parametrize("path", ["/work", "/tmp", "/home/agent"])
def test_workspace_and_tmp_are_writable(sandbox, path):
    ran = sandbox.run(f"echo hello > {path}/probe && cat {path}/probe")
    assert ran.code == 0, ran
    assert ran.stdout.strip() == "hello"


def test_staged_files_are_read_only_to_the_agent(sandbox):
    # find -writable asks access(2), so it lists whatever the agent could modify.
    ran = sandbox.run("find /opt/biotool /etc/biotool -writable -print | head -5; "
                      "find /opt/biotool -type f | wc -l; "
                      "stat -c '%U %a' /opt/biotool /opt/biotool/staged.json")
    assert ran.code == 0, ran
    lines = ran.stdout.splitlines()
    owners = lines[-2:]
    files = int(lines[-3])
    writable = lines[:-3]
    assert writable == [], f"agent can modify: {writable}"
    assert files > 10, "nothing staged under /opt/biotool"
    assert owners == ["root 755", "root 644"]


def test_staged_inventory_cannot_be_changed_moved_or_removed(sandbox):
    inv = "/opt/biotool/staged.json"
    ran = sandbox.run(f"(echo '{{}}' >> {inv}) 2>/dev/null && echo appended; "
                      f"mv {inv} /work/x 2>/dev/null && echo moved; "
                      f"rm -f {inv} 2>/dev/null && echo removed; "
                      f"test -s {inv} && echo intact")
    assert ran.stdout.split() == ["intact"], ran
