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


def _allow(monkeypatch, tmp_path, *entries: str) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text("[egress]\nallow = [" + ", ".join(f'"{e}"' for e in entries) + "]\n")
    monkeypatch.setenv("BIOTOOL_RULES", str(rules))


def test_host_spellings_are_checked_and_connected_as_the_allowlist_spells_them(
        monkeypatch, tmp_path):
    _allow(monkeypatch, tmp_path, "blast.ncbi.nlm.nih.gov:443")
    for url in ("https://BLAST.NCBI.NLM.NIH.GOV/x", "https://blast.ncbi.nlm.nih.gov./x",
                "https://blast.ncbi.nlm.nih.gov:0443/x", "HTTPS://Blast.Ncbi.Nlm.Nih.Gov.:443/x"):
        assert net.check_allowed(url) == ("blast.ncbi.nlm.nih.gov", 443, "/x"), url


@pytest.mark.parametrize("url,message", [
    ("https://blast.ncbi.nlm.nih.gov:0/x", "blast.ncbi.nlm.nih.gov:0 is not on the egress"),
    ("https://user:secret@blast.ncbi.nlm.nih.gov/x", "credentials in the URL are refused"),
    ("https://evil.example\\@blast.ncbi.nlm.nih.gov/x", "credentials in the URL are refused"),
    ("https://[::1]/x", "host ::1:443 is not on the egress allowlist"),
    ("https://[::ffff:130.14.29.110]:443/x", "is not on the egress allowlist"),
    ("https://[::1/x", "malformed URL"),
    ("https://blast.ncbi.nlm.nih.gov:99999/x", "malformed URL"),
    ("https://blast.ncbi.nlm.nih.gov.evil.example/x", "not on the egress allowlist"),
    ("https://blast.ncbi.nlm.nih.gov\uff0e/x", "not on the egress allowlist"),  # fullwidth dot
    ("ftp://blast.ncbi.nlm.nih.gov/x", "only https"),
])
def test_odd_urls_are_refused_before_any_connection(listener, monkeypatch, tmp_path, url,
                                                      message):
    port, count = listener
    _allow(monkeypatch, tmp_path, "blast.ncbi.nlm.nih.gov:443")
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    with pytest.raises(RefusedError, match=message) as err:
        net.request("GET", url)
    assert "secret" not in str(err.value)
    assert count["n"] == 0


def test_the_connect_line_and_sni_use_the_canonical_host(serve_mock, proxy, monkeypatch):
    _, url, _ = serve_mock()
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    port = url.split(":")[2].split("/")[0]
    odd = url.replace("localhost", "LocalHost.").replace(f":{port}/", f":0{port}/")
    resp = net.request("GET", odd + "?CMD=Get&FORMAT_OBJECT=SearchInfo&RID=NOPE")
    assert resp.status == 200  # TLS verified for "localhost": SNI was the canonical name
    assert [line.rsplit(" ", 1)[0] for line in proxy.lines] == [f"CONNECT localhost:{port}"]


@pytest.mark.parametrize("setting,message", [
    ("socks5://127.0.0.1:1080", r"only an http:// CONNECT proxy is supported \(not socks5://\)"),
    ("https://127.0.0.1:3128", r"only an http:// CONNECT proxy is supported"),
    ("http://127.0.0.1:99999", "is malformed"),
    ("http://127.0.0.1:0", "names no valid proxy host and port"),
    ("http://:3128", "names no valid proxy host"),
    ("http://8.8.8.8:3128", "is at public address 8.8.8.8"),
    ("http://[::ffff:8.8.8.8]:3128", "is at public address ::ffff:8.8.8.8"),
    ("http://user:secret@8.8.8.8:3128", "is at public address"),
])
def test_a_proxy_setting_that_would_leave_the_sandbox_is_refused(monkeypatch, tmp_path,
                                                                 setting, message):
    _allow(monkeypatch, tmp_path, "blast.ncbi.nlm.nih.gov:443")
    monkeypatch.setenv("HTTPS_PROXY", setting)
    with pytest.raises(RefusedError, match=message) as err:
        net.request("GET", "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi")
    assert "secret" not in str(err.value)
    assert net.proxy_reachable(timeout=0.2) is False  # auto mode falls back to local


def test_proxy_credentials_go_in_proxy_authorization_only(serve_mock, proxy, monkeypatch):
    import base64

    mock, url, _ = serve_mock()
    monkeypatch.setenv("HTTPS_PROXY", f"http://agent:p%40ss@127.0.0.1:{proxy.port}")
    net.request("GET", url + "?CMD=Get&FORMAT_OBJECT=SearchInfo&RID=NOPE")
    expected = base64.b64encode(b"agent:p@ss").decode()
    assert f"Proxy-Authorization: Basic {expected}" in proxy.heads[0]
    # Inside the tunnel the server sees no proxy credentials.
    assert mock.requests and "agent" not in str(mock.requests)


def test_a_redirect_is_not_followed(serve_mock, proxy, monkeypatch):
    mock, url, _ = serve_mock(mode="redirect")
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    resp = net.request("POST", url, body=b"CMD=Put&QUERY=%3Ea%0AACGT")
    assert resp.status == 302 and resp.headers["location"].startswith("https://evil.example")
    assert len(proxy.lines) == 1 and len(mock.requests) == 1


def test_a_proxy_name_is_pinned_to_a_checked_local_address(monkeypatch):
    """The client connects to the address it checked (no second lookup), IPv4 first; a name
    with any public address is refused (DNS cannot smuggle an outside host in)."""
    answers = {"egress": ["::1", "127.0.0.1"], "sneaky": ["10.0.0.5", "93.184.216.34"]}

    def fake_getaddrinfo(host, port, *args, **kwargs):
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, port)) for a in answers[host]]

    monkeypatch.setattr(net.socket, "getaddrinfo", fake_getaddrinfo)
    monkeypatch.setenv("HTTPS_PROXY", "http://egress:3128")
    assert net.proxy_from_env().address == "127.0.0.1"
    monkeypatch.setenv("HTTPS_PROXY", "http://sneaky:3128")
    with pytest.raises(RefusedError, match="at public address 93.184.216.34"):
        net.proxy_from_env()
