"""The escape matrix: every way out of `sandbox` but the allowlisted one is blocked by a rule.

Each blocked case proves the block is the rules' doing, not an absent internet: the target is
a real server on the egress side that answers the egress container (and logs every contact),
the proxy's log shows the denial, and socket errors are "no route to host" / no DNS answer
rather than a silence. The allowed path reaches that server through the proxy over TLS.
"""

from __future__ import annotations

import socket
import threading

import pytest

import stack  # tests/image/stack.py; conftest puts this folder on sys.path

HOST = stack.ALLOWED_HOST


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return stack.make_test_ca(tmp_path_factory.mktemp("test-ca"))


@pytest.fixture(scope="module")
def run(certs, images):
    up = stack.launcher("up", "--extra-ca", str(certs["ca"]))
    server, ip = stack.start_outside_server(up, certs)
    up["server"], up["server_ip"] = server, ip
    yield up
    server.remove(force=True)
    stack.launcher("down", up["run"])


def contacts(run, kind: str) -> int:
    return sum(1 for line in stack.server_log(run["server"]) if line.startswith(kind))


def test_outside_server_answers_the_egress_container(run):
    # The control: the same targets the sandbox fails to reach are alive for egress.
    assert stack.probe(run, "resolve", HOST, service="egress")["addresses"] == [run["server_ip"]]
    assert stack.probe(run, "tcp", run["server_ip"], "8443", service="egress")["ok"]
    assert stack.probe(run, "udp", run["server_ip"], "53", service="egress")["ok"]


def test_dns_of_outside_names_gets_no_answer(run):
    for name in (HOST, "example.com"):
        res = stack.probe(run, "resolve", name)
        assert not res["ok"] and res["error"] == "gaierror", res


def test_direct_tcp_by_name_fails_at_dns(run):
    res = stack.probe(run, "tcp", HOST, "443")
    assert res["error"] == "gaierror", res


def test_direct_tcp_by_ip_has_no_route(run):
    before = contacts(run, "TCP 8443")
    res = stack.probe(run, "tcp", run["server_ip"], "8443")
    assert res.get("errname") in ("EHOSTUNREACH", "ENETUNREACH"), res
    res = stack.probe(run, "tcp", "1.1.1.1", "443")
    assert res.get("errname") in ("EHOSTUNREACH", "ENETUNREACH"), res
    assert contacts(run, "TCP 8443") == before


def test_udp_out_gets_nothing(run):
    before = contacts(run, "UDP 53")
    res = stack.probe(run, "udp", run["server_ip"], "53")
    assert not res["ok"], res
    assert contacts(run, "UDP 53") == before


def test_host_services_are_unreachable(run):
    # An internal network alone still lets a container reach the host through its gateway.
    listener = socket.socket()
    listener.bind(("0.0.0.0", 0))
    listener.listen()
    port = listener.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    try:
        gw = stack.outside_gateway(run)
        assert stack.probe(run, "tcp", gw, str(port), service="egress")["ok"]
        seen = len(accepted)
        internal = stack.container(run["containers"]["sandbox"])
        net = next(iter(internal.attrs["NetworkSettings"]["Networks"].values()))
        for target in (gw, net["Gateway"]):
            res = stack.probe(run, "tcp", target, str(port))
            assert res.get("errname") in ("EHOSTUNREACH", "ENETUNREACH"), (target, res)
        assert len(accepted) == seen
    finally:
        listener.close()


def sandbox_ip(run) -> str:
    internal = stack.container(run["containers"]["sandbox"])
    return next(iter(internal.attrs["NetworkSettings"]["Networks"].values()))["IPAddress"]


def records_where(run, pred) -> list[dict]:
    return [r for r in stack.audit(run) if pred(r)]


def test_connect_to_unlisted_host_is_denied_with_403_and_logged_once(run):
    # A plain 403 answers the CONNECT itself (no "200 Connection established" followed by
    # an error page behind a certificate the client cannot check).
    res = stack.probe(run, "connect", "example.org:443", "example.org")
    assert res["status"] == 403 and res["head"] == "HTTP/1.1 403 Forbidden", res
    assert not res.get("tls"), res
    rec = stack.wait_for_record(run, lambda r: r["host"] == "example.org")
    assert rec["decision"] == "denied" and rec["status"].startswith("TCP_DENIED"), rec
    assert rec["error"] == "ERR_ACCESS_DENIED" and rec["http_status"] == 403, rec
    assert rec["client"] == sandbox_ip(run), rec
    assert len(records_where(run, lambda r: r["host"] == "example.org")) == 1


