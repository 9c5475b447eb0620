"""biotool's HTTP client: allowlist refusal before any connection, CONNECT through the proxy,
TLS verified against the trust store plus SSL_CERT_FILE."""

from __future__ import annotations

import socket
import threading

import pytest

from biotool import net
from biotool.output import RefusedError, ToolFailure


@pytest.fixture
def listener():
    """A TCP socket that counts connection attempts (it must see none on refusal)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.settimeout(0.2)
    count = {"n": 0, "stop": False}

    def loop():
        while not count["stop"]:
            try:
                c, _ = s.accept()
                count["n"] += 1
                c.close()
            except OSError:
                pass

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    yield s.getsockname()[1], count
    count["stop"] = True
    t.join(1)
    s.close()


def test_unlisted_host_is_refused_before_any_connection(listener, monkeypatch, tmp_path):
    port, count = listener
    rules = tmp_path / "rules.toml"
    rules.write_text('[egress]\nallow = ["blast.ncbi.nlm.nih.gov:443"]\n')
    monkeypatch.setenv("BIOTOOL_RULES", str(rules))
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")  # the proxy would count it
    with pytest.raises(RefusedError, match=r"host localhost:\d+ is not on the egress allowlist"):
        net.request("GET", f"https://localhost:{port}/x")
    with pytest.raises(RefusedError, match="not on the egress allowlist"):
        net.request("GET", "https://blast.ncbi.nlm.nih.gov:8443/blast/Blast.cgi")  # wrong port
    monkeypatch.delenv("HTTPS_PROXY")
    with pytest.raises(RefusedError):
        net.request("GET", f"https://localhost:{port}/x")
    assert count["n"] == 0


def test_plain_http_and_ip_literals_are_refused(monkeypatch, tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text('[egress]\nallow = ["localhost:80", "localhost:443"]\n')
    monkeypatch.setenv("BIOTOOL_RULES", str(rules))
    with pytest.raises(RefusedError, match="only https"):
        net.request("GET", "http://localhost/x")
    with pytest.raises(RefusedError, match="127.0.0.1:443 is not on the egress allowlist"):
        net.request("GET", "https://127.0.0.1/x")


def test_request_goes_through_the_proxy_with_connect(serve_mock, proxy, monkeypatch):
    mock, url, env = serve_mock()
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    resp = net.request("GET", url + "?CMD=Get&FORMAT_OBJECT=SearchInfo&RID=NOPE")
    assert resp.status == 200 and "Status=UNKNOWN" in resp.text
    port = url.split(":")[2].split("/")[0]
    assert [line.rsplit(" ", 1)[0] for line in proxy.lines] == [f"CONNECT localhost:{port}"]
    assert mock.requests[0]["rid"] == "NOPE"


def test_tls_is_verified_without_the_test_ca(serve_mock, monkeypatch):
    _, url, _ = serve_mock()
    monkeypatch.delenv("SSL_CERT_FILE")
    with pytest.raises(ToolFailure, match="TLS certificate verification failed"):
        net.request("GET", url)


def test_proxy_reachability_decides_nothing_when_unset(monkeypatch, proxy):
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    assert net.proxy_reachable() is False
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    assert net.proxy_reachable() is True
    proxy.close()
    assert net.proxy_reachable(timeout=0.5) is False
