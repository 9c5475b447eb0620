"""squid.conf rendering from the rules file (image/egress/render.py), without Squid or docker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from biotool import rules
from biotool_testing import scripts

REPO = Path(__file__).resolve().parents[3]
RENDER = REPO / "image" / "egress" / "render.py"
render = scripts.module(RENDER)


def conf_for(*allow: str) -> str:
    parsed = rules.parse("[egress]\nallow = [" + ", ".join(f'"{a}"' for a in allow) + "]\n")
    return render.render(parsed.egress_allow)


def directives(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_default_rules_allow_only_blast_connect():
    lines = directives(render.render(rules.load(REPO / "image" / "rules.toml").egress_allow))
    assert "acl allow0_host dstdomain -n blast.ncbi.nlm.nih.gov" in lines
    assert "acl allow0_port port 443" in lines
    assert [l for l in lines if l.startswith("http_access allow")] == [
        "http_access allow CONNECT allow0_host allow0_port"]


def test_deny_order_ip_literals_and_plain_http_before_any_allow_and_deny_all_last():
    lines = [l for l in directives(conf_for("blast.ncbi.nlm.nih.gov:443")) if l.startswith("http_access")]
    assert lines[:2] == ["http_access deny ip_literal", "http_access deny !CONNECT"]
    assert lines[-1] == "http_access deny all"


def test_squid_does_no_tls_and_never_goes_direct():
    # Squid never splices, bumps or connects out: allowed CONNECTs go to the gate only.
    lines = directives(conf_for("blast.ncbi.nlm.nih.gov:443"))
    assert [l for l in lines if l.startswith("http_port")] == ["http_port 3128 name=agent"]
    assert not [l for l in lines if l.startswith(("ssl_bump", "always_direct", "tls_"))]
    assert "never_direct allow all" in lines
    assert "cache_peer 127.0.0.1 parent 3130 0 no-query no-digest no-netdb-exchange name=gate" in lines
    assert "forwarded_for on" in lines and "via off" in lines


def test_squid_logs_what_it_ends_and_leaves_relayed_tunnels_to_the_gate():
    # The same records twice: to the container log, and to the gate, which keeps them in the
    # run's store (squidlog.py); Squid drops what the gate cannot take rather than wait.
    lines = directives(conf_for("blast.ncbi.nlm.nih.gov:443"))
    assert [l for l in lines if l.startswith("access_log")] == [
        "access_log stdio:/dev/stdout logformat=biotool !to_gate !from_loopback",
        f"access_log tcp://127.0.0.1:{render.SQUID_LOG_PORT} logformat=biotool buffer-size=1MB "
        "on-error=drop !to_gate !from_loopback"]
    assert "acl to_gate hier_code FIRSTUP_PARENT ANY_OLD_PARENT DEFAULT_PARENT" in lines
    assert render.SQUID_LOG_PORT not in (render.GATE_PORT, 3128)


def test_without_an_allowlist_there_is_no_gate_and_no_store_to_log_to():
    assert [l for l in directives(conf_for()) if l.startswith("access_log")] == [
        "access_log stdio:/dev/stdout logformat=biotool !to_gate !from_loopback"]


def test_every_log_field_has_a_width_cap_that_keeps_a_line_under_squids_limit():
    import re
    widths = []
    for name, code in render.LOG_FIELDS:
        m = re.search(r"\.(\d+)", code)
        if name in ("time", "client", "port", "http_status", "bytes_sent", "bytes_received"):
            widths.append(40)  # numbers and addresses Squid makes itself
            continue
        assert m, f"field {name} ({code}) has no maximum width"
        widths.append(int(m.group(1)))
    # Even if a capped field were escaped after the cut (3 bytes a character), one line fits.
    assert len(render.LOG_PREFIX) + sum(3 * w + 1 for w in widths) < 8191


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


def test_caches_nothing():
    text = conf_for("blast.ncbi.nlm.nih.gov:443")
    assert "cache deny all" in text and "cache_dir" not in text


def test_each_pair_gets_its_own_host_and_port_acl():
    lines = directives(conf_for("a.example.org:443", "b.example.org:8443"))
    assert "http_access allow CONNECT allow0_host allow0_port" in lines
    assert "acl allow1_host dstdomain -n b.example.org" in lines
    assert "acl allow1_port port 8443" in lines


def test_empty_allowlist_denies_everything():
    lines = directives(conf_for())
    assert not [l for l in lines if l.startswith("http_access allow")]


def test_ip_literal_regex_catches_v4_and_v6_but_not_names():
    import re
    v4, v6 = re.compile(render.IPV4_LITERAL), re.compile(render.IPV6_LITERAL)
    for lit in ("93.184.216.34", "2130706433", "[2606:4700::1111]", "::1"):
        assert v4.match(lit) or v6.match(lit), lit
    for name in ("blast.ncbi.nlm.nih.gov", "example.com", "a1.b2"):
        assert not (v4.match(name) or v6.match(name)), name


@pytest.mark.parametrize("entry,needle", [
    ("93.184.216.34:443", "IP literal"),
    ("[::1]:443", "IP literal"),
    ("2130706433:443", "not a plain DNS host name"),  # an address some resolvers accept
    ("bad host:443", "not a plain DNS host name"),
    ("evil.com\\nhttp_access allow all:443", "not a plain DNS host name"),
    (".example.com:443", "not a plain DNS host name"),
    ("*.example.com:443", "not a plain DNS host name"),
    ("example.com:0", "no valid TCP port"),
    ("example.com:70000", "no valid TCP port"),
])
def test_unsafe_allow_entries_are_refused_naming_the_entry(entry, needle):
    # Validated once, by the rules reader: nothing unproved reaches render().
    with pytest.raises(rules.RulesError, match=needle) as err:
        conf_for(entry)
    assert "egress.allow entry" in str(err.value) and "\n" not in str(err.value)


def test_rules_file_with_ip_literal_exits_2_naming_the_entry(tmp_path):
    bad = tmp_path / "rules.toml"
    bad.write_text('[egress]\nallow = ["10.0.0.1:443"]\n')
    out = tmp_path / "squid.conf"
    proc = subprocess.run([sys.executable, str(RENDER), "--rules", str(bad), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "10.0.0.1:443" in proc.stderr and "IP literal" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_writes_the_rendered_config(tmp_path):
    out = tmp_path / "squid.conf"
    proc = subprocess.run([sys.executable, str(RENDER), "--rules", str(REPO / "image" / "rules.toml"),
                           "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "dstdomain -n blast.ncbi.nlm.nih.gov" in out.read_text()


def test_warm_up_cli_with_empty_allowlist_creates_the_ready_file(tmp_path):
    rules_file = tmp_path / "rules.toml"
    rules_file.write_text("[egress]\nallow = []\n")
    ready = tmp_path / "ready"
    proc = subprocess.run([sys.executable, str(RENDER), "--rules", str(rules_file), "--warm-up",
                           "--ready-file", str(ready)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert ready.exists()


def test_hosts_cli_prints_the_names_the_gate_certificate_covers(tmp_path):
    rules_file = tmp_path / "rules.toml"
    rules_file.write_text('[egress]\nallow = ["b.example.org:443", "a.example.org:8443", "b.example.org:8443"]\n')
    proc = subprocess.run([sys.executable, str(RENDER), "--rules", str(rules_file), "--hosts"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.split() == ["a.example.org", "b.example.org"]
