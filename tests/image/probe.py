"""Network probes run inside the sandbox with its python3 (standard library only).

Usage: python3 - KIND ARGS... < probe.py; prints one JSON object: what happened, with the
OS error number and name when a socket call failed, so a test can tell "refused by the rules"
(network unreachable, no DNS answer, 403 from the proxy) from "nothing answered".
"""

import errno
import json
import os
import socket
import ssl
import sys
import urllib.parse

TIMEOUT = 8


def _err(exc):
    out = {"ok": False, "error": type(exc).__name__, "message": str(exc)}
    code = getattr(exc, "errno", None)
    if isinstance(code, int):
        out["errno"] = code
        out["errname"] = errno.errorcode.get(code, str(code))
    return out


def _proxy():
    url = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    parts = urllib.parse.urlsplit(url)
    return parts.hostname, parts.port or 3128


def _read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    status = int(head.split()[1]) if head.startswith("HTTP/") else None
    return status, head


def resolve(name):
    try:
        infos = socket.getaddrinfo(name, 443, proto=socket.IPPROTO_TCP)
        return {"ok": True, "addresses": sorted({i[4][0] for i in infos})}
    except socket.gaierror as exc:
        return {"ok": False, "error": "gaierror", "gai": exc.errno, "message": str(exc)}


def tcp(host, port):
    try:
        with socket.create_connection((host, int(port)), timeout=TIMEOUT):
            return {"ok": True}
    except socket.gaierror as exc:
        return {"ok": False, "error": "gaierror", "gai": exc.errno, "message": str(exc)}
    except OSError as exc:
        return _err(exc)


def udp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    try:
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01",
                 (host, int(port)))
        data, _ = s.recvfrom(512)
        return {"ok": True, "bytes": len(data)}
    except OSError as exc:
        return _err(exc)
    finally:
        s.close()


def connect(target, sni=None):
    """CONNECT target through the proxy; with sni, then a TLS handshake naming sni."""
    host, port = _proxy()
    out = {"proxy": f"{host}:{port}", "target": target}
    try:
        sock = socket.create_connection((host, port), timeout=TIMEOUT)
    except OSError as exc:
        return {**out, **_err(exc)}
    with sock:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        status, head = _read_head(sock)
        out.update(status=status, head=head.splitlines()[0] if head else "")
        if status != 200 or sni is None:
            out["ok"] = status == 200
            return out
        ctx = ssl.create_default_context()
        try:
            with ctx.wrap_socket(sock, server_hostname=sni) as tls:
                tls.sendall(f"GET / HTTP/1.1\r\nHost: {sni}\r\nConnection: close\r\n\r\n".encode())
                status2, head2 = _read_head(tls)
                out.update(ok=True, tls=True, inner_status=status2)
        except (OSError, ssl.SSLError) as exc:
            out.update(tls=False, **_err(exc))
        return out


def http_get(url):
    """A plain-HTTP request sent to the proxy (absolute URL, as proxies get them)."""
    host, port = _proxy()
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT) as sock:
            netloc = urllib.parse.urlsplit(url).netloc
            sock.sendall(f"GET {url} HTTP/1.1\r\nHost: {netloc}\r\nConnection: close\r\n\r\n".encode())
            status, head = _read_head(sock)
            return {"ok": status == 200, "status": status}
    except OSError as exc:
        return _err(exc)


def https(url, no_proxy=False):
    """urllib HTTPS the way an agent's script would do it (env proxy unless no_proxy)."""
    import urllib.request
    handlers = [urllib.request.ProxyHandler({})] if no_proxy else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(url, timeout=TIMEOUT) as resp:
            return {"ok": True, "status": resp.status, "body": resp.read(2000).decode("utf-8", "replace")}
    except Exception as exc:  # the test inspects which failure it was
        reason = getattr(exc, "reason", exc)
        out = _err(reason if isinstance(reason, BaseException) else exc)
        out["message"] = str(exc)
        return out


if __name__ == "__main__":
    kind, *args = sys.argv[1:]
    kwargs = {}
    if kind == "https" and "--no-proxy" in args:
        args.remove("--no-proxy")
        kwargs["no_proxy"] = True
    print(json.dumps(globals()[kind](*args, **kwargs)))
