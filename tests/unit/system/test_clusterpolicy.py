"""doctor's cluster mode in real network namespaces shaped like a Kubernetes pod: a veth with a
default route via a router namespace that holds the "Service" addresses (the egress proxy, the
Kubernetes API, the allowlisted host as the pod's /etc/hosts resolves it), all off the pod's
subnet. The router drops everything but the proxy's port, or nothing; the policy variable is
declared, or absent. Every verdict comes from `python -m biotool.system.enforcement` run inside
the pod namespace, probing for real."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from biotool.rules import REPO_RULES
from biotool.system import clusterpolicy, enforcement

SRC = str(Path(enforcement.__file__).resolve().parents[2])
POD, GW = "10.79.0.2", "10.79.0.1"
API, PROXY, NCBI_AT = "10.96.0.1", "10.96.0.10", "10.96.0.20"
NCBI = "blast.ncbi.nlm.nih.gov"
POLICY = "CiliumNetworkPolicy test-biotool-sandbox-no-world"
# The router's listeners: the proxy, and what an open pod network would reach.
LISTEN = textwrap.dedent(f"""
    import socket, sys, threading
    def serve(addr):
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr); s.listen(16)
        while True:
            s.accept()[0].close()
    for addr in (("{PROXY}", 3128), ("{API}", 443), ("{NCBI_AT}", 443)):
        threading.Thread(target=serve, args=(addr,), daemon=True).start()
    print("listening", flush=True)
    sys.stdin.read()
""")


def _run(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True, timeout=30)


@pytest.fixture()
def pod():
    """(pod namespace, router namespace, the router's listener); all removed afterwards."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("iptables"):
        pytest.skip("network namespaces need root, iproute2 and iptables")
    tag = secrets.token_hex(3)
    ns, router = f"bt-pod-{tag}", f"bt-rtr-{tag}"
    etc = Path("/etc/netns") / ns
    listener = None
    try:
        for name in (ns, router):
            _run("ip", "netns", "add", name)
            _run("ip", "-n", name, "link", "set", "lo", "up")
        _run("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "r0",
             "netns", router)
        _run("ip", "-n", ns, "addr", "add", f"{POD}/24", "dev", "eth0")
        _run("ip", "-n", router, "addr", "add", f"{GW}/24", "dev", "r0")
        for addr in (API, PROXY, NCBI_AT):
            _run("ip", "-n", router, "addr", "add", f"{addr}/32", "dev", "lo")
        _run("ip", "-n", ns, "link", "set", "eth0", "up")
        _run("ip", "-n", router, "link", "set", "r0", "up")
        _run("ip", "-n", ns, "route", "add", "default", "via", GW)
        # `ip netns exec` mounts these over /etc in the pod: NCBI resolves to the router, and
        # no resolver is asked.
        etc.mkdir(parents=True)
        (etc / "hosts").write_text(f"127.0.0.1 localhost\n{NCBI_AT} {NCBI}\n")
        (etc / "resolv.conf").write_text("options timeout:1 attempts:1\n")
        listener = subprocess.Popen(["ip", "netns", "exec", router, sys.executable, "-c", LISTEN],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert listener.stdout.readline().strip() == "listening"
        yield ns, router
    finally:
        if listener is not None:
            listener.kill()
            listener.wait(timeout=10)
        shutil.rmtree(etc, ignore_errors=True)
        for name in (ns, router):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)


def drop_all_but_the_proxy(router: str) -> None:
    """The policy's shape: from the pod, the proxy's port on the proxy only; the rest dropped."""
    ipt = ["ip", "netns", "exec", router, "iptables"]
    _run(*ipt, "-A", "INPUT", "-i", "r0", "-p", "tcp", "-d", PROXY, "--dport", "3128", "-j", "ACCEPT")
    _run(*ipt, "-A", "INPUT", "-i", "r0", "-p", "tcp", "-j", "DROP")


def status_in(ns: str, policy: str | None = POLICY, proxy: str = f"http://{PROXY}:3128",
              code: str | None = None) -> dict:
    """The enforcement status (or what `code` prints as JSON) inside the pod namespace."""
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "HTTPS_PROXY": proxy,
           "BIOTOOL_RULES": str(REPO_RULES),
           "KUBERNETES_SERVICE_HOST": API, "KUBERNETES_SERVICE_PORT": "443"}
    if policy is not None:
        env[clusterpolicy.EGRESS_POLICY.name] = policy
    # The bound is the test's too: a probe that hung would end this run, not wait forever.
    what = ["-c", code] if code else ["-m", "biotool.system.enforcement"]
    proc = subprocess.run(["ip", "netns", "exec", ns, sys.executable, *what],
                          capture_output=True, text=True, timeout=30, env=env)
    assert proc.returncode in (0, 4), proc.stderr
    return json.loads(proc.stdout)


def results(st: dict) -> dict:
    return {(p["what"], p["address"], p["port"]): p["result"] for p in st["probes"]}


