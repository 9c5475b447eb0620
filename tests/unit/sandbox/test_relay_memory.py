"""Issue 47 (3): the site relay's memory. About 8 concurrent 8 MB Puts from 4 hosts OOM-killed
it: a waiting request kept its decoded QUERY and form (15.8 MB for an 8 MB FASTA, 39 MB with
a character above U+FFFF) while the budget counted bodies only. Now a waiting request keeps
its canonical form (never longer than its body) and the budget's parts are measured here with
tracemalloc on real parses of 8 MB Puts (sizes, never times); admission is per run, per gate
certificate and in all; and a gate's run id survives its restart (the relay binds RIDs to it).
"""

from __future__ import annotations

import gc
import hashlib
import re
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path
from urllib.parse import quote

import pytest

from biotool_testing import certificates, mock_ncbi, scripts

REPO = Path(__file__).resolve().parents[3]
EGRESS = REPO / "image" / "egress"
HOST = "blast.ncbi.nlm.nih.gov"
blastrequest = scripts.module(EGRESS / "blastrequest.py")
upstream = scripts.module(EGRESS / "upstream.py")
relay_mod = scripts.module(EGRESS / "relay.py")
gatekeeper = scripts.module(EGRESS / "gatekeeper.py")
MB = 1 << 20
MARGIN = 0.10  # of the memory limit, left free in the worst case the budget admits


def put_of_size(size: int, title: str = ">q1") -> bytes:
    """A Put's form body of exactly `size` bytes (the gate's encoding): 60-letter lines."""
    head = ("CMD=Put&PROGRAM=blastn&DATABASE=core_nt&FORMAT_TYPE=JSON2_S&QUERY="
            + quote(title + "\n", safe="")).encode()
    line = b"ACGT" * 15 + b"%0A"
    body = head + line * ((size - len(head)) // len(line))
    return body + b"A" * (size - len(body))


SHAPES = {"letters": put_of_size(blastrequest.MAX_BODY),
          "above U+FFFF": put_of_size(blastrequest.MAX_BODY, ">q1 \U0001F600")}


def measured(body: bytes) -> tuple[int, int]:
    """(the parse's peak beside its body, what the waiting request then holds), in bytes, as
    the relay does it: parse, keep Pending, drop the Request."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        request = blastrequest.parse("POST", body)
        pending = relay_mod.Pending.of(request)
        del request
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert pending.kind == "put" and len(pending.form) > body.count(b"ACGT")
    return peak - base, held - base


@pytest.fixture(scope="module")
def sizes():
    return {name: measured(body) for name, body in SHAPES.items()}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_waiting_put_holds_no_more_than_its_body(sizes, shape):
    """The decoded QUERY (4 bytes a character once one is above U+FFFF) is never kept."""
    peak, held = sizes[shape]
    assert held <= blastrequest.MAX_BODY + 64 * 1024, f"{shape}: {held / MB:.1f} MB held"
    assert peak <= relay_mod.PARSE_PEAK, f"{shape}: the parse peaked at {peak / MB:.1f} MB"


@pytest.mark.parametrize("raw", [
    b"CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=%3Eq%0A%41%43%47%54",   # letters escaped
    b"CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=%3Eq+%2A%F0%9F%98%80%0AACGT*",
    b"CMD=Put&PROGRAM=%62lastn&DATABASE=nt&QUERY=%3Eq%7E.%5F%0Aac-gt%2D",
])
def test_the_canonical_form_is_never_longer_than_the_body(raw):
    """Why a request's reservation (its body's length) also covers its held form."""
    assert len(relay_mod.Pending.of(blastrequest.parse("POST", raw)).form) <= len(raw)


def _limit(text: str) -> int:
    m = re.fullmatch(r"(\d+)([mM]i?)", text)
    assert m, text
    return int(m.group(1)) << 20


def test_the_budget_fits_the_relays_memory_limit_with_margin(sizes):
    """Worst case the relay admits: the process, every request byte the budget allows held as
    waiting Puts of the worst shape, one parse at its measured peak and one reply."""
    k8s = re.search(r"limits: \{cpu: [^,]+, memory: (\w+)\}", (REPO / "k8s" / "relay.yaml")
                    .read_text())
    docs = re.search(r"--memory (\w+) \\\n\s+-v biotool-relay-state",
                     (REPO / "docs" / "relay.md").read_text())
    assert k8s and docs
    assert _limit(k8s.group(1)) == _limit(docs.group(1)) == relay_mod.MEMORY_LIMIT
    worst_peak = max(p for p, _ in sizes.values())
    worst_held = max(h for _, h in sizes.values())
    waiting = relay_mod.BODY_BUDGET // blastrequest.MAX_BODY  # Puts the budget lets wait at once
    assert waiting >= 8  # the red team's shape: 8 Puts of 8 MB from 4 hosts
    total = (relay_mod.BASELINE + waiting * worst_held + relay_mod.PARSES * worst_peak
             + relay_mod.REPLY_PEAK)
    assert total <= (1 - MARGIN) * relay_mod.MEMORY_LIMIT, f"{total / MB:.0f} MB"
    # What the old relay kept per waiting Put would not have fit (why it was OOM-killed).
    old = tracemalloc_request_size(SHAPES["above U+FFFF"])
    assert relay_mod.BASELINE + waiting * old > relay_mod.MEMORY_LIMIT


def tracemalloc_request_size(body: bytes) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        request = blastrequest.parse("POST", body)
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    del request
    return held


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_relay_at_rest_is_well_inside_its_baseline():
    """BASELINE also covers MAX_CONNECTIONS connections' buffers: the process alone is half."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import relay; print(next("
            "l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))")
    out = subprocess.run([sys.executable, "-c", code, str(EGRESS)], capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(REPO / "entrypoints")})
    assert int(out.stdout) * 1024 <= relay_mod.BASELINE // 2