def test_connect_to_ip_literal_is_denied_and_logged(run):
    before = contacts(run, "TCP 443")
    target = f"{run['server_ip']}:443"
    res = stack.probe(run, "connect", target, HOST)
    assert res["status"] == 403 and not res.get("tls"), res
    rec = stack.wait_for_record(run, lambda r: r["url"] == target)
    assert rec["decision"] == "denied" and rec["status"].startswith("TCP_DENIED"), rec
    assert rec["http_status"] == 403, rec
    assert contacts(run, "TCP 443") == before


def test_connect_to_allowed_host_on_other_port_is_denied_and_logged(run):
    before = contacts(run, "TCP 8443")
    res = stack.probe(run, "connect", f"{HOST}:8443", HOST)
    assert res["status"] == 403 and not res.get("tls"), res
    rec = stack.wait_for_record(run, lambda r: r["url"] == f"{HOST}:8443")
    assert rec["decision"] == "denied" and rec["port"] == 8443 and rec["http_status"] == 403, rec
    assert contacts(run, "TCP 8443") == before


def test_plain_http_is_denied_with_403_and_logged(run):
    before = contacts(run, "TCP 80")
    res = stack.probe(run, "http_get", f"http://{HOST}/")
    assert res["status"] == 403, res
    rec = stack.wait_for_record(run, lambda r: r["method"] == "GET" and r["host"] == HOST)
    assert rec["decision"] == "denied" and rec["http_status"] == 403, rec
    assert contacts(run, "TCP 80") == before


def test_sni_fronting_through_allowed_connect_is_terminated(run):
    before = contacts(run, "TCP 443")
    res = stack.probe(run, "connect", f"{HOST}:443", "evil.example.com")
    assert res["status"] == 200 and res["tls"] is False, res
    rec = stack.wait_for_record(run, lambda r: r["sni"] == "evil.example.com")
    assert rec["decision"] == "denied" and rec["bump"] == "terminate", rec
    assert rec["client"] == sandbox_ip(run), rec
    assert contacts(run, "TCP 443") == before
    # One record for the attempt, though the agent port relayed it to the SNI port.
    assert len(records_where(run, lambda r: r["sni"] == "evil.example.com")) == 1


def test_sni_port_is_not_reachable_from_the_sandbox(run):
    # The ssl-bump port listens on the proxy's loopback only; asked for by name or address
    # through the agent port, it is just another non-allowlisted target.
    proxy_host = stack.probe(run, "connect", "egress:3129")["proxy"].split(":")[0]
    res = stack.probe(run, "tcp", proxy_host, "3129")
    assert not res["ok"], res
    for target in ("localhost:3129", "127.0.0.1:3129"):
        res = stack.probe(run, "connect", target)
        assert res["status"] == 403, (target, res)


def test_ignoring_the_proxy_variables_gets_nowhere(run):
    res = stack.probe(run, "https", f"https://{HOST}/", "--no-proxy")
    assert res["ok"] is False and "Name" in res["message"] or "name" in res["message"], res
    res = stack.probe(run, "https", f"https://{run['server_ip']}/", "--no-proxy")
    assert res.get("errname") in ("EHOSTUNREACH", "ENETUNREACH"), res


def test_allowed_host_is_reached_over_tls_through_the_proxy(run):
    before = contacts(run, "HTTPS")
    res = stack.probe(run, "https", f"https://{HOST}/")
    assert res["ok"] and res["status"] == 200, res
    assert "biotool-test-server" in res["body"]
    assert contacts(run, "HTTPS") == before + 1
    rec = stack.wait_for_record(run, lambda r: r["sni"] == HOST and r["decision"] == "allowed")
    assert rec["bump"] == "splice" and rec["status"] == "TCP_TUNNEL", rec
    assert rec["server"] == run["server_ip"] and rec["bytes"] > 0, rec
    assert rec["client"] == sandbox_ip(run), rec
    # One record per attempt: not a second one for the agent port's relay to the SNI port.
    assert len(records_where(run, lambda r: r["host"] == HOST and r["decision"] == "allowed")) == 1


def test_audit_holds_only_the_agents_attempts(run):
    # The proxy's own loopback traffic (relay probes, the start-up warm-up) is no attempt.
    assert all(r["client"] == sandbox_ip(run) for r in stack.audit(run))
