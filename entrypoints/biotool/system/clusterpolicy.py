"""Cluster mode of the enforcement check: a pod whose only way out is the egress service.

In a Kubernetes pod the evidence enforcement.py reads does not hold: the pod has a default
route via a gateway that answers, and the egress proxy is a Service's ClusterIP on no subnet
of the pod's. What confines the pod there is a network policy (k8s/values.yaml's Cilium
policies), which nothing inside the pod can read. So cluster mode needs two things:

  - the operator's declaration, BIOTOOL_EGRESS_POLICY (set by `biotool-sandbox k8s-values`),
    naming the policy relied on; and
  - evidence gathered here, so that setting the variable cannot make an open network read
    enforced: the egress proxy answers, while a direct TCP connection to each address that
    an open pod network would let through gets nowhere within PROBE_SECONDS.

The addresses tried: each default route's gateway, on the kubelet's port (a reset counts
against enforcement: the node itself answered), the Kubernetes API service from
KUBERNETES_SERVICE_HOST/PORT (it always listens, so a refusal can only be a policy's), and
each allowlisted host of the rules file on its port, where its name resolves here. All are
tried at once; nothing waits longer than PROBE_SECONDS. What it cannot see: addresses not
tried (another pod, a node's other ports, UDP), which the policy alone answers for.

Before any of it (enforcement.py): every interface must be a pod's kind (POD_LINK_KINDS; a
host network is refused), and each IPv4 default gateway must answer at the link layer, the
evidence that must answer beside the probes that must not (on a dead link every probe would
get nowhere too).
"""

from __future__ import annotations

import concurrent.futures
import errno
import ipaddress
import socket
import time
from dataclasses import dataclass

from biotool import rules as rules_mod
from biotool.settings import EGRESS_POLICY

# A pod's own network links (the pod's end of its CNI's pair or slave device); a host's
# network shows a plain device (a NIC), a bridge, a tunnel or a bond beside or instead.
POD_LINK_KINDS = ("veth", "ipvlan", "macvlan", "netkit")
PROBE_SECONDS = 1.0
KUBELET_PORT = 10250
# connect() failures that say a packet was refused on the way (ICMP unreachable, a local
# firewall's reject), not that the address answered.
BLOCKED_ERRNOS = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EACCES, errno.EPERM}


@dataclass(frozen=True)
class Probe:
    what: str            # "default gateway", "Kubernetes API", "allowlisted host NAME"
    address: str
    port: int
    scope: str = ""      # the device of an IPv6 link-local gateway
    reset_is_open: bool = False  # a reset means the host answered (the gateway: the node)


@dataclass(frozen=True)
class Outcome:
    probe: Probe
    result: str          # connected | refused | no answer | unreachable | error: ...

    @property
    def open(self) -> bool:
        return self.result == "connected" or (self.result == "refused" and self.probe.reset_is_open)

    @property
    def blocked(self) -> bool:
        return not self.open and self.result in ("refused", "no answer", "unreachable")

    def shown(self) -> str:
        host = f"[{self.probe.address}]" if ":" in self.probe.address else self.probe.address
        return f"{self.probe.what} {host}:{self.probe.port} ({self.result})"


def declared(env: dict) -> str | None:
    """The policy the operator says confines this pod, or None (cluster mode is off)."""
    return (EGRESS_POLICY.get(env) or "").strip() or None


def targets(routes: list[tuple[str, str, str]], env: dict, allowed: list[tuple[str, list[str], int]],
            avoid: set[str]) -> list[Probe]:
    """What to try: gateways, the Kubernetes API service, the allowlisted hosts' addresses;
    never an address of the proxy itself (`avoid`)."""
    found = []
    for fam, gw, dev in routes:
        if gw not in ("0.0.0.0", "::"):
            found.append(Probe("default gateway", gw, KUBELET_PORT,
                               scope=dev if fam == "ipv6" else "", reset_is_open=True))
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if host and port.isdigit() and 0 < int(port) < 65536:
        found.append(Probe("Kubernetes API", host, int(port)))
    for name, addrs, port in allowed:
        found += [Probe(f"allowlisted host {name}", a, port) for a in addrs]
    unique = {}
    for p in found:
        if rules_mod.is_ip_literal(p.address) and p.address not in avoid:
            unique.setdefault((p.address, p.port), p)
    return list(unique.values())


