"""Enforcement read from /proc and netlink, on route tables in the kernel's own format as docker
sets them up (default bridge, compose's internal network, --network none), in real network
namespaces made here (a host-like device with a site proxy, a veth pair), and the GPU report."""

from pathlib import Path

import pytest

from biotool.system import enforcement, gpu

from biotool_testing.contract import error_line
from biotool_testing.ran import Ran

HEADER4 = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"
           "                                                       \n")
# docker's default bridge: a default route via 172.17.0.1, and the bridge's own subnet.
BRIDGE4 = HEADER4 + ("eth0\t00000000\t010011AC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                     "eth0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n")
# compose's internal network: the subnet only, no gateway.
INTERNAL4 = HEADER4 + "eth0\t000014AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
LINK_LOCAL6 = ("fe800000000000000000000000000000 40 00000000000000000000000000000000 00 "
               "00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n")
DEFAULT6 = ("00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
            "fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0\n")
# The kernel's "unreachable" default on lo (flags RTF_REJECT): no way out, must not count.
REJECT6 = ("00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
           "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n")


# compose's internal network on docker 20.10 with inhibit_ipv4: a default route all the same,
# to a gateway address that no one holds.
DEAD_GW4 = HEADER4 + ("eth0\t00000000\t01001AAC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                      "eth0\t00001AAC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n")
ARP_HEADER = "IP address       HW type     Flags       HW address            Mask     Device\n"
PROXY = {"HTTPS_PROXY": "http://egress:3128"}


def fake(tmp_path: Path, route: str, route6: str, ifaces: list[str], arp: str = "") -> Path:
    proc = tmp_path / "proc"
    proc.mkdir(parents=True)
    (proc / "route").write_text(route)
    (proc / "ipv6_route").write_text(route6)
    (proc / "arp").write_text(ARP_HEADER + arp)
    # /proc/net/dev as the kernel writes it: two header lines, then one line per interface.
    (proc / "dev").write_text("Inter-|   Receive\n face |bytes    packets\n" + "".join(
        f"{name:>6}: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" for name in ["lo", *ifaces]))
    return proc


def status(proc: Path, env: dict, proxy_at: str = "172.20.0.3", kinds: dict | None = None, **kw):
    """status() with this namespace's links and the proxy's address given, as netlink and DNS
    would answer inside a compose stack (eth0 a veth, egress on the subnet)."""
    return enforcement.status(proc, env, links=lambda: {"eth0": "veth"} if kinds is None else kinds,
                              resolve=lambda host: [proxy_at], **kw)


class Neighbour:
    """Stands in for the link: records each solicitation and writes the ARP entry it leads to."""

    def __init__(self, proc: Path, answers: bool):
        self.proc, self.answers, self.asked = proc, answers, []

    def __call__(self, ip: str) -> None:
        self.asked.append(ip)
        flags, mac = ("0x2", "02:42:ac:11:00:01") if self.answers else ("0x0", "00:00:00:00:00:00")
        arp = self.proc / "arp"
        kept = [line for line in arp.read_text().splitlines(True) if line.split()[0] != ip]
        arp.write_text("".join(kept) + f"{ip:<17}0x1         {flags:<12}{mac}     *        eth0\n")


def test_default_bridge_without_a_proxy_is_unenforced_without_asking(tmp_path):
    proc = fake(tmp_path, BRIDGE4, LINK_LOCAL6, ["eth0"])
    link = Neighbour(proc, answers=True)
    st = status(proc, {}, solicit=link)
    assert st["enforced"] is False and st["mode"] == "unenforced" and link.asked == []
    assert st["default_routes"] == ["ipv4 via 172.17.0.1 dev eth0"]
    assert "default route" in st["reason"] and "no egress proxy" in st["reason"]


def test_a_gateway_already_in_the_arp_cache_is_not_asked_again(tmp_path):
    arp = "172.17.0.1       0x1         0x2         02:42:ac:11:00:01     *        eth0\n"
    proc = fake(tmp_path, BRIDGE4, "", ["eth0"], arp=arp)
    link = Neighbour(proc, answers=True)
    st = status(proc, PROXY, solicit=link)
    assert st["enforced"] is False and "172.17.0.1" in st["reason"] and link.asked == []


@pytest.mark.parametrize("answers", [True, False])
def test_a_proxy_with_a_default_route_hinges_on_the_gateway(tmp_path, answers):
    proc = fake(tmp_path, DEAD_GW4, LINK_LOCAL6 + REJECT6, ["eth0"])
    link = Neighbour(proc, answers=answers)
    st = status(proc, PROXY, proxy_at="172.26.0.3", solicit=link, gave_up=lambda ip: False)
    assert link.asked == ["172.26.0.1"]
    assert st["enforced"] is (not answers)
    assert st["mode"] == ("unenforced" if answers else "egress-proxy")
    assert ("answers" if answers else "does not answer") in st["reason"]


def test_a_gateway_the_kernel_gave_up_on_is_not_asked_again(tmp_path):
    # The stack's second command: an incomplete ARP entry the kernel marked FAILED; no wait.
    arp = "172.26.0.1       0x1         0x0         00:00:00:00:00:00     *        eth0\n"
    proc = fake(tmp_path, DEAD_GW4, "", ["eth0"], arp=arp)
    link, asked = Neighbour(proc, answers=True), []
    st = status(proc, PROXY, proxy_at="172.26.0.3", solicit=link,
                            gave_up=lambda ip: asked.append(ip) or True)
    assert st["enforced"] is True and link.asked == [] and asked == ["172.26.0.1"]
    # A probe still in flight (not FAILED) is asked again and waited for.
    st = status(proc, PROXY, proxy_at="172.26.0.3", solicit=link, gave_up=lambda ip: False)
    assert st["enforced"] is False and link.asked == ["172.26.0.1"]


def test_ipv6_default_route_is_unenforced(tmp_path):
    proc = fake(tmp_path, INTERNAL4, LINK_LOCAL6 + DEFAULT6, ["eth0"])
    st = status(proc, PROXY, solicit=Neighbour(proc, answers=False))
    assert st["enforced"] is False
    assert st["default_routes"] == ["ipv6 via fd00::1 dev eth0"]


def test_internal_network_with_the_proxy_is_enforced(tmp_path):
    proc = fake(tmp_path, INTERNAL4, LINK_LOCAL6 + REJECT6, ["eth0"])
    st = status(proc, {"https_proxy": "http://egress:3128"})
    assert st["enforced"] is True and st["mode"] == "egress-proxy"
    assert st["default_routes"] == []


def test_an_interface_without_a_proxy_is_unenforced(tmp_path):
    proc = fake(tmp_path, INTERNAL4, LINK_LOCAL6, ["eth0"])
    st = status(proc, {})
    assert st["enforced"] is False and "HTTPS_PROXY unset" in st["reason"]


def test_network_none_is_offline_and_enforced(tmp_path):
    proc = fake(tmp_path, HEADER4, "", [])
    st = status(proc, {})
    assert st == {"enforced": True, "mode": "offline", "interfaces": [], "default_routes": [],
                  "proxy": None, "reason": st["reason"]}


def test_a_host_like_device_with_a_site_proxy_and_no_default_route_is_unenforced(tmp_path):
    # --network host (or Apptainer without --net) on an HPC node: no default route, a proxy.
    proc = fake(tmp_path, INTERNAL4, LINK_LOCAL6, ["eth0", "ib0"])
    st = status(proc, PROXY, kinds={"eth0": "", "ib0": ""})
    assert st["enforced"] is False and "eth0 (a device), ib0 (a device)" in st["reason"]
    assert "not a container's own veth" in st["reason"]
    st = status(proc, PROXY, kinds={"eth0": "veth", "ib0": "bridge"})
    assert st["enforced"] is False and "ib0 (bridge)" in st["reason"]


def test_a_route_beyond_the_subnet_or_a_proxy_off_it_is_unenforced(tmp_path):
    routed = INTERNAL4 + "eth0\t0000140A\t010014AC\t0003\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
    st = status(fake(tmp_path / "a", routed, LINK_LOCAL6, ["eth0"]), PROXY)
    assert st["enforced"] is False and "10.20.0.0/16 via 172.20.0.1 dev eth0" in st["reason"]
    global6 = ("fd000000000000000000000000000000 40 00000000000000000000000000000000 00 "
               "00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n")
    st = status(fake(tmp_path / "b", INTERNAL4, LINK_LOCAL6 + global6, ["eth0"]), PROXY)
    assert st["enforced"] is False and "fd00::/64 dev eth0" in st["reason"]
    for where in ("127.0.0.1", "10.1.2.3"):  # a proxy on loopback, or reached through a route
        st = status(fake(tmp_path / where, INTERNAL4, LINK_LOCAL6, ["eth0"]), PROXY, proxy_at=where)
        assert st["enforced"] is False and f"({where}) is not on this container's own subnet" \
            in st["reason"] and "172.20.0.0/16" in st["reason"]
    proc = fake(tmp_path / "c", INTERNAL4, LINK_LOCAL6, ["eth0"])
    st = enforcement.status(proc, PROXY, links=lambda: {"eth0": "veth"}, resolve=lambda h: [])
    assert st["enforced"] is False and "does not resolve" in st["reason"]
    st = enforcement.status(proc, PROXY, links=lambda: None, resolve=lambda h: ["172.20.0.3"])
    assert st["enforced"] is False and "netlink" in st["reason"]


# ---- under gVisor: no link kinds from netlink, no ARP table; a TCP connect asks the gateway

class Gateway:
    """Stands in for gateway_held: whether someone holds each gateway address, and who asked."""

    def __init__(self, held: bool):
        self.held, self.asked = held, []

    def __call__(self, ip: str) -> bool:
        self.asked.append(ip)
        return self.held


def gvisor_status(proc: Path, held: bool, kinds: dict, env: dict = PROXY,
                  proxy_at: str = "172.26.0.3") -> tuple[dict, Gateway]:
    gateway = Gateway(held)
    never = Neighbour(proc, answers=True)  # the ARP probe must not decide anything under gVisor
    st = status(proc, env, proxy_at=proxy_at, kinds=kinds, gvisor=lambda: True, held=gateway,
                solicit=never)
    assert never.asked == []
    return st, gateway


def test_under_gvisor_docker_internal_shape_is_enforced_on_a_silent_gateway(tmp_path):
    proc = fake(tmp_path, DEAD_GW4, LINK_LOCAL6, ["eth0"])
    st, gateway = gvisor_status(proc, held=False, kinds={"eth0": ""})
    assert gateway.asked == ["172.26.0.1"]
    assert st["enforced"] is True and st["mode"] == "egress-proxy", st
    assert "gVisor's only link" in st["reason"]


def test_under_gvisor_a_gateway_someone_holds_is_unenforced(tmp_path):
    # The default bridge under runsc with a proxy set: ARP would read as silence, TCP does not.
    proc = fake(tmp_path, DEAD_GW4, LINK_LOCAL6, ["eth0"])
    st, _ = gvisor_status(proc, held=True, kinds={"eth0": ""})
    assert st["enforced"] is False and "answers" in st["reason"]


def test_under_gvisor_two_links_or_no_default_route_stay_unenforced(tmp_path):
    proc = fake(tmp_path, DEAD_GW4, LINK_LOCAL6, ["eth0", "docker0"])
    st, _ = gvisor_status(proc, held=False, kinds={"eth0": "", "docker0": ""})
    assert st["enforced"] is False and "only one interface" in st["reason"], st
    # No default route: nothing shows a container's internal network (a host's, perhaps).
    proc = fake(tmp_path / "b", INTERNAL4, LINK_LOCAL6, ["eth0"])
    st, gateway = gvisor_status(proc, held=False, kinds={"eth0": ""})
    assert st["enforced"] is False and gateway.asked == [], st


# A compose internal network Docker gave a /20 (192.168.208.0/20, from its second address
# pool), as runsc writes /proc/net/route (captured): the mask as (1 << 20) - 1, and a host route
# for the container's own address. runc writes the same subnet's mask as 00F0FFFF.
GVISOR_20 = ("Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
             "eth0\t00000000\t01D0A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
             "eth0\t00D0A8C0\t00000000\t0001\t0\t0\t0\t000FFFFF\t0\t0\t0\n"
             "eth0\t02D0A8C0\t00000000\t0001\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n")
RUNC_20 = HEADER4 + ("eth0\t00000000\t01D0A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                     "eth0\t00D0A8C0\t00000000\t0001\t0\t0\t0\t00F0FFFF\t0\t0\t0\n")


def test_a_20_bit_subnet_reads_the_same_from_gvisor_and_linux(tmp_path):
    # gVisor's form of a mask off a byte boundary once crashed doctor (NetmaskValueError).
    for name, route in (("runsc", GVISOR_20), ("runc", RUNC_20)):
        connected, routed = enforcement.routes4(fake(tmp_path / name, route, LINK_LOCAL6, ["eth0"]))
        assert routed == [] and "192.168.208.0/20" in map(str, connected), (name, connected)
    proc = fake(tmp_path / "gv", GVISOR_20, LINK_LOCAL6, ["eth0"])
    st, _ = gvisor_status(proc, held=False, kinds={"eth0": ""}, proxy_at="192.168.210.7")
    assert st["enforced"] is True and "192.168.208.0/20" in st["reason"], st


def test_a_route_whose_mask_is_no_mask_leads_out(tmp_path):
    bad = HEADER4 + "eth0\t000014AC\t00000000\t0001\t0\t0\t0\t00F0FF0F\t0\t0\t0\n"
    connected, routed = enforcement.routes4(fake(tmp_path, bad, LINK_LOCAL6, ["eth0"]))
    assert connected == [] and routed == ["172.20.0.0 mask 00F0FF0F (unreadable) dev eth0"]


def test_link_kinds_come_from_this_namespaces_netlink():
    kinds = enforcement.link_kinds()
    assert kinds is not None and kinds["lo"] == "" and set(kinds) >= set(enforcement.interfaces())
    for name in enforcement.interfaces():
        if name.startswith("veth"):
            assert kinds[name] == "veth"
        if name.startswith("docker") or name.startswith("br-"):
            assert kinds[name] == "bridge"


def test_warning_is_one_line_and_says_how(tmp_path):
    proc = fake(tmp_path, BRIDGE4, "", ["eth0"])
    line = enforcement.warning_line(status(proc, {}))
    assert "\n" not in line and "--network none" in line and "biotool-sandbox up" in line


@pytest.mark.parametrize("value,expected", [("1", True), ("yes", True), ("", False), ("0", False)])
def test_require_enforced_setting(value, expected):
    assert enforcement.required({"BIOTOOL_REQUIRE_ENFORCED": value}) is expected


def test_cli_refuses_with_exit_3_when_required_and_unenforced(monkeypatch, capsys):
    from biotool import cli

    monkeypatch.setenv("BIOTOOL_REQUIRE_ENFORCED", "1")
    monkeypatch.setattr(enforcement, "status",
                        lambda: {"enforced": False, "reason": "a default route exists"})
    with pytest.raises(SystemExit) as exc:
        cli._refuse_where_required(["list"])
    assert exc.value.code == 3
    said = capsys.readouterr()
    assert error_line(Ran(exc.value.code, said.out, said.err), code=3,
                      alone=True).startswith("biotool: error: refused:")
    cli._refuse_where_required(["--help"])  # help is not a command: it still prints
    monkeypatch.setattr(enforcement, "status", lambda: {"enforced": True, "reason": "only lo"})
    cli._refuse_where_required(["list"])


def test_gpu_report_without_a_gpu_names_the_driver_torch_needs():
    r = gpu.report(cuda="13.0", driver=None, device_nodes=[])
    assert r["visible"] is False and r["ok"] is True
    assert r["detail"].startswith("no GPU visible") and ">= 580)" in r["detail"]
    assert gpu.report(cuda=None, driver=None, device_nodes=[])["detail"] == \
        "no GPU visible: torch runs on the CPU"


@pytest.mark.parametrize("cuda,driver,ok", [("13.0", "580.95.05", True), ("13.0", "570.172.08", False),
                                            ("12.6", "535.104.05", True), ("12.8", "470.82.01", False)])
def test_gpu_driver_against_torch_cuda_line(cuda, driver, ok):
    r = gpu.report(cuda=cuda, driver=driver, device_nodes=["/dev/nvidia0"])
    assert r["visible"] is True and r["ok"] is ok and driver in r["detail"]


def test_gpu_driver_version_read_from_proc(tmp_path):
    f = tmp_path / "version"
    f.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  "
                 "Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Sep 23 09:51:12 UTC 2025\n"
                 "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
    assert gpu.driver_version(f) == "580.95.05"
    f.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n")
    assert gpu.driver_version(f) == "535.104.05"


def test_torch_cuda_read_from_torch_version_file_matches_torch():
    value = gpu.torch_cuda()
    import torch

    assert value == torch.version.cuda


# ---- real network namespaces (root and iproute2): what status() sees in each

def _ip(*args: str) -> None:
    import subprocess

    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture()
def netns():
    import os
    import secrets
    import shutil

    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("network namespaces need root and iproute2")
    made = []

    def make() -> str:
        name = f"bt-enf-{secrets.token_hex(3)}"
        _ip("netns", "add", name)
        made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")
        return name

    yield make
    for name in made:
        _ip("netns", "del", name)


def _status_in(ns: str, proxy: str) -> dict:
    import json
    import subprocess
    import sys

    src = str(Path(enforcement.__file__).resolve().parents[2])
    proc = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m",
                           "biotool.system.enforcement"], capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": src, "HTTPS_PROXY": proxy, "PATH": "/usr/bin:/bin"})
    return json.loads(proc.stdout)


def test_in_a_real_namespace_a_host_like_device_and_a_site_proxy_is_unenforced(netns):
    # What --network host shows on a node with no default route and a site proxy: the host's
    # own devices (a bridge here; a NIC reads as "a device").
    ns = netns()
    _ip("-n", ns, "link", "add", "br0", "type", "bridge")
    _ip("-n", ns, "addr", "add", "10.77.0.2/24", "dev", "br0")
    _ip("-n", ns, "link", "set", "br0", "up")
    st = _status_in(ns, "http://10.77.0.1:3128")
    assert st["enforced"] is False and st["default_routes"] == [] and st["interfaces"] == ["br0"]
    assert "br0 (bridge) is not a container's own veth" in st["reason"]


def test_in_a_real_namespace_a_veth_to_the_proxy_alone_is_enforced_and_a_route_is_not(netns):
    inner, outer = netns(), netns()
    _ip("-n", inner, "link", "add", "eth0", "type", "veth", "peer", "name", "proxy0", "netns", outer)
    _ip("-n", inner, "addr", "add", "10.78.0.2/24", "dev", "eth0")
    _ip("-n", outer, "addr", "add", "10.78.0.1/24", "dev", "proxy0")
    _ip("-n", inner, "link", "set", "eth0", "up")
    _ip("-n", outer, "link", "set", "proxy0", "up")
    st = _status_in(inner, "http://10.78.0.1:3128")
    assert st["enforced"] is True and st["mode"] == "egress-proxy", st
    assert st["links"] == {"eth0": "veth"} and "10.78.0.0/24" in st["reason"]
    assert _status_in(inner, "http://127.0.0.1:3128")["enforced"] is False  # not the veth's peer
    _ip("-n", inner, "route", "add", "192.168.50.0/24", "via", "10.78.0.1")
    st = _status_in(inner, "http://10.78.0.1:3128")
    assert st["enforced"] is False and "192.168.50.0/24 via 10.78.0.1 dev eth0" in st["reason"]


def test_in_a_real_namespace_a_gateway_no_one_holds_is_silent_and_a_held_one_is_not(netns):
    # The kernel's own answers to the TCP probe: EHOSTUNREACH after ARP gives up, a reset from
    # an address someone holds.
    import subprocess
    import sys

    inner, outer = netns(), netns()
    _ip("-n", inner, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0", "netns", outer)
    _ip("-n", inner, "addr", "add", "10.79.0.2/24", "dev", "eth0")
    _ip("-n", outer, "addr", "add", "10.79.0.1/24", "dev", "peer0")
    for ns, dev in ((inner, "eth0"), (outer, "peer0")):
        _ip("-n", ns, "link", "set", dev, "up")
    src = str(Path(enforcement.__file__).resolve().parents[2])
    code = ("import sys; from biotool.system.enforcement import gateway_held; "
            "print(gateway_held('10.79.0.1'), gateway_held('10.79.0.77'))")
    ran = subprocess.run(["ip", "netns", "exec", inner, sys.executable, "-c", code],
                         capture_output=True, text=True, timeout=60, env={"PYTHONPATH": src})
    assert ran.stdout.split() == ["True", "False"], ran


def test_unshare_rn_without_a_sysfs_remount_is_offline_and_enforced():
    # Apptainer's --net --network none may do just this: a new namespace, the host's /sys.
    import json
    import shutil
    import subprocess
    import sys

    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is not installed")
    src = str(Path(enforcement.__file__).resolve().parents[2])
    proc = subprocess.run(["unshare", "-rn", sys.executable, "-m", "biotool.system.enforcement"],
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})
    if proc.returncode not in (0, 4) or not proc.stdout.strip():
        pytest.skip(f"unprivileged namespaces are not available here: {proc.stderr.strip()[:200]}")
    st = json.loads(proc.stdout)
    assert st["enforced"] is True and st["mode"] == "offline" and st["interfaces"] == [], st
    assert Path("/sys/class/net").exists() and len(list(Path("/sys/class/net").iterdir())) > 1
