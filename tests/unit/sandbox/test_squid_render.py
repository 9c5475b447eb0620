"""squid.conf rendering from the rules file (image/egress/render.py), without Squid or docker."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from biotool import rules

REPO = Path(__file__).resolve().parents[3]
RENDER = REPO / "image" / "egress" / "render.py"
_spec = importlib.util.spec_from_file_location("egress_render", RENDER)
render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render)


def conf_for(*allow: str) -> str:
    parsed = rules.parse("[egress]\nallow = [" + ", ".join(f'"{a}"' for a in allow) + "]\n")
    return render.render(parsed.egress_allow, cert="/run/egress/c.pem", key="/run/egress/c.key")


def directives(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_default_rules_allow_only_blast_connect_and_sni():
    lines = directives(render.render(rules.load(REPO / "image" / "rules.toml").egress_allow,
                                     cert="/c", key="/k"))
    assert "acl allow0_host dstdomain -n blast.ncbi.nlm.nih.gov" in lines
    assert "acl allow0_port port 443" in lines
    assert "http_access allow CONNECT allow0_host allow0_port" in lines
    assert "acl allowed_sni ssl::server_name --client-requested blast.ncbi.nlm.nih.gov" in lines
    assert [l for l in lines if l.startswith("http_access allow")] == [
        "http_access allow CONNECT allow0_host allow0_port"]


def test_deny_order_ip_literals_and_plain_http_before_any_allow_and_deny_all_last():
    lines = [l for l in directives(conf_for("blast.ncbi.nlm.nih.gov:443")) if l.startswith("http_access")]
    assert lines[:2] == ["http_access deny ip_literal", "http_access deny !CONNECT"]
    assert lines[-1] == "http_access deny all"


def test_ssl_bump_peeks_then_splices_allowed_sni_and_terminates_the_rest():
    bump = [l for l in directives(conf_for("blast.ncbi.nlm.nih.gov:443")) if l.startswith("ssl_bump")]
    assert bump == ["ssl_bump peek step1", "ssl_bump splice allowed_sni", "ssl_bump terminate all"]


def test_agent_port_has_no_ssl_bump_so_denials_are_plain_403s():
    # On an ssl-bump port Squid answers a denied CONNECT "200 Connection established" and
    # serves the error over TLS with its own certificate; the agent-facing port must not bump.
    ports = [l for l in directives(conf_for("blast.ncbi.nlm.nih.gov:443")) if l.startswith("http_port")]
    assert ports == [
        "http_port 3128 name=agent",
        "http_port 127.0.0.1:3129 name=sni ssl-bump tls-cert=/run/egress/c.pem "
        "tls-key=/run/egress/c.key generate-host-certificates=off",
    ]


def test_allowed_connects_reach_upstream_only_through_the_loopback_sni_port():
    lines = directives(conf_for("blast.ncbi.nlm.nih.gov:443"))
    assert "cache_peer 127.0.0.1 parent 3129 0 no-query no-digest no-netdb-exchange name=sni_relay" in lines
    assert [l for l in lines if l.startswith("cache_peer_access")] == [
        "cache_peer_access sni_relay allow agent_port", "cache_peer_access sni_relay deny all"]
    assert "acl on_sni_port localport 3129" in lines
    # Only the SNI port goes direct; anything else (the agent port) never does.
    assert [l for l in lines if l.startswith(("always_direct", "never_direct"))] == [
        "always_direct allow on_sni_port", "never_direct allow all"]
    # Both ports apply the same http_access rules (the SNI port re-checks the relay).
    assert not [l for l in lines if l.startswith("http_access") and ("agent_port" in l or "sni_port" in l)]


def test_relay_carries_the_agents_address_trusted_only_from_loopback_on_the_sni_port():
    lines = directives(conf_for("blast.ncbi.nlm.nih.gov:443"))
    assert [l for l in lines if l.startswith("follow_x_forwarded_for")] == [
        "follow_x_forwarded_for allow sni_port from_loopback", "follow_x_forwarded_for deny all"]
    assert "forwarded_for on" in lines and "via off" in lines


def test_one_log_line_per_attempt_skipping_the_relay_and_the_proxys_own_traffic():
    lines = directives(conf_for("blast.ncbi.nlm.nih.gov:443"))
    assert [l for l in lines if l.startswith("access_log")] == [
        "access_log stdio:/dev/stdout logformat=biotool !relayed !warm_up"]
    assert "acl relayed all-of agent_port via_sni_port" in lines
    assert "acl warm_up all-of agent_port from_loopback" in lines


def test_warm_up_with_an_empty_allowlist_has_nothing_to_do():
    assert render.warm_up([], port=1, tries=1, pause=0) is True


def test_warm_up_sends_an_allowed_connect_from_loopback_until_the_relay_answers_200():
    import socket
    import threading
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    seen = []

    def serve():
        for answer in (b"HTTP/1.1 500 Internal Server Error\r\n\r\n",
                       b"HTTP/1.1 200 Connection established\r\n\r\n"):
            conn, _ = listener.accept()
            with conn:
                seen.append(conn.recv(4096))
                conn.sendall(answer)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        assert render.warm_up([("blast.ncbi.nlm.nih.gov", 443)], port=listener.getsockname()[1],
                              tries=5, pause=0) is True
    finally:
        t.join(5)
        listener.close()
    assert len(seen) == 2
    assert seen[0].startswith(b"CONNECT blast.ncbi.nlm.nih.gov:443 HTTP/1.1\r\n")


def test_warm_up_gives_up_when_nothing_listens():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    assert render.warm_up([("blast.ncbi.nlm.nih.gov", 443)], port=port, tries=2, pause=0) is False


def test_port_never_decrypts_and_caches_nothing():
    text = conf_for("blast.ncbi.nlm.nih.gov:443")
    assert "ssl_bump bump" not in text and "ssl_bump stare" not in text
    assert "cache deny all" in text and "cache_dir" not in text


def test_each_pair_gets_its_own_host_and_port_acl():
    lines = directives(conf_for("a.example.org:443", "b.example.org:8443"))
    assert "http_access allow CONNECT allow0_host allow0_port" in lines
    assert "acl allow1_host dstdomain -n b.example.org" in lines
    assert "acl allow1_port port 8443" in lines
    assert "acl allowed_sni ssl::server_name --client-requested a.example.org b.example.org" in lines


def test_empty_allowlist_denies_everything_and_splices_nothing():
    lines = directives(conf_for())
    assert not [l for l in lines if l.startswith("http_access allow")]
    assert [l for l in lines if l.startswith("ssl_bump")] == ["ssl_bump peek step1", "ssl_bump terminate all"]


def test_ip_literal_regex_catches_v4_and_v6_but_not_names():
    import re
    v4, v6 = re.compile(render.IPV4_LITERAL), re.compile(render.IPV6_LITERAL)
    for lit in ("93.184.216.34", "2130706433", "[2606:4700::1111]", "::1"):
        assert v4.match(lit) or v6.match(lit), lit
    for name in ("blast.ncbi.nlm.nih.gov", "example.com", "a1.b2"):
        assert not (v4.match(name) or v6.match(name)), name


@pytest.mark.parametrize("entry,needle", [
    (("93.184.216.34", 443), "IP literal"),
    (("[::1]", 443), "IP literal"),
    (("bad host", 443), "not a plain DNS host name"),
    (("evil.com\nhttp_access allow all", 443), "not a plain DNS host name"),
    ((".example.com", 443), "not a plain DNS host name"),
    (("*.example.com", 443), "not a plain DNS host name"),
    (("example.com", 0), "no valid TCP port"),
    (("example.com", 70000), "no valid TCP port"),
])
def test_unsafe_allow_entries_are_refused_naming_the_entry(entry, needle):
    with pytest.raises(render.RenderError, match=needle):
        render.render([entry], cert="/c", key="/k")


def test_rules_file_with_ip_literal_exits_2_naming_the_entry(tmp_path):
    bad = tmp_path / "rules.toml"
    bad.write_text('[egress]\nallow = ["10.0.0.1:443"]\n')
    out = tmp_path / "squid.conf"
    proc = subprocess.run([sys.executable, str(RENDER), "--rules", str(bad), "--out", str(out),
                           "--cert", "/c", "--key", "/k"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "10.0.0.1:443" in proc.stderr and "IP literal" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_writes_the_rendered_config(tmp_path):
    out = tmp_path / "squid.conf"
    proc = subprocess.run([sys.executable, str(RENDER), "--rules", str(REPO / "image" / "rules.toml"),
                           "--out", str(out), "--cert", "/c", "--key", "/k"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "dstdomain -n blast.ncbi.nlm.nih.gov" in out.read_text()


def test_log_format_and_audit_parser_name_the_same_fields():
    from biotool_sandbox import audit
    assert tuple(name for name, _ in render.LOG_FIELDS) == audit.FIELDS
    assert render.LOG_PREFIX == audit.PREFIX


def test_warm_up_cli_with_empty_allowlist_creates_the_ready_file(tmp_path):
    rules_file = tmp_path / "rules.toml"
    rules_file.write_text("[egress]\nallow = []\n")
    ready = tmp_path / "ready"
    proc = subprocess.run([sys.executable, str(RENDER), "--rules", str(rules_file), "--warm-up",
                           "--ready-file", str(ready)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert ready.exists()
