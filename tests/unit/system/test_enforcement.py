"""Enforcement read from /proc and /sys, on route tables in the kernel's own format as docker
sets them up (default bridge, compose's internal network, --network none), and the GPU report."""

from pathlib import Path

import pytest

from biotool.system import enforcement, gpu

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


def fake(tmp_path: Path, route: str, route6: str, ifaces: list[str], arp: str = "") -> tuple[Path, Path]:
    proc, sysnet = tmp_path / "proc", tmp_path / "net"
    proc.mkdir()
    sysnet.mkdir()
    (proc / "route").write_text(route)
    (proc / "ipv6_route").write_text(route6)
    (proc / "arp").write_text(ARP_HEADER + arp)
    for name in ["lo", *ifaces]:
        (sysnet / name).mkdir()
    return proc, sysnet


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
    proc, sysnet = fake(tmp_path, BRIDGE4, LINK_LOCAL6, ["eth0"])
    link = Neighbour(proc, answers=True)
    st = enforcement.status(proc, sysnet, {}, solicit=link)
    assert st["enforced"] is False and st["mode"] == "unenforced" and link.asked == []
    assert st["default_routes"] == ["ipv4 via 172.17.0.1 dev eth0"]
    assert "default route" in st["reason"] and "no egress proxy" in st["reason"]


def test_a_gateway_already_in_the_arp_cache_is_not_asked_again(tmp_path):
    arp = "172.17.0.1       0x1         0x2         02:42:ac:11:00:01     *        eth0\n"
    proc, sysnet = fake(tmp_path, BRIDGE4, "", ["eth0"], arp=arp)
    link = Neighbour(proc, answers=True)
    st = enforcement.status(proc, sysnet, PROXY, solicit=link)
    assert st["enforced"] is False and "172.17.0.1" in st["reason"] and link.asked == []


@pytest.mark.parametrize("answers", [True, False])
def test_a_proxy_with_a_default_route_hinges_on_the_gateway(tmp_path, answers):
    proc, sysnet = fake(tmp_path, DEAD_GW4, LINK_LOCAL6 + REJECT6, ["eth0"])
    link = Neighbour(proc, answers=answers)
    st = enforcement.status(proc, sysnet, PROXY, solicit=link, gave_up=lambda ip: False)
    assert link.asked == ["172.26.0.1"]
    assert st["enforced"] is (not answers)
    assert st["mode"] == ("unenforced" if answers else "egress-proxy")
    assert ("answers" if answers else "does not answer") in st["reason"]


def test_a_gateway_the_kernel_gave_up_on_is_not_asked_again(tmp_path):
    # The stack's second command: an incomplete ARP entry the kernel marked FAILED; no wait.
    arp = "172.26.0.1       0x1         0x0         00:00:00:00:00:00     *        eth0\n"
    proc, sysnet = fake(tmp_path, DEAD_GW4, "", ["eth0"], arp=arp)
    link, asked = Neighbour(proc, answers=True), []
    st = enforcement.status(proc, sysnet, PROXY, solicit=link,
                            gave_up=lambda ip: asked.append(ip) or True)
    assert st["enforced"] is True and link.asked == [] and asked == ["172.26.0.1"]
    # A probe still in flight (not FAILED) is asked again and waited for.
    st = enforcement.status(proc, sysnet, PROXY, solicit=link, gave_up=lambda ip: False)
    assert st["enforced"] is False and link.asked == ["172.26.0.1"]


def test_ipv6_default_route_is_unenforced(tmp_path):
    proc, sysnet = fake(tmp_path, INTERNAL4, LINK_LOCAL6 + DEFAULT6, ["eth0"])
    st = enforcement.status(proc, sysnet, PROXY, solicit=Neighbour(proc, answers=False))
    assert st["enforced"] is False
    assert st["default_routes"] == ["ipv6 via fd00::1 dev eth0"]


def test_internal_network_with_the_proxy_is_enforced(tmp_path):
    proc, sysnet = fake(tmp_path, INTERNAL4, LINK_LOCAL6 + REJECT6, ["eth0"])
    st = enforcement.status(proc, sysnet, {"https_proxy": "http://egress:3128"})
    assert st["enforced"] is True and st["mode"] == "egress-proxy"
    assert st["default_routes"] == []


def test_an_interface_without_a_proxy_is_unenforced(tmp_path):
    proc, sysnet = fake(tmp_path, INTERNAL4, LINK_LOCAL6, ["eth0"])
    st = enforcement.status(proc, sysnet, {})
    assert st["enforced"] is False and "HTTPS_PROXY unset" in st["reason"]


def test_network_none_is_offline_and_enforced(tmp_path):
    proc, sysnet = fake(tmp_path, HEADER4, "", [])
    st = enforcement.status(proc, sysnet, {})
    assert st == {"enforced": True, "mode": "offline", "interfaces": [], "default_routes": [],
                  "proxy": None, "reason": st["reason"]}


def test_warning_is_one_line_and_says_how(tmp_path):
    proc, sysnet = fake(tmp_path, BRIDGE4, "", ["eth0"])
    line = enforcement.warning_line(enforcement.status(proc, sysnet, {}))
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
        cli._refuse_unless_enforced(["list"])
    assert exc.value.code == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("biotool: error: refused:")
    cli._refuse_unless_enforced(["--help"])  # help is not a command: it still prints
    monkeypatch.setattr(enforcement, "status", lambda: {"enforced": True, "reason": "only lo"})
    cli._refuse_unless_enforced(["list"])


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
