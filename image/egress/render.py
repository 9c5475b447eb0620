"""Render the egress proxy's squid.conf from the one rules file.

Standard library only: it runs at container start in the egress image, next to a copy of
`biotool/rules.py` (the same reader biotool itself uses, copied into `biotool/` beside this
file by the Dockerfile), so the proxy and the agent-side client can never disagree about
what is allowed.

    python3 render.py --rules /etc/biotool/rules.toml --out /run/egress/squid.conf
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

from biotool import rules as rules_mod  # in the egress image: biotool/ beside this file
import auditwire
# relayed to the gate (gatekeeper.py), which logs the tunnel and each request in it.
# Fields are space separated, "-" when empty; free-text fields are URL-escaped (%#) and every
# field is cut to a maximum width, so a line never nears Squid's 8,191-byte log-line limit
# (a longer line would be cut and lost) and nothing the agent sends can forge a record.
LOG_PREFIX = auditwire.SQUID_PREFIX
_CODES = {
    "time": "%ts.%03tu",
    "client": "%>a",
    "method": "%#.32rm",
    "url": "%#.1500ru",
    "host": "%#.300>rd",
    "port": "%>rP",
    "status": "%.40Ss",
    "http_status": "%03>Hs",
    "error": "%.60err_code",
    "bytes_sent": "%>st",
    "bytes_received": "%<st",
}
LOG_FIELDS = tuple((name, _CODES[name]) for name in auditwire.SQUID_FIELDS)
LOG_FORMAT = " ".join([LOG_PREFIX, *(code for _, code in LOG_FIELDS)])

# IPv4 dotted quads (and bare integers, which some resolvers accept as addresses) and
# anything that looks like an IPv6 literal, bracketed or not.
IPV4_LITERAL = r"^[0-9]+(\.[0-9]+){0,3}$"
IPV6_LITERAL = r"^\[?[0-9a-fA-F]*:[0-9a-fA-F:.]*\]?$"

# The loopback-only port of the gate (gatekeeper.py) that allowed CONNECTs are relayed to.
GATE_PORT = 3130
# The loopback-only port where the gate keeps Squid's records in the run's store (squidlog.py).
SQUID_LOG_PORT = 3131

# What one agent can make Squid hold (issue 47: ~8,500 connections each holding an unfinished
# 60 KB head OOM-killed a 512 MB egress). An agent needs a few tunnels at a time (the gate
# relays at most 32 per run), and a CONNECT head is a few hundred bytes, so every bound here
# sits far above use and far below the egress's memory limit (see memory_bound).
CLIENT_MAX_CONNECTIONS = 64   # open connections per client address; more are closed at accept
MAX_FILEDESCRIPTORS = 1024    # Squid's whole table: bounds every address together (IPv6 too)
HEAD_TIMEOUT_S = 10           # a request head not complete this long after the connect is cut
REQUEST_HEADER_MAX = 8 << 10  # bytes of a request head; a longer one is refused and closed
REQUEST_BUFFER_MAX = 16 << 10  # Squid's read buffer per client (must exceed the head cap)
# Memory one open client connection can hold at worst: Squid's read buffer, its connection
# state and the reply it writes (a few KB each), and the kernel's socket buffers, charged to
# the egress's cgroup (tcp_rmem's and tcp_wmem's 128 KB and 16 KB defaults).
CONNECTION_COST = REQUEST_BUFFER_MAX + (32 << 10) + (128 << 10) + (16 << 10)


def memory_bound() -> int:
    """Bytes every client connection Squid can hold at once may take at worst: the file
    descriptor table bounds them all (the per-address cap is lower still for one sandbox)."""
    return MAX_FILEDESCRIPTORS * CONNECTION_COST


def render(allow: tuple[tuple[str, int], ...], *, rules_path: str = "<rules>", access_log: str = "stdio:/dev/stdout",
           cache_log: str = "stdio:/dev/stderr", port: int = 3128, gate_port: int = GATE_PORT,
           store_port: int = SQUID_LOG_PORT) -> str:
    """squid.conf text that relays only CONNECTs to allowlisted host:port pairs to the gate.

    Squid does no TLS work at all: a denied CONNECT gets a plain 403 on the agent's port, an
    allowed one goes to the loopback-only gate (a cache_peer), which vets the ClientHello,
    ends TLS with the run's own CA and checks, paces and logs every request inside. Squid
    never connects anywhere itself (never_direct), so nothing reaches the outside but what
    the gate sends. `allow` is `Rules.egress_allow`: rules.py has proved each host a plain
    DNS name and each port a TCP port, so no entry can change a line's meaning.
    With an allowlist (so a gate, and its store) each record also goes to the gate's
    `store_port`, to be kept in the run's store (squidlog.py).
    """
    lines = [
        f"# Rendered from {rules_path} at container start by render.py; do not edit.",
        "# The agent-facing port answers a CONNECT that is not to an allowlisted host:port (and",
        "# anything that is not a CONNECT) with a plain 403, and relays an allowed one to the",
        "# gate on loopback, which ends TLS and decides each request inside the tunnel.",
        f"http_port {port} name=agent",
        "",
        "# No cache of any kind, no pid file on the read-only root, quick shutdown.",
        "cache deny all",
        "cache_mem 0 MB",
        "pid_filename none",
        "shutdown_lifetime 1 seconds",
        "via off",
        "httpd_suppress_version_string on",
        "pinger_enable off",
        "visible_hostname biotool-egress",
        "negative_dns_ttl 1 seconds",
        "",
        "# Bounded per client: an agent holding many connections, each with an unfinished head,",
        "# cannot take the egress's memory (render.memory_bound); a connection over the cap is",
        "# closed at accept (cache.log names the address), and one that times out or overruns",
        "# the head cap ends with a record of its own (error:transaction-end-before-headers).",
        f"client_ip_max_connections {CLIENT_MAX_CONNECTIONS}",
        f"max_filedescriptors {MAX_FILEDESCRIPTORS}",
        f"request_start_timeout {HEAD_TIMEOUT_S} seconds",
        f"request_timeout {HEAD_TIMEOUT_S} seconds",
        f"client_idle_pconn_timeout {HEAD_TIMEOUT_S} seconds",
        f"request_header_max_size {REQUEST_HEADER_MAX // 1024} KB",
        f"client_request_buffer_max_size {REQUEST_BUFFER_MAX // 1024} KB",
        "",
        "acl CONNECT method CONNECT",
        "acl from_loopback src 127.0.0.1/32",
        f"acl ip_literal dstdom_regex -n {IPV4_LITERAL} {IPV6_LITERAL}",
        "acl to_gate hier_code FIRSTUP_PARENT ANY_OLD_PARENT DEFAULT_PARENT",
        "",
        "# Allowed CONNECTs leave only through the gate; Squid itself never goes direct. The",
        "# relay carries the agent's address (X-Forwarded-For, appended last by Squid) so the",
        "# gate's records name the sandbox.",
        f"cache_peer 127.0.0.1 parent {gate_port} 0 no-query no-digest no-netdb-exchange name=gate",
        "cache_peer_access gate allow all",
        "never_direct allow all",
        "forwarded_for on",
        "",
        "# One record per attempt Squid ends itself; the gate logs what it was relayed (the",
        "# tunnel opening, each request, the close). The start-up warm-up is no agent's attempt.",
        f"logformat biotool {LOG_FORMAT}",
        f"access_log {access_log} logformat=biotool !to_gate !from_loopback",
        *(["# The same records to the run's store, through the gate; dropped, never waited",
           "# for, when the gate is not reading (Squid reconnects on the next record).",
           f"access_log tcp://127.0.0.1:{store_port} logformat=biotool buffer-size=1MB "
           f"on-error=drop !to_gate !from_loopback"] if allow else []),
        f"cache_log {cache_log}",
        "cache_store_log none",
        "logfile_rotate 0",
        "",
        "http_access deny ip_literal",
        "http_access deny !CONNECT",
    ]
    for i, (host, p) in enumerate(allow):
        lines += [
            f"acl allow{i}_host dstdomain -n {host}",
            f"acl allow{i}_port port {p}",
            f"http_access allow CONNECT allow{i}_host allow{i}_port",
        ]
    lines += ["http_access deny all", ""]
    return "\n".join(lines)


def warm_up(allow: tuple[tuple[str, int], ...], *, port: int = 3128, tries: int = 100, pause: float = 0.1) -> bool:
    """Bring the agent port's relay to the gate up before an agent needs it.

    Squid starts a peer as down until a probe succeeds, so the first relayed CONNECT could
    fail (500) while a failed probe is retried.
    This sends a CONNECT to the first allowlisted host:port from loopback (never an audit
    record: Squid skips loopback clients and so does the gate) until the relay answers 200,
    then hangs up before any TLS, so nothing goes upstream. True when the relay is up.
    """
    if not allow:
        return True
    host, p = allow[0]
    request = f"CONNECT {host}:{p} HTTP/1.1\r\nHost: {host}:{p}\r\n\r\n".encode()
    for _ in range(tries):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                sock.sendall(request)
                if sock.recv(64).startswith(b"HTTP/1.1 200"):
                    return True
        except OSError:
            pass
        time.sleep(pause)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="/etc/biotool/rules.toml")
    parser.add_argument("--out")
    parser.add_argument("--hosts", action="store_true",
                        help="print the allowlisted host names (one a line), after rendering --out")
    parser.add_argument("--access-log", default="stdio:/dev/stdout")
    parser.add_argument("--warm-up", action="store_true",
                        help="instead of rendering, bring the relay to the gate up (see warm_up)")
    parser.add_argument("--ready-file", help="with --warm-up: created once the relay is up")
    args = parser.parse_args(argv)
    if args.warm_up:
        try:
            ok = warm_up(rules_mod.load(args.rules).egress_allow)
        except rules_mod.RulesError as exc:
            print(f"egress: {exc}", file=sys.stderr)
            return 2
        if not ok:
            print("egress: the relay to the gate did not come up; allowed CONNECTs may fail",
                  file=sys.stderr)
            return 1
        if args.ready_file:
            Path(args.ready_file).write_text("relay up\n", encoding="utf-8")
        # The launcher waits for this line (in the container's log) rather than a health poll.
        print("egress: ready", file=sys.stderr, flush=True)
        return 0
    if not args.out and not args.hosts:
        parser.error("--out or --hosts is required")
    try:  # one start of Python for both: the egress's start-up is an episode's wait
        rules = rules_mod.load(args.rules)
    except rules_mod.RulesError as exc:
        print(f"egress: {exc}", file=sys.stderr)
        return 2
    if args.out:
        text = render(rules.egress_allow, rules_path=args.rules, access_log=args.access_log)
        Path(args.out).write_text(text, encoding="utf-8")
    if args.hosts:
        print("\n".join(sorted({h for h, _ in rules.egress_allow})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
