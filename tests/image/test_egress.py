"""The escape matrix: every way out of `sandbox` but the allowlisted one is blocked by a rule.

Each blocked case proves the block is the rules' doing, not an absent internet: the target is
a real server on the egress side that answers the egress container (and logs every contact),
the proxy's log shows the denial, and socket errors are "no route to host" / no DNS answer
rather than a silence. The allowed path reaches that server through the proxy's gate over
TLS (the gate ends TLS with the run's CA, which is all the sandbox trusts). Every target is a
container this module starts; nothing is sent to any outside address.
"""

from __future__ import annotations

import json
import re
import socket
import threading

import pytest

from biotool_testing import certificates, stack
from biotool_testing.images import RUNTIME

HOST = stack.ALLOWED_HOST


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates.server_ca(tmp_path_factory.mktemp("test-ca"), stack.ALLOWED_HOST)


@pytest.fixture(scope="module")
def run(certs, images):
    import docker

    dc = docker.from_env()
    up = stack.launcher("up", "--extra-ca", str(certs["ca"]))
    made = []
    try:
        server, ip = stack.start_outside_server(up, certs)
        made.append(server)
        up["server"], up["server_ip"] = server, ip
        # A host elsewhere: a server on a network of its own, standing in for any public address.
        net = dc.networks.create(f"{up['run']}-elsewhere", labels={"org.biotool.test": "elsewhere"})
        made.append(net)
        far, far_ip = stack.start_outside_server(up, certs, net=net.name)
        made.append(far)
        up["far"], up["far_ip"] = far, far_ip
        yield up
    finally:
        for thing in reversed(made):
            thing.remove(**({"force": True} if hasattr(thing, "exec_run") else {}))
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
    # A host on another network altogether (where a public address would be).
    far_before = sum(1 for line in stack.server_log(run["far"]) if line.startswith("TCP 443"))
    res = stack.probe(run, "tcp", run["far_ip"], "443")
    assert res.get("errname") in ("EHOSTUNREACH", "ENETUNREACH"), res
    assert contacts(run, "TCP 8443") == before
    assert sum(1 for line in stack.server_log(run["far"]) if line.startswith("TCP 443")) == far_before


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


def test_an_overlong_request_still_leaves_its_record(run):
    # 7,000 characters that Squid escapes 3-for-1: uncapped, the line would pass Squid's
    # 8,191-byte limit, be cut, and the denial would leave no record.
    res = stack.probe(run, "http_get", "http://example.net/" + '"' * 7000)
    assert res["status"] == 403, res
    rec = stack.wait_for_record(run, lambda r: r["method"] == "GET" and r["host"] == "example.net")
    assert rec["decision"] == "denied" and rec["url"].startswith('http://example.net/""'), rec
    assert stack.launcher("audit", run["run"])["unparsed_lines"] == 0


def test_sni_fronting_through_allowed_connect_is_terminated(run):
    before = contacts(run, "TCP 443")
    res = stack.probe(run, "connect", f"{HOST}:443", "evil.example.com")
    assert res["status"] == 200 and res["tls"] is False, res
    rec = stack.wait_for_record(run, lambda r: r["sni"] == "evil.example.com")
    assert rec["decision"] == "denied" and rec["event"] == "tls", rec
    assert rec["client"] == sandbox_ip(run), rec
    assert contacts(run, "TCP 443") == before
    assert len(records_where(run, lambda r: r["sni"] == "evil.example.com")) == 1


