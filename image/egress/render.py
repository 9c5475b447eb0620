"""Render the egress proxy's squid.conf from the one rules file.

Standard library only: it runs at container start in the egress image, next to a copy of
`biotool/rules.py` (the same reader biotool itself uses), so the proxy and the agent-side
client can never disagree about what is allowed.

    python3 render.py --rules /etc/biotool/rules.toml --out /run/egress/squid.conf \
        --cert /run/egress/bump.pem --key /run/egress/bump.key
"""

from __future__ import annotations

import argparse
import re
import socket
import sys
import time
from pathlib import Path

try:  # in the egress image rules.py sits beside this file
    import rules as rules_mod
except ImportError:  # in the repository (unit tests) it is biotool.rules
    from biotool import rules as rules_mod

# A DNS host name: labels of letters, digits and inner hyphens. Anything else (spaces,
# quotes, wildcards, a leading dot) could change the meaning of the rendered Squid line.
HOSTNAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")

# One access-log line per attempt, prefixed so the launcher can tell it from Squid's chatter.
# Fields are space separated, "-" when empty; free-text fields are URL-escaped (%#) so a space
# or newline sent by the agent cannot forge a record.
LOG_PREFIX = "BIOTOOL_EGRESS"
LOG_FIELDS = (
    ("time", "%ts.%03tu"),
    ("client", "%>a"),
    ("method", "%#rm"),
    ("url", "%#ru"),
    ("host", "%#>rd"),
    ("port", "%>rP"),
    ("sni", "%#ssl::>sni"),
    ("bump", "%ssl::bump_mode"),
    ("status", "%Ss"),
    ("http_status", "%03>Hs"),
    ("server", "%<a"),
    ("error", "%err_code"),
    ("bytes", "%<st"),
)
LOG_FORMAT = " ".join([LOG_PREFIX, *(code for _, code in LOG_FIELDS)])

# IPv4 dotted quads (and bare integers, which some resolvers accept as addresses) and
# anything that looks like an IPv6 literal, bracketed or not.
IPV4_LITERAL = r"^[0-9]+(\.[0-9]+){0,3}$"
IPV6_LITERAL = r"^\[?[0-9a-fA-F]*:[0-9a-fA-F:.]*\]?$"

# The loopback-only ssl-bump port that allowed CONNECTs are relayed to (never agent-facing).
SNI_PORT = 3129


class RenderError(ValueError):
    """The allowlist cannot be rendered safely; the message names the entry."""


def checked_allowlist(allow: tuple[tuple[str, int], ...] | list) -> list[tuple[str, int]]:
    """The (host, port) pairs, each proved a plain DNS name and a TCP port, else RenderError."""
    out = []
    for entry in allow:
        try:
            host, port = entry
        except (TypeError, ValueError):
            raise RenderError(f"egress.allow entry {entry!r} must be a (host, port) pair") from None
        host = rules_mod.normalise_host(str(host))
        if rules_mod.is_ip_literal(host):
            raise RenderError(f"egress.allow entry {host}:{port} is an IP literal; name a host")
        if not HOSTNAME.match(host) or host.replace(".", "").isdigit():
            raise RenderError(f"egress.allow entry {host!r}:{port} is not a plain DNS host name")
        if not isinstance(port, int) or not 0 < port < 65536:
            raise RenderError(f"egress.allow entry {host}:{port!r} has no valid TCP port")
        if (host, port) not in out:
            out.append((host, port))
    return out


