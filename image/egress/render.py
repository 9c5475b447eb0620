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
import sys
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
           port: int = 3128) -> str:
    """squid.conf text that tunnels only the allowlisted host:port pairs (CONNECT + SNI)."""
    pairs = checked_allowlist(allow)
    lines = [
        f"# Rendered from {rules_path} at container start by render.py; do not edit.",
        "# CONNECT to an allowlisted host:port only; the TLS SNI is peeked and the tunnel",
        "# spliced only if the SNI is allowlisted too. The certificate never decrypts anything:",
        "# nothing is bumped, everything not spliced is terminated.",
        f"http_port {port} ssl-bump tls-cert={cert} tls-key={key} generate-host-certificates=off",
        "",
        "# No cache of any kind, no pid file on the read-only root, quick shutdown.",
        "cache deny all",
        "cache_mem 0 MB",
        "pid_filename none",
        "shutdown_lifetime 1 seconds",
        "via off",
        "forwarded_for delete",
        "httpd_suppress_version_string on",
        "pinger_enable off",
        "",
        f"logformat biotool {LOG_FORMAT}",
        f"access_log {access_log} logformat=biotool",
        f"cache_log {cache_log}",
        "cache_store_log none",
        "logfile_rotate 0",
        "",
        "acl CONNECT method CONNECT",
        f"acl ip_literal dstdom_regex -n {IPV4_LITERAL} {IPV6_LITERAL}",
        "acl step1 at_step SslBump1",
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="/etc/biotool/rules.toml")
    parser.add_argument("--out", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--access-log", default="stdio:/dev/stdout")
    args = parser.parse_args(argv)
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
