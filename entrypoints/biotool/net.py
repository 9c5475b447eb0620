"""biotool's one HTTP client: HTTPS only, allowlisted hosts only, through the egress proxy.

Layer 3 of the rules (docs/rules.md): a host that is not on the rules file's egress
allowlist is refused (exit 3) before any socket is opened. With HTTPS_PROXY set, the
connection is a CONNECT tunnel through that proxy; TLS is verified against the system trust
store plus SSL_CERT_FILE when set (how a test CA is added). Redirects are never followed (a
3xx comes back to the caller as its status). Standard library only.
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import os
import re
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from biotool import __version__
from biotool.output import RefusedError, ToolFailure

MAX_BODY = 256 << 20  # a reply larger than this is a misbehaving server, not a BLAST report
USER_AGENT = f"biotool/{__version__}"


@dataclass
class Response:
    status: int
    headers: dict
    body: bytes
    url: str

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Proxy:
    """The HTTP CONNECT proxy named by HTTPS_PROXY, pinned to the local address it resolved to."""

    host: str
    port: int
    address: str                 # the checked address the client connects to (no re-resolve)
    authorization: str | None    # a Proxy-Authorization value when the URL carried credentials

    def __str__(self) -> str:    # never the credentials
        return f"{self.host}:{self.port}"


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if ip.version == 6 and ip.ipv4_mapped:   # ::ffff:8.8.8.8 is 8.8.8.8
        ip = ip.ipv4_mapped
    return ip.is_global


def _proxy_setting() -> str:
    return (os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or "").strip()


def _redacted(raw: str) -> str:
    return re.sub(r"//[^/@]*@", "//***@", raw)


def proxy_from_env() -> Proxy | None:
    """The proxy of HTTPS_PROXY (or https_proxy), or None; RefusedError when unusable.

    Only an http:// CONNECT proxy on a local network is used: the sandbox's egress proxy.
    A proxy at a public address (an agent pointing HTTPS_PROXY at an outside host, or at the
    allowlisted host itself) would be a connection to a host that is not on the allowlist,
    so it is refused before any connection.
    """
    raw = _proxy_setting()
    if not raw:
        return None
    shown = _redacted(raw)
    try:
        parts = urlsplit(raw if "://" in raw else f"http://{raw}")
        port = 3128 if parts.port is None else parts.port
        host = parts.hostname or ""
    except ValueError as exc:
        raise RefusedError(f"HTTPS_PROXY={shown!r} is malformed ({exc})") from None
    if parts.scheme.lower() != "http":
        raise RefusedError(f"HTTPS_PROXY={shown!r}: only an http:// CONNECT proxy is supported "
                           f"(not {parts.scheme}://)")
    host = host.rstrip(".")
    # Underscores allowed: docker names containers and aliases like "run_egress_1".
    if not re.fullmatch(r"[a-z0-9_.:%-]+", host) or not 0 < port < 65536:
        raise RefusedError(f"HTTPS_PROXY={shown!r} names no valid proxy host and port")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise ToolFailure(f"proxy {host}:{port} (HTTPS_PROXY): cannot resolve it "
                          f"({getattr(exc, 'strerror', None) or exc})") from None
    # IPv4 first: "localhost" may list ::1 first while the proxy listens on 127.0.0.1 only.
    addresses = sorted({info[4][0] for info in infos}, key=lambda a: (":" in a, a))
    public = [a for a in addresses if _is_public(a)]
    if public:
        raise RefusedError(f"proxy {host}:{port} (HTTPS_PROXY) is at public address "
                           f"{public[0]}: biotool tunnels only through the sandbox's egress "
                           f"proxy on a local network, never through an outside host")
    auth = None
    if parts.username is not None:
        cred = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        auth = "Basic " + base64.b64encode(cred.encode()).decode()
    return Proxy(host, port, addresses[0], auth)


def proxy_reachable(timeout: float = 2.0) -> bool:
    """True when HTTPS_PROXY names a usable proxy that accepts a TCP connection."""
    try:
        proxy = proxy_from_env()
    except (RefusedError, ToolFailure):
        return False
    if proxy is None:
        return False
    try:
        with socket.create_connection((proxy.address, proxy.port), timeout=timeout):
            return True
    except OSError:
        return False


def check_allowed(url: str) -> tuple[str, int, str]:
    """(host, port, path) of an https URL the rules allow; RefusedError otherwise, no I/O.

    The host returned is the allowlist's own spelling (lower case, no trailing dot), so what
    is checked is exactly what is connected to, sent in CONNECT and in the TLS SNI.
    """
    from biotool import rules as rules_mod

    try:
        parts = urlsplit(url)
        port = 443 if parts.port is None else parts.port  # ':0' is port 0, not 443
    except ValueError as exc:
        raise RefusedError(f"{url!r}: malformed URL ({exc})") from None
    if parts.scheme.lower() != "https":
        raise RefusedError(f"{url}: only https is allowed out of the sandbox")
    if "@" in parts.netloc:
        raise RefusedError(f"{_redacted(url)}: credentials in the URL are refused "
                           f"(they would leave the sandbox)")
    host = rules_mod.normalise_host(parts.hostname or "")
    try:
        rules = rules_mod.load()
    except rules_mod.RulesError as exc:
        # A broken rules file is a broken environment (exit 4); nothing is contacted.
        raise ToolFailure(f"rules unavailable, nothing is contacted: {exc}") from None
    plain = rules_mod.HOSTNAME.fullmatch(host) or rules_mod.is_ip_literal(host)
    if not plain or not rules.egress_allows(host, port):
        allowed = ", ".join(f"{h}:{p}" for h, p in rules.egress_allow) or "nothing"
        raise RefusedError(f"host {host or '(none)'}:{port} is not on the egress allowlist in "
                           f"{rules.path} (allowed: {allowed})")
    path = parts.path or "/"
    return host, port, path + (f"?{parts.query}" if parts.query else "")


def tls_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    extra = os.environ.get("SSL_CERT_FILE")
    if extra and os.path.isfile(extra):
        ctx.load_verify_locations(cafile=extra)
    return ctx


def request(method: str, url: str, *, body: bytes | None = None, headers: dict | None = None,
            timeout: float = 120.0) -> Response:
    """One HTTPS request to an allowlisted host; the whole body is read before returning."""
    host, port, path = check_allowed(url)
    proxy = proxy_from_env()
    ctx = tls_context()
    if proxy:
        # Connect to the address that was checked, not to a name resolved a second time.
        conn = http.client.HTTPSConnection(proxy.address, proxy.port, timeout=timeout,
                                           context=ctx)
        conn.set_tunnel(host, port, headers={"Proxy-Authorization": proxy.authorization}
                        if proxy.authorization else None)
        via = f" via proxy {proxy}"
    else:
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx)
        via = ""
    hdrs = {"User-Agent": USER_AGENT, "Accept": "*/*", **(headers or {})}
    try:
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read(MAX_BODY + 1)
        if len(data) > MAX_BODY:
            raise ToolFailure(f"{host}: reply larger than {MAX_BODY >> 20} MB; refusing it")
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data, url)
    except ssl.SSLCertVerificationError as exc:
        raise ToolFailure(f"{host}: TLS certificate verification failed{via}: "
                          f"{exc.verify_message or exc}") from None
    except ssl.SSLError as exc:
        raise ToolFailure(f"{host}: TLS error{via}: {exc}") from None
    except (socket.timeout, TimeoutError):
        raise ToolFailure(f"{host}: no reply within {timeout:.0f} s{via}") from None
    except http.client.IncompleteRead as exc:
        raise ToolFailure(f"{host}: connection closed mid-reply after {len(exc.partial)} "
                          f"bytes{via}") from None
    except OSError as exc:
        # A refused CONNECT surfaces here as "Tunnel connection failed: 403 ...".
        raise ToolFailure(f"{host}: cannot connect{via}: {exc}") from None
    except http.client.HTTPException as exc:
        raise ToolFailure(f"{host}: malformed HTTP reply{via}: {type(exc).__name__}") from None
    finally:
        conn.close()
