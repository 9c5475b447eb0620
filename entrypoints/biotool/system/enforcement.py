"""Whether this container's network is enforced, read from /proc and /sys without sending a packet.

Enforced means the only ways out are none at all (`--network none`: only `lo`) or the egress
proxy on a network with no route beyond it (the compose stack's internal network). A default
route, or an interface other than `lo` with no proxy configured, means the container can
reach more than the proxy: plain `docker run` on the default bridge, `--network host`, or an
Apptainer run that shares the host's network.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

# Kernel route flags (linux/route.h): usable, and a reject ("unreachable") route.
RTF_UP = 0x0001
RTF_REJECT = 0x0200

HOW = ("run it enforced: `biotool-sandbox up` (the compose stack with the egress proxy), or "
       "`docker run --network none IMAGE ...` for no network at all")


def _hex_ipv4(field: str) -> str:
    return str(ipaddress.IPv4Address(bytes.fromhex(field)[::-1]))  # little-endian in /proc


def default_routes(proc_net: Path = Path("/proc/net")) -> list[str]:
    """Every usable default route (IPv4 and IPv6), e.g. 'ipv4 via 172.17.0.1 dev eth0'."""
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
            found.append(f"ipv4 via {_hex_ipv4(gateway)} dev {iface}")
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
            found.append(f"ipv6 via {ipaddress.IPv6Address(bytes.fromhex(gateway))} dev {iface}")
    return found


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
           env: dict | None = None) -> dict:
    """enforced, mode (offline, egress-proxy, unenforced), and the reason in one sentence."""
    routes, ifaces, proxy = default_routes(proc_net), interfaces(sys_net), proxy_setting(env)
    out = {"interfaces": ifaces, "default_routes": routes, "proxy": proxy}
    if routes:
        reason = (f"this container has a default route ({'; '.join(routes)}), so it can reach "
                  f"more than the egress proxy")
        return {"enforced": False, "mode": "unenforced", "reason": reason, **out}
    if not ifaces:
        return {"enforced": True, "mode": "offline", **out,
                "reason": "no network interface but lo: nothing outside is reachable"}
    if not proxy:
        reason = (f"interfaces {', '.join(ifaces)} exist and no egress proxy is configured "
                  f"(HTTPS_PROXY unset), so nothing mediates what they reach")
        return {"enforced": False, "mode": "unenforced", "reason": reason, **out}
    return {"enforced": True, "mode": "egress-proxy", **out,
            "reason": f"no route out; the only way out is the egress proxy {proxy}"}


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
