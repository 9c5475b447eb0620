"""Whether this container's network is enforced, read from /proc and /sys.

Enforced means the only ways out are none at all (`--network none`: only `lo`) or the egress
proxy on a network with no way beyond it (the compose stack's internal network, whose default
route points at a gateway no one holds). A default route with no proxy, a default gateway that
answers, or an interface other than `lo` with no proxy means the container can reach more than
the proxy: plain `docker run` on the default bridge, `--network host`, or an Apptainer run that
shares the host's network. Nothing is sent off the host: at most one empty datagram to the
first hop when a proxy is configured and the ARP cache does not already know the gateway.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import time
from pathlib import Path

# Kernel route flags (linux/route.h): usable, and a reject ("unreachable") route.
RTF_UP = 0x0001
RTF_REJECT = 0x0200
# ARP entry flag (linux/if_arp.h): the neighbour answered.
ATF_COM = 0x02
# rtnetlink (linux/rtnetlink.h, linux/neighbour.h): the neighbour table, its FAILED state.
RTM_NEWNEIGH, RTM_GETNEIGH, NLMSG_DONE, NDA_DST, NUD_FAILED = 28, 30, 3, 1, 0x20

HOW = ("run it enforced: `biotool-sandbox up` (the compose stack with the egress proxy), or "
       "`docker run --network none IMAGE ...` for no network at all")


def _hex_ipv4(field: str) -> str:
    return str(ipaddress.IPv4Address(bytes.fromhex(field)[::-1]))  # little-endian in /proc


def default_routes(proc_net: Path = Path("/proc/net")) -> list[tuple[str, str, str]]:
    """Every usable default route as (family, gateway, device), IPv4 and IPv6."""
    found = []
    try:
        lines = (proc_net / "route").read_text().splitlines()[1:]
    except OSError:
        lines = []
    for line in lines:
        f = line.split()
        if len(f) < 8:
            continue
        iface, dest, gateway, flags, mask = f[0], f[1], f[2], int(f[3], 16), f[7]
        if dest == "00000000" and mask == "00000000" and flags & RTF_UP \
                and not flags & RTF_REJECT and iface != "lo":
            found.append(("ipv4", _hex_ipv4(gateway), iface))
    try:
        lines6 = (proc_net / "ipv6_route").read_text().splitlines()
    except OSError:
        lines6 = []
    for line in lines6:
        f = line.split()
        if len(f) < 10:
            continue
        dest, plen, gateway, flags, iface = f[0], f[1], f[4], int(f[8], 16), f[9]
        if set(dest) == {"0"} and plen == "00" and flags & RTF_UP \
                and not flags & RTF_REJECT and iface != "lo":
            found.append(("ipv6", str(ipaddress.IPv6Address(bytes.fromhex(gateway))), iface))
    return found


def arp_state(ip: str, proc_net: Path = Path("/proc/net")) -> bool | None:
    """True: the neighbour answered (a complete ARP entry); False: asked, no answer; None: not asked."""
    try:
        lines = (proc_net / "arp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        f = line.split()
        if len(f) >= 3 and f[0] == ip:
            return bool(int(f[2], 16) & ATF_COM)
    return None


def _netlink_failed(ip: str) -> bool:
    """Whether the kernel's neighbour table marks ip FAILED (asked, never answered), read over
    rtnetlink (unprivileged); /proc/net/arp cannot tell FAILED from a probe still in flight."""
    import struct

    want = socket.inet_aton(ip)
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
            nl.settimeout(1.0)
            # nlmsghdr + ndmsg: RTM_GETNEIGH, NLM_F_REQUEST | NLM_F_DUMP, family AF_INET
            nl.send(struct.pack("=LHHLL", 28, RTM_GETNEIGH, 0x301, 1, 0)
                    + struct.pack("=BBHiHBB", socket.AF_INET, 0, 0, 0, 0, 0, 0))
            while True:
                data = nl.recv(65536)
                off = 0
                while off + 16 <= len(data):
                    length, kind = struct.unpack_from("=LH", data, off)
                    if kind == NLMSG_DONE or length < 16:
                        return False
                    if kind == RTM_NEWNEIGH:
                        state = struct.unpack_from("=H", data, off + 24)[0]
                        attr = off + 28
                        while attr + 4 <= off + length:
                            alen, atype = struct.unpack_from("=HH", data, attr)
                            if alen < 4:
                                break
                            if atype == NDA_DST and data[attr + 4:attr + alen] == want:
                                return bool(state & NUD_FAILED)
                            attr += (alen + 3) & ~3
                    off += (length + 3) & ~3
    except OSError:
        return False


def _solicit(ip: str) -> None:
    """One empty datagram to the gateway's discard port: the kernel ARPs for it on the link."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.sendto(b"", (ip, 9))
        except OSError:
            pass


