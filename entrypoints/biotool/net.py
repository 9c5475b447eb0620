"""biotool's one HTTP client: HTTPS only, allowlisted hosts only, through the egress proxy.

Layer 3 of the rules (DESIGN.md section 3): a host that is not on the rules file's egress
allowlist is refused (exit 3) before any socket is opened. With HTTPS_PROXY set, the
connection is a CONNECT tunnel through that proxy; TLS is verified against the system trust
store plus SSL_CERT_FILE when set (how a test CA is added). Standard library only.
"""

from __future__ import annotations

import http.client
import os
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

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


def proxy_from_env() -> tuple[str, int] | None:
    """(host, port) of HTTPS_PROXY (or https_proxy), or None."""
    raw = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    if not raw:
        return None
    parts = urlsplit(raw if "://" in raw else f"http://{raw}")
    if not parts.hostname:
        raise RefusedError(f"HTTPS_PROXY={raw!r} names no proxy host")
    return parts.hostname, parts.port or 3128


def proxy_reachable(timeout: float = 2.0) -> bool:
    """True when HTTPS_PROXY is set and accepts a TCP connection (the sandbox's way out)."""
    try:
        proxy = proxy_from_env()
    except RefusedError:
        return False
    if proxy is None:
        return False
    try:
        with socket.create_connection(proxy, timeout=timeout):
            return True
    except OSError:
        return False


def check_allowed(url: str) -> tuple[str, int, str]:
    """(host, port, path) of an https URL the rules allow; RefusedError otherwise, no I/O."""
    from biotool import rules as rules_mod

    parts = urlsplit(url)
    if parts.scheme != "https":
        raise RefusedError(f"{url}: only https is allowed out of the sandbox")
    host = parts.hostname or ""
    try:
        port = parts.port or 443
    except ValueError:
        raise RefusedError(f"{url}: malformed port") from None
    try:
        rules = rules_mod.load()
    except rules_mod.RulesError as exc:
        raise RefusedError(str(exc)) from None
    if not rules.egress_allows(host, port):
        allowed = ", ".join(f"{h}:{p}" for h, p in rules.egress_allow) or "nothing"
        raise RefusedError(f"host {host}:{port} is not on the egress allowlist in "
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
        conn = http.client.HTTPSConnection(proxy[0], proxy[1], timeout=timeout, context=ctx)
        conn.set_tunnel(host, port)
        via = f" via proxy {proxy[0]}:{proxy[1]}"
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