def connect(probe: Probe, seconds: float = PROBE_SECONDS) -> Outcome:
    """One TCP connection attempt, bounded by `seconds`."""
    ip = ipaddress.ip_address(probe.address)
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    addr: tuple = (probe.address, probe.port)
    if ip.version == 6:
        try:
            scope = socket.if_nametoindex(probe.scope) if probe.scope else 0
        except OSError:
            return Outcome(probe, f"error: no device {probe.scope}")
        addr = (probe.address, probe.port, 0, scope)
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(seconds)
        try:
            s.connect(addr)
            return Outcome(probe, "connected")
        except ConnectionRefusedError:
            return Outcome(probe, "refused")
        except TimeoutError:
            return Outcome(probe, "no answer")
        except OSError as exc:
            if exc.errno in BLOCKED_ERRNOS:
                return Outcome(probe, "unreachable")
            return Outcome(probe, f"error: {exc.strerror or exc}")


def connect_all(probes: list[Probe], seconds: float = PROBE_SECONDS) -> list[Outcome]:
    """Every probe at once, so the whole check takes one bound, not one per address."""
    if not probes:
        return []
    with concurrent.futures.ThreadPoolExecutor(len(probes)) as pool:
        return list(pool.map(lambda p: connect(p, seconds), probes))


def verdict(policy: str, proxy: str, proxy_outcomes: list[Outcome],
            outcomes: list[Outcome]) -> dict:
    """enforced (mode cluster-policy) only when the proxy answered and every probe was blocked."""
    evidence = {"policy": policy,
                "probes": [{"what": o.probe.what, "address": o.probe.address,
                            "port": o.probe.port, "result": o.result} for o in outcomes]}

    def unenforced(reason: str) -> dict:
        return {"enforced": False, "mode": "unenforced", "reason": reason, **evidence}

    where = f"the cluster policy declared by {EGRESS_POLICY.name} ({policy})"
    reached = [o for o in proxy_outcomes if o.result == "connected"]
    if not reached:
        tried = "; ".join(o.shown() for o in proxy_outcomes) or "it does not resolve"
        return unenforced(f"{where} cannot be checked: the egress proxy {proxy} does not answer "
                          f"({tried}), so no probe's silence shows the proxy is the way out")
    if not outcomes:
        return unenforced(f"{where} cannot be checked: there is no default gateway, Kubernetes "
                          f"API service or resolvable allowlisted host to try a direct "
                          f"connection to")
    opened = [o for o in outcomes if o.open]
    if opened:
        return unenforced(f"{where} does not hold: direct connections to "
                          f"{'; '.join(o.shown() for o in opened)} got through beside the "
                          f"egress proxy {proxy}")
    unclear = [o for o in outcomes if not o.blocked]
    if unclear:
        return unenforced(f"{where} cannot be checked: {'; '.join(o.shown() for o in unclear)} "
                          f"neither connected nor was blocked")
    return {"enforced": True, "mode": "cluster-policy", **evidence,
            "reason": f"{where} holds on evidence: the egress proxy {proxy} "
                      f"({reached[0].probe.address}) answers, while direct connections to "
                      f"{'; '.join(o.shown() for o in outcomes)} get nowhere within "
                      f"{PROBE_SECONDS:g} s"}


def status(policy: str, proxy: str, address: tuple[str | None, int],
           routes: list[tuple[str, str, str]], env: dict, resolve) -> dict:
    """The cluster-mode verdict for this pod: `address` the proxy's (host, port), `resolve`
    enforcement's bounded resolver."""
    host, port = address
    try:
        allow = list(rules_mod.load().egress_allow)
    except rules_mod.RulesError:
        allow = []  # doctor's rules check says why; the other probes still run
    # Names resolved at once too: each lookup is bounded, and a hung resolver bounds them all.
    names = [host] if host else []
    with concurrent.futures.ThreadPoolExecutor(len(names) + len(allow) or 1) as pool:
        found = list(pool.map(resolve, names + [name for name, _ in allow]))
    proxy_addrs = found[0] if host else []
    allowed = [(name, addrs, p) for (name, p), addrs in zip(allow, found[len(names):])]
    probes = targets(routes, env, allowed, avoid=set(proxy_addrs))
    to_proxy = [Probe("egress proxy", a, port) for a in proxy_addrs if rules_mod.is_ip_literal(a)]
    start = time.monotonic()
    tried = connect_all(to_proxy + probes)
    out = verdict(policy, proxy, tried[:len(to_proxy)], tried[len(to_proxy):])
    out["proxy_addresses"] = proxy_addrs
    out["probe_seconds"] = round(time.monotonic() - start, 2)
    return out