def gateway_answers(ip: str, proc_net: Path = Path("/proc/net"), solicit=_solicit,
                    wait: float = 1.0, gave_up=_netlink_failed) -> bool:
    """Whether the default gateway is there. Docker's internal networks still install a default
    route, to a gateway address no one holds (compose.yaml's inhibit_ipv4): only the first hop
    is asked, and only when the kernel does not already know (answered, or gave up asking)."""
    known = arp_state(ip, proc_net)
    if known:
        return True
    if known is False and gave_up(ip):
        return False
    solicit(ip)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if arp_state(ip, proc_net):
            return True
        time.sleep(0.05)
    return False


def interfaces(sys_net: Path = Path("/sys/class/net")) -> list[str]:
    """Network interfaces other than lo."""
    try:
        return sorted(p.name for p in sys_net.iterdir() if p.name != "lo")
    except OSError:
        return []


def proxy_setting(env: dict | None = None) -> str | None:
    env = os.environ if env is None else env
    return env.get("HTTPS_PROXY") or env.get("https_proxy") or None


def status(proc_net: Path = Path("/proc/net"), sys_net: Path = Path("/sys/class/net"),
           env: dict | None = None, solicit=_solicit, gave_up=_netlink_failed) -> dict:
    """enforced, mode (offline, egress-proxy, unenforced), and the reason in one sentence."""
    routes, ifaces, proxy = default_routes(proc_net), interfaces(sys_net), proxy_setting(env)
    shown = [f"{fam} via {gw} dev {dev}" for fam, gw, dev in routes]
    out = {"interfaces": ifaces, "default_routes": shown, "proxy": proxy}

    def unenforced(reason: str) -> dict:
        return {"enforced": False, "mode": "unenforced", "reason": reason, **out}

    if routes and not proxy:
        return unenforced(f"this container has a default route ({'; '.join(shown)}) and no egress "
                          f"proxy, so it can reach anything the host can")
    for fam, gw, dev in routes:
        # An IPv6 or device-only default route cannot be checked from /proc: it counts as open.
        if fam == "ipv6" or gw == "0.0.0.0" or gateway_answers(gw, proc_net, solicit, gave_up=gave_up):
            return unenforced(f"the default gateway {gw} (dev {dev}) answers, so this container "
                              f"can reach more than the egress proxy {proxy}")
    if not ifaces:
        return {"enforced": True, "mode": "offline", **out,
                "reason": "no network interface but lo: nothing outside is reachable"}
    if not proxy:
        return unenforced(f"interfaces {', '.join(ifaces)} exist and no egress proxy is configured "
                          f"(HTTPS_PROXY unset), so nothing mediates what they reach")
    dead = f" (the default route's gateway {routes[0][1]} does not answer)" if routes else ""
    return {"enforced": True, "mode": "egress-proxy", **out,
            "reason": f"no way out{dead}; the only way out is the egress proxy {proxy}"}


def required(env: dict | None = None) -> bool:
    """BIOTOOL_REQUIRE_ENFORCED=1 (set by a grader): refuse to run when unenforced."""
    env = os.environ if env is None else env
    return env.get("BIOTOOL_REQUIRE_ENFORCED", "").strip().lower() in {"1", "true", "yes"}


def warning_line(st: dict) -> str:
    return f"biotool: warning: network not enforced: {st['reason']}; {HOW}"


def main(argv: list[str]) -> int:
    """`python -m biotool.system.enforcement [--warn]`: the status as JSON, or the warning."""
    st = status()
    if argv[:1] == ["--warn"]:
        if not st["enforced"]:
            sys.stderr.write(warning_line(st) + "\n")
        return 0
    import json

    sys.stdout.write(json.dumps(st) + "\n")
    return 0 if st["enforced"] else 4


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
