"""Whether this container's network is enforced, read from /proc and the kernel's netlink.

Enforced means the only ways out are none at all (`--network none`: only `lo`) or the egress
proxy on a network with no way beyond it, and only on evidence of that: every interface
but `lo` is a veth (the end of a container's own namespace pair, never a host's NIC or
bridge), no route leads anywhere but the container's own subnets (a default route only to a
gateway no one holds, as on the compose stack's internal network), and the proxy's address
lies on one of those subnets. Anything else reads as unenforced: plain `docker run` on the
default bridge, `--network host` or an Apptainer run that shares the host's network (even with
no default route and a site proxy set: the host's other subnets and its loopback services are
then reachable). Interfaces come from /proc/net/dev and netlink, which belong to this network
namespace, never from /sys, which may be the host's. Nothing is sent off the host: at most one
empty datagram to the first hop when a proxy is configured and the ARP cache does not already
know the gateway. Policy-routing tables other than main are not read.

Under gVisor (runtime.py tells it from the kernel's own evidence) the socket calls reach the
host's kernel inside Docker's namespace (runsc --network=host), but gVisor's netlink names links
without their kind and its /proc/net/arp is empty. There a TCP connect to the default gateway
stands in for the ARP probe (EHOSTUNREACH: the kernel asked the link and no one holds the
address), and the veth evidence becomes Docker's internal-network shape: exactly one interface
and a default route to a gateway no one holds. Cluster mode stays closed under gVisor.

Cluster mode (clusterpolicy.py): where the operator declares the network policy that confines
the pod (BIOTOOL_EGRESS_POLICY, set by k8s/values.yaml), the verdict is that policy tried
from here instead: the proxy answers, direct connections elsewhere get nowhere.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import time
from pathlib import Path

from biotool.settings import REQUIRE_ENFORCED
from biotool.system import clusterpolicy

# Kernel route flags (linux/route.h): usable, via a gateway, and a reject ("unreachable") route.
RTF_UP = 0x0001
RTF_GATEWAY = 0x0002
RTF_REJECT = 0x0200
# ARP entry flag (linux/if_arp.h): the neighbour answered.
ATF_COM = 0x02
# rtnetlink (linux/rtnetlink.h, linux/neighbour.h): the neighbour table, its FAILED state.
RTM_NEWNEIGH, RTM_GETNEIGH, NLMSG_DONE, NDA_DST, NUD_FAILED = 28, 30, 3, 1, 0x20
# Links (linux/if_link.h): the dump request and reply, the name and the nested kind ("veth").
RTM_NEWLINK, RTM_GETLINK, IFLA_IFNAME, IFLA_LINKINFO, IFLA_INFO_KIND = 16, 18, 3, 18, 1

HOW = ("run it enforced: `biotool-sandbox up` (the compose stack with the egress proxy), or "
       "`docker run --network none IMAGE ...` or `apptainer exec --net --network none SIF ...` "
       "for no network at all")


def _hex_ipv4(field: str) -> str:
    return str(ipaddress.IPv4Address(bytes.fromhex(field)[::-1]))  # little-endian in /proc


def _mask_bits(field: str) -> int | None:
    """The prefix length of /proc/net/route's Mask field; None when it is no mask. gVisor
    writes (1 << prefix) - 1 (a /20 reads 000FFFFF where Linux writes 00F0FFFF), the same
    bytes as Linux's only on byte boundaries, so both forms are read."""
    try:
        return ipaddress.IPv4Network(f"0.0.0.0/{_hex_ipv4(field)}").prefixlen
    except ValueError:
        value = int(field, 16) if len(field) == 8 and all(
            c in "0123456789abcdefABCDEF" for c in field) else -1
        return value.bit_length() if value > 0 and value & (value + 1) == 0 else None


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


def _netlink_dump(kind: int, body: bytes) -> list[bytes]:
    """The payloads (after the netlink header) of one rtnetlink dump, unprivileged."""
    import struct

    out = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
        nl.settimeout(1.0)
        nl.send(struct.pack("=LHHLL", 16 + len(body), kind, 0x301, 1, 0) + body)  # REQUEST|DUMP
        while True:
            data = nl.recv(65536)
            off = 0
            while off + 16 <= len(data):
                length, mtype = struct.unpack_from("=LH", data, off)
                if mtype == NLMSG_DONE or length < 16:
                    return out
                out.append(data[off + 16:off + length])
                off += (length + 3) & ~3


