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


def test_port_never_decrypts_and_caches_nothing():
    text = conf_for("blast.ncbi.nlm.nih.gov:443")
    assert "http_port 3128 ssl-bump tls-cert=/run/egress/c.pem tls-key=/run/egress/c.key " \
           "generate-host-certificates=off" in text
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
