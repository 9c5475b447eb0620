"""The runtime layer on the real engine: the sandbox under gVisor (runsc, registered by
image/runtime/register-runsc.sh) and under runc, told apart from inside by doctor; the
grader's BIOTOOL_REQUIRE_RUNTIME; the launcher's --runtime. `make test-gvisor` runs the rest
of the image tier's proof (escape matrix, isolation, toolbox, families) with the sandbox on
runsc."""

from __future__ import annotations

import json

import pytest

from biotool_testing import stack
from biotool_testing.contract import error_line
from biotool_testing.ran import Ran

RUNSC = "runsc"


@pytest.fixture(scope="module")
def runsc(docker_client) -> str:
    if RUNSC not in (docker_client.info().get("Runtimes") or {}):
        pytest.fail("the engine has no runtime `runsc`: run image/runtime/register-runsc.sh "
                    "(.ci/run does)", pytrace=False)
    return RUNSC


def _runtime_check(ran: Ran) -> dict:
    return next(c for c in ran.json["checks"] if c["check"] == "runtime")


@pytest.mark.parametrize("runtime,kernel", [("runc", "host-kernel"), (RUNSC, "gvisor")])
def test_doctor_reads_the_runtime_from_evidence_and_passes_under_both(sandbox, runsc, runtime,
                                                                      kernel, apptainer_shape):
    # The Apptainer shape (arbitrary UID, read-only root, no network): doctor's every check.
    ran = sandbox.biotool("doctor", runtime=runtime, **apptainer_shape)
    assert ran.code == 0, ran
    check = _runtime_check(ran)
    assert check["ok"] and not check["required"]
    assert check["detail"].startswith(f"{kernel}: "), check


def test_require_runtime_refuses_every_command_on_the_host_kernel(sandbox, runsc):
    env = {"BIOTOOL_REQUIRE_RUNTIME": "gvisor"}
    refused = sandbox.biotool("list", runtime="runc", environment=env)
    error_line(refused, "BIOTOOL_REQUIRE_RUNTIME=gvisor", "host's kernel", "--runtime runsc",
               code=3, alone=True)
    assert sandbox.biotool("list", runtime=runsc, environment=env).code == 0
    ran = sandbox.biotool("doctor", runtime=runsc, environment=env)
    assert ran.code == 0 and _runtime_check(ran)["required"], ran


def test_launcher_runs_the_sandbox_on_runsc_and_egress_on_the_default(images, runsc):
    import docker

    dc = docker.from_env()
    up = stack.launcher("up", "--runtime", runsc)
    try:
        assert up["runtime"] == runsc
        sandbox = dc.containers.get(up["containers"]["sandbox"])
        egress = dc.containers.get(up["containers"]["egress"])
        assert sandbox.attrs["HostConfig"]["Runtime"] == runsc
        assert egress.attrs["HostConfig"]["Runtime"] == "runc"
        ran = stack.launcher("exec", up["run"], "--env", "BIOTOOL_REQUIRE_RUNTIME=gvisor", "--",
                             "biotool", "doctor")
        assert ran["exit_code"] == 0 and ran["stdout"], ran
        checks = {c["check"]: c for c in json.loads(ran["stdout"])["checks"]}
        assert checks["runtime"]["ok"] and checks["runtime"]["detail"].startswith("gvisor: ")
        # gVisor's netlink names no link kind: Docker's internal-network shape (one link, a
        # default gateway no one holds, asked over TCP) is the evidence instead.
        assert checks["egress"]["ok"] and checks["egress"]["detail"].startswith("enforced"), checks
        ran = stack.launcher("exec", up["run"], "--", "python3", "-m", "biotool.system.enforcement")
        st = json.loads(ran["stdout"])
        assert st["mode"] == "egress-proxy" and "gVisor's only link" in st["reason"], st
        ran = stack.launcher("exec", up["run"], "--env", "BIOTOOL_REQUIRE_ENFORCED=1", "--",
                             "biotool", "list")
        assert ran["exit_code"] == 0, ran
    finally:
        stack.launcher("down", up["run"])


def test_under_gvisor_the_default_bridge_with_a_proxy_set_is_not_enforced(sandbox, runsc):
    # The ARP table under gVisor is empty, so a live gateway would read as silent there: the
    # TCP probe must see the host holding the default bridge's gateway.
    ran = sandbox.run(["python3", "-m", "biotool.system.enforcement"], runtime=runsc,
                      network_mode="bridge", environment={"HTTPS_PROXY": "http://172.17.0.1:3128"})
    st = json.loads(ran.stdout)
    assert ran.code == 4 and st["enforced"] is False, ran
    assert "answers" in st["reason"] and st["default_routes"], st
    ran = sandbox.biotool("list", runtime=runsc, network_mode="bridge",
                          environment={"HTTPS_PROXY": "http://172.17.0.1:3128",
                                       "BIOTOOL_REQUIRE_ENFORCED": "1"})
    error_line(ran, "BIOTOOL_REQUIRE_ENFORCED", "not enforced", code=3)


def test_launcher_refuses_a_runtime_the_engine_lacks_and_leaves_nothing(images):
    from biotool_sandbox.engine import runs as launcher_runs

    before = sorted(p.name for p in launcher_runs.state_root().iterdir()) \
        if launcher_runs.state_root().exists() else []
    runs_before = launcher_runs.runs()
    ran = stack.launcher("up", "--runtime", "no-such-runtime", check=False)
    assert ran["_code"] == 2, ran
    line = ran["_stderr"].strip()
    assert "\n" not in line and "--runtime 'no-such-runtime'" in line and "runc" in line, line
    assert launcher_runs.runs() == runs_before
    after = sorted(p.name for p in launcher_runs.state_root().iterdir()) \
        if launcher_runs.state_root().exists() else []
    assert after == before


def test_under_runsc_an_internal_network_off_a_byte_boundary_reads_as_enforced(sandbox, runsc,
                                                                              docker_client):
    # Docker's second address pool hands out /20s once the 172.x /16s are taken; gVisor writes
    # such a mask in its own form, which once crashed doctor (NetmaskValueError).
    import docker
    from biotool_testing.images import SESSION, TEST_LABEL

    net = None
    for third in range(16, 256, 16):
        subnet = f"10.213.{third}.0/20"
        try:
            net = docker_client.networks.create(
                f"biotool-test-nm20-{SESSION}", driver="bridge", internal=True,
                options={"com.docker.network.bridge.inhibit_ipv4": "true"},  # as compose.yaml
                labels={TEST_LABEL: SESSION}, ipam=docker.types.IPAMConfig(
                    pool_configs=[docker.types.IPAMPool(subnet=subnet)]))
            break
        except docker.errors.APIError:  # overlaps a network already there: the next /20
            continue
    assert net is not None, "no free /20 under 10.213.0.0/16"
    try:
        proxy = f"10.213.{third + 2}.7"  # on the /20, off its first /24
        ran = sandbox.run(["python3", "-m", "biotool.system.enforcement"], runtime=runsc,
                          network_mode=net.name, environment={"HTTPS_PROXY": f"http://{proxy}:3128"})
        assert ran.code == 0, ran
        st = ran.json
        assert st["enforced"] is True and subnet in st["reason"], st
    finally:
        net.remove()
