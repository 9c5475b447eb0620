"""Issue 47, item 5 (Low): NCBI pages that are no answer reach the agent as fixed phrases, a
CR-only FASTA's records are each counted, and an over-long line's 414 reaches the client."""

from __future__ import annotations

import gzip
import socket
import ssl
import threading
from pathlib import Path

import pytest

from biotool_testing import certificates, scripts

EGRESS = Path(__file__).resolve().parents[3] / "image" / "egress"
blastrequest = scripts.module(EGRESS / "blastrequest.py")
blastreply = scripts.module(EGRESS / "blastreply.py")
gate_mod = scripts.module(EGRESS / "gate.py")
serving = scripts.module(EGRESS / "serving.py")
tunnel = scripts.module(EGRESS / "tunnel.py")
HOST = "blast.ncbi.nlm.nih.gov"

PAGES = {
    "rate": (b"<html><body>Too Many Requests: you exceeded the rate limit</body></html>",
             "Too Many Requests"),
    "error": (b"<html><body>Error: Query contains no sequence data</body></html>",
              "Error: Query contains no sequence data."),
    "cpu": (b"<p>CPU usage limit was exceeded</p>", "Too Many Requests"),
    "gzip": (gzip.compress(b"<html>RID = ABCDEF123</html>"), "does not pass on"),
    "relay": (b"biotool relay: refused: the relay's NCBI schedule is unusable\n",
              "does not pass on"),
    "empty": (b"", "does not pass on"),
}


@pytest.mark.parametrize("kind", ["put", "poll", "fetch"])
@pytest.mark.parametrize("page", sorted(PAGES))
def test_a_page_that_is_no_answer_passes_its_fixed_phrase(kind, page):
    body, phrase = PAGES[page]
    out = blastreply.filter_reply(kind, body).decode()
    assert phrase in out
    assert "ABCDEF123" not in out and "relay" not in out and "schedule" not in out
    assert "QBlastInfoBegin" not in out  # no RID, no Status: nothing to pass


def test_a_cr_only_fasta_counts_each_record():
    for sep in ("\r", "\n", "\r\n"):
        query = sep.join([">a", "ACGTACGT", ">b", "ACGTAAAA", ">c", "GGGGCCCC"]) + sep
        raw = b"CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=" + \
            query.replace("\r", "%0D").replace("\n", "%0A").replace(">", "%3E").encode()
        request = blastrequest.parse("POST", raw)
        found = gate_mod.searched(request)
        assert request.records == 3 and found["query_records"] == 3, repr(sep)
    # The titles' digest is the same whatever the line ends: the same three titles.
    digests = set()
    for sep in ("\r", "\n"):
        query = sep.join([">a", "ACGT", ">b", "ACGT"])
        digests.add(gate_mod.searched(blastrequest.Request("put", {"QUERY": query}, "", 2))
                    ["titles_sha256"])
    assert len(digests) == 1


@pytest.fixture()
def gate_port(tmp_path):
    cas = certificates.server_ca(tmp_path / "ca", HOST, ca_name="run CA")
    state = tmp_path / "state"
    state.mkdir()
    g = gate_mod.Gate([(HOST, 443)], cas["cert"], cas["key"], str(state))
    server = tunnel.GateServer(("127.0.0.1", 0), g)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server.server_address[1], ssl.create_default_context(cafile=cas["ca"])
    server.shutdown()
    server.server_close()


def _tls(port: int, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(f"CONNECT {HOST}:443 HTTP/1.1\r\nHost: {HOST}:443\r\n\r\n".encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    return ctx.wrap_socket(sock, server_hostname=HOST)


@pytest.mark.parametrize("length", [70_000, 300_000])
def test_an_over_long_lines_414_reaches_the_client(gate_port, length):
    tls = _tls(*gate_port)
    line = b"GET /blast/Blast.cgi?" + b"A" * length + b" HTTP/1.1\r\nHost: " + \
        HOST.encode() + b"\r\n\r\n"
    tls.sendall(line)
    got = b""
    while chunk := tls.recv(65536):
        got += chunk
    tls.close()
    assert got.startswith(b"HTTP/1.1 414"), got[:200]
    assert b"request line too long" in got


def test_linger_stops_at_its_byte_bound_and_at_quiet(monkeypatch):
    # A client that never stops sending is cut at LINGER_BYTES; a quiet one costs one short wait.
    a, b = socket.socketpair()
    try:
        stop = threading.Event()

        def flood():
            try:
                while not stop.is_set():
                    a.sendall(b"x" * 65536)
            except OSError:
                pass

        t = threading.Thread(target=flood, daemon=True)
        t.start()
        serving.linger(b, seconds=600.0, limit=1 << 20)  # returns by bytes, not by time
        stop.set()
        b.close()
        t.join(30)
        assert not t.is_alive()
    finally:
        a.close()
    c, d = socket.socketpair()
    with c, d:
        serving.linger(d, seconds=600.0)  # nothing comes: returns after its quiet wait