def _attrs(data: bytes, start: int) -> dict[int, bytes]:
    import struct

    found, off = {}, start
    while off + 4 <= len(data):
        alen, atype = struct.unpack_from("=HH", data, off)
        if alen < 4:
            break
        found.setdefault(atype & 0x3FFF, data[off + 4:off + alen])  # without the NESTED flag
        off += (alen + 3) & ~3
    return found


def _netlink_failed(ip: str) -> bool:
    """Whether the kernel's neighbour table marks ip FAILED (asked, never answered), read over
    rtnetlink (unprivileged); /proc/net/arp cannot tell FAILED from a probe still in flight."""
    import struct

    want = socket.inet_aton(ip)
    try:  # ndmsg: family AF_INET
        for msg in _netlink_dump(RTM_GETNEIGH, struct.pack("=BBHiHBB", socket.AF_INET, 0, 0, 0, 0, 0, 0)):
            if len(msg) >= 12 and _attrs(msg, 12).get(NDA_DST) == want:
                return bool(struct.unpack_from("=H", msg, 8)[0] & NUD_FAILED)
    except OSError:
        return False
    return False


def link_kinds() -> dict[str, str] | None:
    """{interface: kind} of this network namespace ("veth", "bridge", "" for a plain device
    such as a NIC), from rtnetlink; None when netlink cannot be read."""
    import struct

    kinds = {}
    try:  # ifinfomsg: family AF_UNSPEC
        msgs = _netlink_dump(RTM_GETLINK, struct.pack("=BBHiII", 0, 0, 0, 0, 0, 0))
    except OSError:
        return None
    for msg in msgs:
        if len(msg) < 16:
            continue
        attrs = _attrs(msg, 16)
        name = attrs.get(IFLA_IFNAME, b"").split(b"\0")[0].decode("utf-8", "replace")
        info = _attrs(attrs[IFLA_LINKINFO], 0) if IFLA_LINKINFO in attrs else {}
        kinds[name] = info.get(IFLA_INFO_KIND, b"").split(b"\0")[0].decode("ascii", "replace")
    return kinds


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


def gateway_held(ip: str, wait: float = 5.0) -> bool:
    """Whether someone holds the gateway's address, asked with one TCP connect (under gVisor,
    where the ARP table cannot be read). Only EHOSTUNREACH, the kernel's own word that the link
    never answered (about 3 s of ARP probes), counts as silence; a refusal, a connection or a
    timeout counts as held, so what cannot be shown stays open."""
    import errno

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(wait)
        try:
            s.connect((ip, 9))
        except OSError as exc:
            return exc.errno != errno.EHOSTUNREACH
    return True


def _under_gvisor() -> bool:
    from biotool.system import runtime

    return runtime.status()["runtime"] == runtime.GVISOR


def interfaces(proc_net: Path = Path("/proc/net")) -> list[str]:
    """Network interfaces other than lo, of this namespace (/proc/net/dev; /sys may be the host's)."""
    try:
        lines = (proc_net / "dev").read_text().splitlines()[2:]
    except OSError:
        return []
    return sorted({n for n in (line.split(":", 1)[0].strip() for line in lines if ":" in line)
                   if n and n != "lo"})


def routes4(proc_net: Path = Path("/proc/net")) -> tuple[list[ipaddress.IPv4Network], list[str]]:
    """(connected subnets, routes via a gateway other than the default) of the main table."""
    connected, routed = [], []
    try:
        lines = (proc_net / "route").read_text().splitlines()[1:]
    except OSError:
        return [], []
    for line in lines:
        f = line.split()
        if len(f) < 8 or f[0] == "lo" or not int(f[3], 16) & RTF_UP or int(f[3], 16) & RTF_REJECT:
            continue
        bits = _mask_bits(f[7])
        if bits is None:  # no mask either way: what it reaches is unknown, so it leads out
            routed.append(f"{_hex_ipv4(f[1])} mask {f[7]} (unreadable) dev {f[0]}")
            continue
        net = ipaddress.IPv4Network(f"{_hex_ipv4(f[1])}/{bits}", strict=False)
        if net.prefixlen == 0:
            continue  # the default route: judged by whether its gateway answers
        if int(f[3], 16) & RTF_GATEWAY:
            routed.append(f"{net} via {_hex_ipv4(f[2])} dev {f[0]}")
        else:
            connected.append(net)
    return connected, routed