def render(allow, *, cert: str, key: str, rules_path: str = "<rules>",
           access_log: str = "stdio:/dev/stdout", cache_log: str = "stdio:/dev/stderr",
           port: int = 3128, sni_port: int = SNI_PORT) -> str:
    """squid.conf text that tunnels only the allowlisted host:port pairs (CONNECT + SNI).

    Two ports in one Squid. The agent-facing port has no ssl-bump, so a denied CONNECT gets a
    plain 403 (an ssl-bump port would answer 200 and then serve the error over TLS with its
    own certificate). An allowed CONNECT is relayed to a loopback-only ssl-bump port of the
    same Squid, which checks the rules again, peeks at the TLS SNI and splices or terminates.
    """
    pairs = checked_allowlist(allow)
    lines = [
        f"# Rendered from {rules_path} at container start by render.py; do not edit.",
        "# The agent-facing port (no ssl-bump) answers a CONNECT that is not to an allowlisted",
        "# host:port with a plain 403 and relays an allowed one to the loopback-only SNI port,",
        "# which peeks at the TLS SNI and splices only an allowlisted one. The certificate never",
        "# decrypts anything: nothing is bumped, everything not spliced is terminated.",
        f"http_port {port} name=agent",
        f"http_port 127.0.0.1:{sni_port} name=sni ssl-bump tls-cert={cert} tls-key={key} "
        "generate-host-certificates=off",
        "",
        "# No cache of any kind, no pid file on the read-only root, quick shutdown.",
        "cache deny all",
        "cache_mem 0 MB",
        "pid_filename none",
        "shutdown_lifetime 1 seconds",
        "# via off also keeps Squid from taking the relay to its own SNI port for a loop.",
        "via off",
        "httpd_suppress_version_string on",
        "pinger_enable off",
        "# A failed lookup (say, at start-up, before the external network is attached) must",
        "# not hold an allowlisted host unreachable for Squid's default minute.",
        "negative_dns_ttl 1 seconds",
        "",
        "acl CONNECT method CONNECT",
        "acl agent_port myportname agent",
        "acl sni_port myportname sni",
        "# The SNI port's own upstream request (made when it splices) does not carry the port",
        "# name, so the direct-or-relay decision tells the ports apart by local port number.",
        f"acl on_sni_port localport {sni_port}",
        "# With acl_uses_indirect_client on, src is the agent's address on both ports (the",
        "# relay's X-Forwarded-For is trusted only on the SNI port, only from loopback), so",
        "# from_loopback on the agent port is the entrypoint's warm-up.",
        "acl from_loopback src 127.0.0.1/32",
        f"acl ip_literal dstdom_regex -n {IPV4_LITERAL} {IPV6_LITERAL}",
        "acl step1 at_step SslBump1",
        "acl via_sni_port hier_code FIRSTUP_PARENT ANY_OLD_PARENT DEFAULT_PARENT",
        "acl relayed all-of agent_port via_sni_port",
        "acl warm_up all-of agent_port from_loopback",
        "",
        "# Allowed CONNECTs leave the agent port only through the SNI port; only the SNI port",
        "# goes direct. The relay carries the agent's address (X-Forwarded-For, trusted from",
        "# loopback only) so the SNI port's record names the sandbox, not 127.0.0.1; nothing",
        "# else ever sees a request header (plain HTTP is never forwarded).",
        f"cache_peer 127.0.0.1 parent {sni_port} 0 no-query no-digest no-netdb-exchange name=sni_relay",
        "cache_peer_access sni_relay allow agent_port",
        "cache_peer_access sni_relay deny all",
        "always_direct allow on_sni_port",
        "never_direct allow all",
        "forwarded_for on",
        "follow_x_forwarded_for allow sni_port from_loopback",
        "follow_x_forwarded_for deny all",
        "acl_uses_indirect_client on",
        "log_uses_indirect_client on",
        "",
        "# One record per attempt: an attempt the agent port relayed is logged by the SNI port",
        "# (with the SNI, bump action and real server); everything else by the port that ended it.",
        "# The warm-up is no agent's attempt. (The SNI port's own records from loopback -- its",
        "# peer probes, and a spliced tunnel's final record, which Squid does not credit to the",
        "# relayed client -- are sorted out by the audit parser.)",
        f"logformat biotool {LOG_FORMAT}",
        f"access_log {access_log} logformat=biotool !relayed !warm_up",
        f"cache_log {cache_log}",
        "cache_store_log none",
        "logfile_rotate 0",
        "",
        "http_access deny ip_literal",
        "http_access deny !CONNECT",
    ]
    for i, (host, p) in enumerate(pairs):
        lines += [
            f"acl allow{i}_host dstdomain -n {host}",
            f"acl allow{i}_port port {p}",
            f"http_access allow CONNECT allow{i}_host allow{i}_port",
        ]
    lines += ["http_access deny all", ""]
    hosts = sorted({h for h, _ in pairs})
    if hosts:
        # --client-requested: match the SNI the client sent, never a fallback to the
        # CONNECT name, so a ClientHello without SNI (or with another name) is terminated.
        lines.append("acl allowed_sni ssl::server_name --client-requested " + " ".join(hosts))
    lines += ["ssl_bump peek step1"]
    if hosts:
        lines.append("ssl_bump splice allowed_sni")
    lines += [
        "ssl_bump terminate all",
        "# Non-TLS bytes inside an allowed CONNECT get an error, never a blind tunnel.",
        "on_unsupported_protocol respond all",
        "",
    ]
    return "\n".join(lines)


def warm_up(allow, *, port: int = 3128, tries: int = 100, pause: float = 0.1) -> bool:
    """Bring the agent port's relay to the SNI port up before an agent needs it.

    Squid starts a peer as down and probes it once at start-up, before its own SNI port
    listens, so the first relayed CONNECT would fail (500) while the failed probe is retried.
    This sends a CONNECT to the first allowlisted host:port from loopback (never an audit
    record: see warm_up in the config and audit.is_proxy_internal) until the relay answers 200, then hangs up before any TLS: the SNI
    port never gets a ClientHello, so nothing goes upstream. True when the relay is up.
    """
    pairs = checked_allowlist(allow)
    if not pairs:
        return True
    host, p = pairs[0]
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
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--access-log", default="stdio:/dev/stdout")
    parser.add_argument("--warm-up", action="store_true",
                        help="instead of rendering, bring the relay to the SNI port up (see warm_up)")
    parser.add_argument("--ready-file", help="with --warm-up: created once the relay is up")
    args = parser.parse_args(argv)
    if args.warm_up:
        try:
            ok = warm_up(rules_mod.load(args.rules).egress_allow)
        except (rules_mod.RulesError, RenderError) as exc:
            print(f"egress: {exc}", file=sys.stderr)
            return 2
        if not ok:
            print("egress: the relay to the SNI port did not come up; allowed CONNECTs may fail",
                  file=sys.stderr)
            return 1
        if args.ready_file:
            Path(args.ready_file).write_text("relay up\n", encoding="utf-8")
        return 0
    if not (args.out and args.cert and args.key):
        parser.error("--out, --cert and --key are required to render")
    try:
        rules = rules_mod.load(args.rules)
        text = render(rules.egress_allow, cert=args.cert, key=args.key,
                      rules_path=args.rules, access_log=args.access_log)
    except (rules_mod.RulesError, RenderError) as exc:
        print(f"egress: {exc}", file=sys.stderr)
        return 2
    Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