def test_the_declared_policy_with_only_the_proxy_let_through_is_enforced(pod):
    ns, router = pod
    drop_all_but_the_proxy(router)
    st = status_in(ns)
    assert st["enforced"] is True and st["mode"] == "cluster-policy", st
    assert st["policy"] == POLICY and POLICY in st["reason"]
    assert results(st) == {("default gateway", GW, clusterpolicy.KUBELET_PORT): "no answer",
                           ("Kubernetes API", API, 443): "no answer",
                           (f"allowlisted host {NCBI}", NCBI_AT, 443): "no answer"}
    assert f"the egress proxy http://{PROXY}:3128 ({PROXY}) answers" in st["reason"]
    assert st["default_routes"] == [f"ipv4 via {GW} dev eth0"]
    # doctor's egress check passes on it, saying the policy and the evidence.
    check = status_in(ns, code="import json; from biotool.system.doctor import check_network; "
                               "print(json.dumps(check_network()))")
    assert check["ok"] is True and check["detail"].startswith("enforced (cluster mode): "), check
    assert POLICY in check["detail"] and f"Kubernetes API {API}:443 (no answer)" in check["detail"]


def test_the_same_pod_without_the_drop_is_unenforced_whatever_the_variable_says(pod):
    ns, _ = pod
    st = status_in(ns)
    assert st["enforced"] is False and st["mode"] == "unenforced", st
    assert results(st) == {("default gateway", GW, clusterpolicy.KUBELET_PORT): "refused",
                           ("Kubernetes API", API, 443): "connected",
                           (f"allowlisted host {NCBI}", NCBI_AT, 443): "connected"}
    assert "does not hold" in st["reason"] and f"Kubernetes API {API}:443 (connected)" in st["reason"]
    # The node's own reset is an answer: the gateway alone open still fails the policy.
    assert f"default gateway {GW}:{clusterpolicy.KUBELET_PORT} (refused)" in st["reason"]


def test_a_proxy_that_does_not_answer_is_no_evidence(pod):
    ns, router = pod
    drop_all_but_the_proxy(router)
    st = status_in(ns, proxy="http://10.96.0.11:3128")
    assert st["enforced"] is False and "does not answer" in st["reason"], st


def test_without_the_variable_the_verdict_is_todays(pod):
    ns, router = pod
    drop_all_but_the_proxy(router)
    st = status_in(ns, policy=None)
    assert st["enforced"] is False and "probes" not in st and "policy" not in st, st
    assert st["reason"].startswith(f"the default gateway {GW} (dev eth0) answers")
    assert status_in(ns, policy="  ")["reason"] == st["reason"]   # blank is absent


def test_the_verdict_needs_a_probe_and_counts_only_known_blocks():
    proxy = [clusterpolicy.Outcome(clusterpolicy.Probe("egress proxy", PROXY, 3128), "connected")]
    api = clusterpolicy.Probe("Kubernetes API", API, 443)
    gw = clusterpolicy.Probe("default gateway", GW, 10250, reset_is_open=True)
    v = clusterpolicy.verdict
    assert "there is no default gateway" in v(POLICY, "p", proxy, [])["reason"]
    assert v(POLICY, "p", proxy, [clusterpolicy.Outcome(api, "refused")])["enforced"] is True
    assert v(POLICY, "p", proxy, [clusterpolicy.Outcome(gw, "refused")])["enforced"] is False
    odd = v(POLICY, "p", proxy, [clusterpolicy.Outcome(api, "error: Address not available")])
    assert odd["enforced"] is False and "neither connected nor was blocked" in odd["reason"]
    # The proxy's own addresses are never probed as "elsewhere"; blank or bad addresses dropped.
    probes = clusterpolicy.targets([("ipv4", GW, "eth0"), ("ipv4", "0.0.0.0", "eth1")],
                                   {"KUBERNETES_SERVICE_HOST": PROXY, "KUBERNETES_SERVICE_PORT": "443"},
                                   [(NCBI, ["not-an-ip", NCBI_AT], 443)], avoid={PROXY})
    assert [(p.what, p.address) for p in probes] == [("default gateway", GW),
                                                     (f"allowlisted host {NCBI}", NCBI_AT)]
    assert clusterpolicy.targets([], {"KUBERNETES_SERVICE_HOST": API,
                                      "KUBERNETES_SERVICE_PORT": "99999"}, [], set()) == []


def test_a_host_network_or_a_dead_gateway_is_never_read_as_a_policy(pod):
    # issue 38 item 6: the proxy answers and every direct probe gets nowhere, yet the pod's
    # links or its gateway show that the silence is not a policy's.
    ns, router = pod
    drop_all_but_the_proxy(router)
    assert status_in(ns)["enforced"] is True  # the pod as it should be
    _run("ip", "-n", ns, "link", "add", "nic0", "type", "bridge")  # a host's bridge
    st = status_in(ns)
    assert st["enforced"] is False and "nic0" in st["reason"] and "host" in st["reason"]
    _run("ip", "-n", ns, "link", "del", "nic0")
    # The default route via a gateway nobody answers for; the proxy alone on a route of its own.
    _run("ip", "-n", ns, "route", "replace", "default", "via", "10.79.0.99")
    _run("ip", "-n", ns, "route", "add", f"{PROXY}/32", "via", GW)
    st = status_in(ns)
    assert st["enforced"] is False and "10.79.0.99" in st["reason"], st
    assert "does not answer at the link layer" in st["reason"]