def routes6(proc_net: Path = Path("/proc/net")) -> list[str]:
    """IPv6 routes off lo beyond link-local and multicast, other than a default (judged apart)."""
    found = []
    try:
        lines = (proc_net / "ipv6_route").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        f = line.split()
        if len(f) < 10 or f[9] == "lo" or int(f[8], 16) & RTF_REJECT or not int(f[8], 16) & RTF_UP:
            continue
        net = ipaddress.IPv6Network(f"{ipaddress.IPv6Address(bytes.fromhex(f[0]))}/{int(f[1], 16)}",
                                    strict=False)
        if net.prefixlen == 0 or net.is_link_local or net.is_multicast:
            continue
        found.append(f"{net} dev {f[9]}")
    return found


def _resolve(host: str, seconds: float = 3.0) -> list[str]:
    """The proxy host's addresses, bounded in time (a hung resolver is no evidence)."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        infos = pool.submit(socket.getaddrinfo, host, None, type=socket.SOCK_STREAM).result(seconds)
        return sorted({i[4][0] for i in infos})
    except (OSError, concurrent.futures.TimeoutError, UnicodeError):
        return []
    finally:
        pool.shutdown(wait=False)


def proxy_setting(env: dict | None = None) -> str | None:
    env = os.environ if env is None else env
    return env.get("HTTPS_PROXY") or env.get("https_proxy") or None


def status(proc_net: Path = Path("/proc/net"), env: dict | None = None, solicit=_solicit,
           gave_up=_netlink_failed, links=link_kinds, resolve=_resolve, gvisor=_under_gvisor,
           held=gateway_held) -> dict:
    """enforced, mode (offline, egress-proxy, cluster-policy, unenforced), and the reason in one
    sentence."""
    env = os.environ if env is None else env
    routes, ifaces, proxy = default_routes(proc_net), interfaces(proc_net), proxy_setting(env)
    shown = [f"{fam} via {gw} dev {dev}" for fam, gw, dev in routes]
    out = {"interfaces": ifaces, "default_routes": shown, "proxy": proxy}

    def unenforced(reason: str) -> dict:
        return {"enforced": False, "mode": "unenforced", "reason": reason, **out}

    if routes and not proxy:
        return unenforced(f"this container has a default route ({'; '.join(shown)}) and no egress "
                          f"proxy, so it can reach anything the host can")
    policy = clusterpolicy.declared(env)
    if policy and proxy and ifaces:
        # A pod's gateway answers and its proxy is a Service off its subnets: the declared
        # policy is judged by trying it (clusterpolicy.py), never by the rules below. Two
        # things first, so that a host's network cannot pass for a pod's: its links must be
        # a pod's kind, and its default gateway must answer at the link layer (evidence that
        # must answer), so the silence of the direct probes is a policy's, not a dead link's.
        where = f"the cluster policy declared by {clusterpolicy.EGRESS_POLICY.name} ({policy})"
        kinds = links()
        if kinds is None:
            return unenforced(f"{where} cannot be checked: this namespace's interfaces could not "
                              f"be read from netlink, so nothing shows it is a pod's")
        out["links"] = {name: kinds.get(name, "") for name in ifaces}
        foreign = [f"{n} ({kinds.get(n) or 'a device'})" for n in ifaces
                   if kinds.get(n) not in clusterpolicy.POD_LINK_KINDS]
        if foreign:
            return unenforced(f"{where} cannot hold here: interface {', '.join(foreign)} is not "
                              f"a pod's own link, so this is likely a host's network "
                              f"(hostNetwork), which no pod policy confines")
        silent = [f"{gw} (dev {dev})" for fam, gw, dev in routes
                  if fam == "ipv4" and gw != "0.0.0.0"
                  and not gateway_answers(gw, proc_net, solicit, gave_up=gave_up)]
        if silent or not routes:
            return unenforced(f"{where} cannot be checked: "
                              + (f"the default gateway {', '.join(silent)} does not answer at the "
                                 f"link layer" if silent else "there is no default route")
                              + ", so direct connections getting nowhere would show a dead link, "
                                "not a policy")
        return {**out, **clusterpolicy.status(policy, proxy, proxy_address(proxy), routes, env,
                                              resolve)}
    sandboxed = bool(routes) and gvisor()

    def answers(gw: str) -> bool:
        return held(gw) if sandboxed else gateway_answers(gw, proc_net, solicit, gave_up=gave_up)

    for fam, gw, dev in routes:
        # An IPv6 or device-only default route cannot be checked from /proc: it counts as open.
        if fam == "ipv6" or gw == "0.0.0.0" or answers(gw):
            return unenforced(f"the default gateway {gw} (dev {dev}) answers, so this container "
                              f"can reach more than the egress proxy {proxy}")
    if not ifaces:
        return {"enforced": True, "mode": "offline", **out,
                "reason": "no network interface but lo: nothing outside is reachable"}
    if not proxy:
        return unenforced(f"interfaces {', '.join(ifaces)} exist and no egress proxy is configured "
                          f"(HTTPS_PROXY unset), so nothing mediates what they reach")
    # From here on "enforced" needs evidence: this namespace's own links, routes, the proxy.
    kinds = links()
    if kinds is None:
        return unenforced("this namespace's interfaces could not be read from netlink, so nothing "
                          "shows they are a container's own")
    out["links"] = {name: kinds.get(name, "") for name in ifaces}
    foreign = [f"{n} ({kinds.get(n) or 'a device'})" for n in ifaces if kinds.get(n) != "veth"]
    # gVisor names no link's kind: Docker's internal-network shape stands in (docstring), since
    # a host's network has either a gateway that answers or more than one link.
    gvisor_shape = sandboxed and len(ifaces) == 1 and not any(kinds.get(n) for n in ifaces)
    if foreign and sandboxed and not gvisor_shape:
        return unenforced(f"under gVisor, whose netlink names no link's kind, only one interface "
                          f"beside a default gateway no one holds shows a container's own "
                          f"network; here: {', '.join(ifaces)}")
    if foreign and not gvisor_shape:
        return unenforced(f"interface {', '.join(foreign)} is not a container's own veth: this is "
                          f"likely the host's network (--network host, or Apptainer without --net), "
                          f"where the host's other subnets and loopback services are reachable "
                          f"beside the proxy {proxy}")
    connected, routed = routes4(proc_net)
    routed += routes6(proc_net)
    if routed:
        return unenforced(f"the route {routed[0]} leads beyond this container's subnet, beside "
                          f"the egress proxy {proxy}")
    host, _ = proxy_address(proxy)
    addrs = resolve(host) if host else []
    on_link = [a for a in addrs if any(ipaddress.ip_address(a) in net for net in connected)]
    out["proxy_addresses"] = addrs
    if not on_link:
        where = ", ".join(addrs) if addrs else "does not resolve"
        return unenforced(f"the egress proxy {proxy} ({where}) is not on this container's own "
                          f"subnet ({', '.join(map(str, connected)) or 'none'}), so nothing shows "
                          f"it is the only way out")
    dead = f" (the default route's gateway {routes[0][1]} does not answer)" if routes else ""
    what = ("is gVisor's only link (Docker's internal-network shape)" if gvisor_shape
            else "are veths")
    return {"enforced": True, "mode": "egress-proxy", **out,
            "reason": f"no way out{dead}: {', '.join(ifaces)} {what} on "
                      f"{', '.join(map(str, connected))} alone, where the egress proxy {proxy} "
                      f"({on_link[0]}) is the only way out"}


def proxy_address(proxy: str) -> tuple[str | None, int]:
    """(host, port) of an HTTPS_PROXY value (port 3128 unless it says), host None when bad."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        return parts.hostname, parts.port or 3128
    except ValueError:
        return None, 3128


def required(env: dict | None = None) -> bool:
    """BIOTOOL_REQUIRE_ENFORCED=1 (set by a grader): refuse to run when unenforced."""
    return REQUIRE_ENFORCED.get(env)


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
