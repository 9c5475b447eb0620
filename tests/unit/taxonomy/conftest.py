"""Fixtures for the taxonomy tests: a test CA, the mock NCBI over TLS, a recording CONNECT
proxy, rules that allow the mock, and a controllable clock."""

from __future__ import annotations

import select
import socket
import socketserver
import threading

import pytest

from biotool_testing import certificates, mock_ncbi


class FakeClock:
    """Time that passes only when someone sleeps: pacing is asserted without waiting."""

    def __init__(self, start: float = 1_000_000.0):
        self.t = start
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:
        with self._lock:
            self.sleeps.append(dt)
            self.t += max(0.0, dt)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory) -> dict:
    """A throwaway CA and a server certificate for `localhost`."""
    return certificates.server_ca(tmp_path_factory.mktemp("ca"), "localhost")


@pytest.fixture
def serve_mock(test_ca, tmp_path, monkeypatch):
    """Start a mock NCBI over TLS on localhost; the environment points biotool at it.

    Returns a function(**mock_kwargs) -> (mock, url, env) with env for subprocesses.
    """
    started = []

    def start(**kw):
        mock = mock_ncbi.MockNCBI(**kw)
        port = mock.serve(0, "127.0.0.1", test_ca["cert"], test_ca["key"])
        started.append(mock)
        rules = tmp_path / f"rules-{port}.toml"
        rules.write_text(f'[egress]\nallow = ["localhost:{port}"]\n')
        url = f"https://localhost:{port}/blast/Blast.cgi"
        env = {"BIOTOOL_RULES": str(rules), "SSL_CERT_FILE": test_ca["ca"],
               "BIOTOOL_NCBI_URL": url, "BIOTOOL_NCBI_PACING_DIR": str(tmp_path / "pacing")}
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        return mock, url, env

    yield start
    for mock in started:
        mock.close()


class _ProxyHandler(socketserver.BaseRequestHandler):
    def handle(self):
        proxy = self.server.recorder
        proxy.accepted += 1
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0].decode()
        proxy.lines.append(line)
        proxy.heads.append(head.decode(errors="replace"))
        method, target, _ = line.split(" ", 2)
        if method != "CONNECT":
            self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        host, _, port = target.rpartition(":")
        try:
            upstream = socket.create_connection((host, int(port)), timeout=10)
        except OSError:
            self.request.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        socks = [self.request, upstream]
        while True:
            ready, _, _ = select.select(socks, [], [], 30)
            if not ready:
                break
            for s in ready:
                data = s.recv(65536)
                if not data:
                    upstream.close()
                    return
                (upstream if s is self.request else self.request).sendall(data)


class RecordingProxy:
    """A CONNECT proxy that records every connection and request line it receives."""

    def __init__(self):
        self.lines: list[str] = []
        self.heads: list[str] = []   # each request head in full (CONNECT line and headers)
        self.accepted = 0
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _ProxyHandler)
        self.server.daemon_threads = True
        self.server.recorder = self
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy():
    p = RecordingProxy()
    yield p
    p.close()