@pytest.mark.parametrize("sni_hex,why,shown", [
    ("none", "without SNI", None),
    ((HOST.encode() + b"\x00.evil.example.com").hex(), "is not the CONNECT host",
     HOST + "%00.evil.example.com"),
    ((HOST.encode() + b"\nBIOTOOL_GATE {}").hex(), "is not the CONNECT host",
     HOST + "%0ABIOTOOL_GATE%20%7B%7D"),
])
def test_hello_without_sni_or_with_nul_or_newline_is_terminated(run, sni_hex, why, shown):
    # Squid's --client-requested used to fall back to the CONNECT host and splice these.
    before = contacts(run, "TCP 443")
    res = stack.probe(run, "hello", f"{HOST}:443", sni_hex)
    assert res["status"] == 200 and res.get("closed") and not res["server_hello"], res
    rec = stack.wait_for_record(run, lambda r: r["event"] == "tls" and r["sni"] == shown
                                and why in (r["reason"] or ""))
    assert rec["decision"] == "denied" and rec["client"] == sandbox_ip(run), rec
    assert contacts(run, "TCP 443") == before
    # The SNI stays escaped: no forged line, nothing left unparsed.
    assert stack.launcher("audit", run["run"])["unparsed_lines"] == 0


def test_non_tls_inside_the_tunnel_is_denied(run):
    res = stack.probe(run, "hello", f"{HOST}:443", "plain")
    assert res["status"] == 200 and res["reply_head"].startswith("HTTP/1.1 403"), res
    rec = stack.wait_for_record(run, lambda r: r["reason"] == "not TLS inside the tunnel")
    assert rec["decision"] == "denied" and rec["client"] == sandbox_ip(run), rec


@pytest.mark.parametrize("target", [f"{HOST}:0", f"{HOST}:99999"])
def test_connect_to_a_bad_port_is_denied(run, target):
    res = stack.probe(run, "connect", target)
    assert res["status"] in (400, 403), res
    rec = stack.wait_for_record(run, lambda r: r["url"] == target)
    assert rec["decision"] == "denied", rec


@pytest.mark.parametrize("port", ["3130", "3131"])  # the gate; where Squid's records go in
def test_gate_ports_are_not_reachable_from_the_sandbox(run, port):
    # The gate listens on the proxy's loopback only; asked for by name or address through
    # the agent port, it is just another non-allowlisted target.
    proxy_host = stack.probe(run, "connect", f"egress:{port}")["proxy"].split(":")[0]
    res = stack.probe(run, "tcp", proxy_host, port)
    assert not res["ok"], res
    for target in (f"localhost:{port}", f"127.0.0.1:{port}"):
        res = stack.probe(run, "connect", target)
        assert res["status"] == 403, (target, res)


def test_ignoring_the_proxy_variables_gets_nowhere(run):
    res = stack.probe(run, "https", f"https://{HOST}/", "--no-proxy")
    assert res["ok"] is False and "Name" in res["message"] or "name" in res["message"], res
    res = stack.probe(run, "https", f"https://{run['server_ip']}/", "--no-proxy")
    assert res.get("errname") in ("EHOSTUNREACH", "ENETUNREACH"), res


def test_only_the_blast_api_passes_the_gate(run):
    before = contacts(run, "HTTPS")
    res = stack.probe(run, "https", f"https://{HOST}/")
    assert res["ok"] is False and "403" in res["message"], res
    rec = stack.wait_for_record(run, lambda r: r["event"] == "request" and r["url"] == f"https://{HOST}/")
    assert rec["decision"] == "denied" and "BLAST URL API" in rec["reason"], rec
    assert contacts(run, "HTTPS") == before


def test_ten_requests_in_one_tunnel_are_ten_records(run):
    url = f"https://{HOST}/blast/Blast.cgi?CMD=Get&FORMAT_OBJECT=SearchInfo&RID=NOTMINE10"
    res = stack.probe(run, "pipelined", url, "10")
    assert res["statuses"] == [403] * 10, res   # a RID this run never created
    # Each record is written as its request ends, maybe after the probe has its answer.
    recs = [r for r in stack.audit_when(
        run, lambda a: sum(r.get("rid") == "NOTMINE10" for r in a["records"]) >= 10,
        "ten records of NOTMINE10")["records"] if r.get("rid") == "NOTMINE10"]
    assert len(recs) == 10 and len({r["tunnel"] for r in recs}) == 1, recs
    assert all("not created by this run" in r["reason"] for r in recs)


