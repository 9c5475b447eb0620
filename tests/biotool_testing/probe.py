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
import urllib.error
import urllib.parse

# Only a silence waits this long (a refusal by the rules is an immediate error or a 403), so
# it is wide enough that an answer a slow host gives late is still an answer; the probes that
# expect silence pay it in full, so it is not wider.
TIMEOUT = 20
UDP_TIMEOUT = 10  # every UDP probe expects silence: it always waits this long


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
    s.settimeout(UDP_TIMEOUT)
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


def client_hello(sni):
    """A TLS 1.2 ClientHello naming `sni` (bytes; None: no server_name extension at all)."""
    exts = b""
    if sni is not None:
        entry = b"\x00" + len(sni).to_bytes(2, "big") + sni
        lst = len(entry).to_bytes(2, "big") + entry
        exts += b"\x00\x00" + len(lst).to_bytes(2, "big") + lst
    body = (b"\x03\x03" + os.urandom(32) + b"\x00" + b"\x00\x04\xc0\x2f\xc0\x30" + b"\x01\x00"
            + len(exts).to_bytes(2, "big") + exts)
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + len(hs).to_bytes(2, "big") + hs


def hello(target, sni_hex):
    """CONNECT target, then a hand-made ClientHello (sni_hex: the SNI bytes in hex, or 'none'),
    or with sni_hex 'plain' an HTTP request instead of TLS. What came back, and whether the
    proxy closed the tunnel."""
    host, port = _proxy()
    out = {"target": target}
    with socket.create_connection((host, port), timeout=TIMEOUT) as sock:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        status, head = _read_head(sock)
        out["status"] = status
        if status != 200:
            return out
        if sni_hex == "plain":
            sock.sendall(b"GET /blast/Blast.cgi?CMD=Put HTTP/1.1\r\nHost: x\r\n\r\n")
        else:
            sock.sendall(client_hello(None if sni_hex == "none" else bytes.fromhex(sni_hex)))
        data = b""
        try:
            while len(data) < 65536:
                chunk = sock.recv(4096)
                if not chunk:
                    out["closed"] = True
                    break
                data += chunk
        except OSError as exc:
            out.update(_err(exc))
        out["reply_bytes"] = len(data)
        out["server_hello"] = data[:1] == b"\x16"
        out["reply_head"] = data[:60].decode("latin-1")
    return out


def pipelined(url, n):
    """n GET requests for url sent back to back in one TLS connection through the proxy;
    the status of each answer."""
    import http.client
    parts = urllib.parse.urlsplit(url)
    phost, pport = _proxy()
    conn = http.client.HTTPSConnection(phost, pport, timeout=TIMEOUT,
                                       context=ssl.create_default_context())
    conn.set_tunnel(parts.hostname, parts.port or 443)
    conn.connect()
    path = parts.path + ("?" + parts.query if parts.query else "")
    conn.sock.sendall(b"".join(f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}\r\n\r\n".encode()
                               for _ in range(int(n))))
    statuses = []
    for _ in range(int(n)):
        resp = http.client.HTTPResponse(conn.sock, method="GET")
        resp.begin()
        resp.read()
        statuses.append(resp.status)
    conn.close()
    return {"ok": True, "statuses": statuses}


def https_post(url, size):
    """A BLAST-style form POST of about `size` bytes through the proxy (urllib, env proxy)."""
    import urllib.request
    body = urllib.parse.urlencode({"CMD": "Put", "PROGRAM": "blastn", "DATABASE": "nt",
                                   "QUERY": ">q\n" + "ACGT" * (int(size) // 4)}).encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return {"ok": True, "status": resp.status, "sent": len(body),
                    "body": resp.read(2000).decode("utf-8", "replace")}
    except urllib.error.HTTPError as exc:
        return {"ok": False, "status": exc.code, "sent": len(body),
                "body": exc.read(2000).decode("utf-8", "replace")}


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