def test_eight_puts_from_four_hosts_are_admitted_and_a_ninth_refused():
    adm = relay_mod.Admission()
    n = blastrequest.MAX_BODY
    for host in range(4):
        for run in range(2):
            assert adm.take(f"host-{host}", f"run-{run}", n) is None
    assert "too many request bodies" in adm.take("host-9", "run-0", n)
    assert adm.total.used == 8 * n  # a refusal takes nothing
    adm.give("host-0", "run-0", n)
    assert adm.take("host-9", "run-0", n) is None


def test_two_runs_holding_puts_do_not_block_a_third_run_of_their_host():
    adm = relay_mod.Admission()
    n = blastrequest.MAX_BODY
    assert adm.take("host-1", "run-a", n) is None
    assert adm.take("host-1", "run-b", n) is None
    assert adm.take("host-1", "run-c", n) is None  # was 503 (then 502) with a per-host cap only
    why = adm.take("host-1", "run-a", 1)             # one run: one request at a time
    assert why and "per run" in why
    assert adm.take("host-1", "run-d", n) is None
    why = adm.take("host-1", "run-e", n)             # one host: half the site's budget
    assert why and "per gate certificate" in why
    assert adm.take("host-2", "run-e", n) is None
    assert adm.runs[("host-1", "run-e")].used == 0 and adm.hosts["host-1"].used == 4 * n


def test_stable_run_id_survives_a_restart_and_replaces_a_bad_file(tmp_path):
    first = gatekeeper.stable_run_id(str(tmp_path))
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert gatekeeper.stable_run_id(str(tmp_path)) == first  # the gate started again
    (tmp_path / gatekeeper.RUN_ID_FILE).write_text("not an id\n")
    assert gatekeeper.stable_run_id(str(tmp_path)) not in (first, "not an id")
    assert gatekeeper.stable_run_id(None) is None
    assert [p.name for p in tmp_path.iterdir()] == [gatekeeper.RUN_ID_FILE]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    base = tmp_path_factory.mktemp("relay-memory")
    certs = certificates.relay_site(base / "site", "localhost", gates=("gate-a",))
    up = certificates.server_ca(base / "up", HOST, ca_name="upstream CA")
    mock = mock_ncbi.MockNCBI("ok", rtoe=0)
    mock.port = mock.serve(0, "127.0.0.1", up["cert"], up["key"])
    state = base / "state"
    state.mkdir()
    relay = relay_mod.Relay(str(certs["relay"]), str(state), extra_ca=up["ca"], min_interval=0.0,
                            hold_s=60.0, upstream_address=("127.0.0.1", mock.port))
    server = relay_mod.RelayServer(("127.0.0.1", 0), relay)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield certs, mock, relay, server.server_address[1]
    server.shutdown()
    server.server_close()
    mock.close()


def test_an_8_mb_put_reaches_upstream_from_its_held_form(site):
    """The held form is sent as it is: the mock decodes the same QUERY the gate sent, and
    every byte the relay reserved is given back."""
    certs, mock, relay, port = site
    body = SHAPES["above U+FFFF"]
    query = blastrequest.parse("POST", body).params["QUERY"]
    ctx = upstream.relay_client_context(str(certs["gate-a"]))
    reply = upstream.send("localhost", port, ctx, "POST", "/Blast.cgi", body,
                          extra={upstream.RUN_HEADER: "run-a"}, connect_s=120.0)
    assert reply.status == 200 and b"RID" in reply.data
    assert mock.requests[-1]["query_sha256"] == hashlib.sha256(query.encode()).hexdigest()
    assert relay.admission.total.used == 0
    assert relay.admission.runs[("gate-a", "run-a")].used == 0
