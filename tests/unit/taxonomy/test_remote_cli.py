"""`biotool taxonomy` remote, as the agent runs it: a subprocess talking TLS to the mock NCBI,
directly or through a CONNECT proxy; exit codes and one-line errors."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from biotool_testing.contract import error_line

REPO = Path(__file__).resolve().parents[3]
ARTIC = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
SARS2 = "Severe acute respiratory syndrome coronavirus 2"
FAST = {"BIOTOOL_NCBI_MIN_INTERVAL": "0", "BIOTOOL_NCBI_POLL_INTERVAL": "0"}


def test_remote_search_returns_hits_summary_and_provenance(biotool, serve_mock):
    mock, url, env = serve_mock(min_interval=0, poll_interval=0)
    r = biotool("taxonomy", "--fastq", str(ARTIC), "--sample", "50", "--remote",
                "--email", "agent@example.org", env={**env, **FAST})
    assert r.code == 0, r.stderr
    out = r.json
    assert out["mode"] == "remote" and out["n"] == 50
    assert out["summary"]["dominant"] == SARS2
    assert out["search"]["server"] == "localhost" and len(out["search"]["rids"]) == 2
    assert [q["queries"] for q in mock.requests if q["what"] == "put"] == [40, 10]
    assert all(q["params"]["email"] == "agent@example.org" for q in mock.requests)
    used = out["provenance"]["used"][0]
    assert used["kind"] == "service" and used["rids"] == out["search"]["rids"]
    assert "qseq" not in r.stdout and "midline" not in r.stdout


def test_reachable_proxy_makes_remote_the_default_and_only_connects_to_blast(
        biotool, serve_mock, proxy):
    mock, url, env = serve_mock(min_interval=0, poll_interval=0)
    port = url.split(":")[2].split("/")[0]
    r = biotool("taxonomy", "--fastq", str(ARTIC), "--sample", "10",
                env={**env, **FAST, "HTTPS_PROXY": f"http://127.0.0.1:{proxy.port}"})
    assert r.code == 0, r.stderr
    assert r.json["mode"] == "remote" and "egress proxy" in r.json["mode_reason"]
    targets = [line.rsplit(" ", 1)[0] for line in proxy.lines]
    assert targets == [f"CONNECT localhost:{port}"] * len(mock.requests)
    assert [q["what"] for q in mock.requests] == ["put", "poll", "get"]


def test_host_off_the_allowlist_is_exit_3_and_never_reaches_the_proxy(biotool, serve_mock, proxy):
    _, _, env = serve_mock()
    r = biotool("taxonomy", "--fastq", str(ARTIC), "--sample", "3", "--remote",
                env={**env, "BIOTOOL_NCBI_URL": "https://example.org/blast/Blast.cgi",
                     "HTTPS_PROXY": f"http://127.0.0.1:{proxy.port}"})
    assert r.code == 3
    assert "host example.org:443 is not on the egress allowlist" in r.stderr.splitlines()[-1]
    assert proxy.accepted == 0 and r.stdout == ""


def test_remote_failures_are_exit_4_with_one_line(biotool, serve_mock):
    for mode, message in (("failed", "Status=FAILED"), ("html", "instead of the JSON report"),
                          ("norid", "gave no RID"), ("empty", "empty report; the search failed"),
                          ("redirect", "answered the submission with HTTP 302")):
        _, _, env = serve_mock(mode=mode, min_interval=0, poll_interval=0)
        r = biotool("taxonomy", "--fastq", str(ARTIC), "--sample", "3", "--remote",
                    env={**env, **FAST})
        error_line(r, message, code=4)


def test_remote_timeout_with_nothing_done_is_exit_4(biotool, serve_mock):
    _, _, env = serve_mock(mode="never", min_interval=0, poll_interval=0)
    r = biotool("taxonomy", "--fastq", str(ARTIC), "--sample", "3", "--remote", "--timeout",
                "2", env={**env, "BIOTOOL_NCBI_MIN_INTERVAL": "0.2",
                          "BIOTOOL_NCBI_POLL_INTERVAL": "0.5"})
    assert r.code == 4 and "did not finish within --timeout 2 s" in r.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_mock_runs_standalone_over_tls(biotool, test_ca, tmp_path):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "biotool_testing" / "mock_ncbi.py"), "--port",
                             str(port), "--host", "127.0.0.1", "--tls-cert", test_ca["cert"],
                             "--tls-key", test_ca["key"], "--rtoe", "1"],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert "mock NCBI BLAST (ok)" in proc.stderr.readline()
        deadline = time.monotonic() + 60  # listening, however slowly the host started it
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"the mock never listened on {port}"
                time.sleep(0.1)
        rules = tmp_path / "rules.toml"
        rules.write_text(f'[egress]\nallow = ["localhost:{port}"]\n')
        env = {"BIOTOOL_RULES": str(rules), "SSL_CERT_FILE": test_ca["ca"],
               "BIOTOOL_NCBI_URL": f"https://localhost:{port}/blast/Blast.cgi",
               "BIOTOOL_NCBI_PACING_DIR": str(tmp_path / "pacing"), **FAST}
        r = biotool("taxonomy", "--fastq", str(ARTIC), "--sample", "4", "--remote", env=env)
        assert r.code == 0, r.stderr
        assert r.json["summary"]["dominant"] == SARS2
        ctx = ssl.create_default_context(cafile=test_ca["ca"])
        with urllib.request.urlopen(f"https://localhost:{port}/_mock/requests",
                                    context=ctx) as resp:
            log = json.load(resp)
        assert [q["what"] for q in log["requests"]] == ["put", "poll", "get"]
        assert log["requests"][1]["t"] - log["requests"][0]["t"] >= 1.0  # waited RTOE
        # The standalone mock checks NCBI's real intervals; test pacing was shortened.
        assert any("after the previous request" in v for v in log["violations"])
    finally:
        proc.terminate()
        proc.wait(60)


def test_bad_remote_options_are_exit_2_before_any_contact(biotool, serve_mock):
    mock, _, env = serve_mock(min_interval=0, poll_interval=0)
    for args, message in ((["--database", "nt&CMD=Delete"], "is not an NCBI BLAST database"),
                          (["--timeout", "nan"], "'--timeout': nan is not a finite number."),
                          (["--timeout", "1e300"], "'--timeout': 1e300 is not in the range "
                                                   "0<x<=604800."),
                          (["--top", "0"], "'--top': 0 is not in the range 1<=x<=50."),
                          (["--sample", "0"], "'--sample': 0 is not in the range x>=1.")):
        r = biotool("taxonomy", "--fastq", str(ARTIC), "--remote", *args, env={**env, **FAST})
        error_line(r, message)
    assert mock.requests == []