def test_allowed_host_is_reached_over_tls_through_the_gate_and_uploads_are_measured(run):
    before = contacts(run, "HTTPS")
    res = stack.probe(run, "https_post", f"https://{HOST}/blast/Blast.cgi", str(2 << 20))
    assert res["ok"] and res["status"] == 200, res
    # The server's RID carries the bytes it got; the gate rebuilds the Put's answer from the
    # RID and RTOE alone, so none of the server's own words reach the sandbox.
    got = re.search(r"RID = TESTRID(\d+)", res["body"])
    assert got and int(got.group(1)) >= 2 << 20, res["body"]
    assert "biotool-test-server" not in res["body"]
    assert contacts(run, "HTTPS") == before + 1
    rec = stack.wait_for_record(run, lambda r: r["event"] == "request" and r["decision"] == "allowed")
    assert rec["what"] == "put" and rec["sni"] == HOST and rec["http_status"] == 200, rec
    assert rec["bytes_sent"] >= res["sent"] >= 2 << 20, rec   # the whole upload, not 2 KB
    assert rec["bytes_received"] > len(res["body"]), rec
    assert rec["client"] == sandbox_ip(run), rec
    assert len(records_where(run, lambda r: r["decision"] == "allowed")) == 1
    # The tunnel is listed with its totals once closed (its close written as it ends).
    tunnels = stack.audit_when(run, lambda a: any(t["tunnel"] == rec["tunnel"] and not t["open"]
                                                  for t in a["tunnels"]), "the tunnel closed")["tunnels"]
    assert any(t["tunnel"] == rec["tunnel"] and not t["open"] and t["bytes_sent"] >= 2 << 20
               for t in tunnels), tunnels


def test_an_open_tunnel_is_visible_while_open(run):
    # The tunnel stays open until the test has looked (a file it writes ends it), not for a
    # while that a slow host may spend before the first look.
    close = "/tmp/close-the-tunnel"
    code = ("import os, socket, time; s = socket.create_connection(('egress', 3128));"
            f"s.sendall(b'CONNECT {HOST}:443 HTTP/1.1\\r\\nHost: {HOST}:443\\r\\n\\r\\n');"
            f"s.recv(100); end = time.monotonic() + 900\n"
            f"while not os.path.exists('{close}') and time.monotonic() < end: time.sleep(0.2)")
    c = stack.container(run["containers"]["sandbox"])
    c.exec_run(["python3", "-c", code], detach=True)
    try:
        open_now = stack.audit_when(run, lambda a: a["open_tunnels"], "a tunnel listed open")["open_tunnels"]
    finally:
        c.exec_run(["touch", close])
    assert open_now[0]["client"] == sandbox_ip(run), open_now
    # Closed by the client, it is listed open no more.
    stack.audit_when(run, lambda a: a["open_tunnels"] == [], "the tunnel listed closed")


def test_audit_holds_only_the_agents_attempts(run):
    # The proxy's own loopback traffic (its relay check, the start-up warm-up) is no attempt.
    assert all(r["client"] == sandbox_ip(run) for r in stack.audit(run))


def test_doctor_calls_the_stack_enforced_on_its_evidence(run):
    res = stack.launcher("exec", run["run"], "--", "python3", "-m", "biotool.system.enforcement")
    st = json.loads(res["stdout"])
    assert res["exit_code"] == 0 and st["enforced"] is True and st["mode"] == "egress-proxy", st
    assert st["proxy_addresses"] and "is the only way out" in st["reason"], st
    if RUNTIME == "runsc":
        # gVisor's netlink names no link kind: Docker's internal-network shape stands in.
        assert st["links"] == {"eth0": ""} and "gVisor's only link" in st["reason"], st
    else:
        assert st["links"] == {"eth0": "veth"} and "veths on" in st["reason"], st
