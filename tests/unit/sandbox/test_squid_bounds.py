"""Issue 47, item 1: what one agent can make Squid hold is bounded in the rendered squid.conf
(render.py), against the egress's own memory limit in compose.yaml. Without Squid or docker;
the attack itself runs against the real image in tests/image/test_egress_flood.py."""

from __future__ import annotations

import io
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from biotool import rules
from biotool_sandbox import audit as host_audit
from biotool_sandbox.engine import budget
from biotool_testing import scripts

REPO = Path(__file__).resolve().parents[3]
RENDER = REPO / "image" / "egress" / "render.py"
render = scripts.module(RENDER)
gate = scripts.module(REPO / "image" / "egress" / "gate.py")

# The red team's shape (issue 47): this many connections, each an unfinished head this long.
FLOOD_CONNECTIONS = 8_500
FLOOD_HEAD = 60 << 10
IDLE_EGRESS = 48 << 20  # the egress's measured resident size at rest (issue 47)

SIZES = {"KB": 1 << 10, "MB": 1 << 20, "bytes": 1}
SECONDS = {"seconds": 1, "second": 1, "minutes": 60, "minute": 60}


def directives(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def conf() -> dict[str, str]:
    text = render.render(rules.load(REPO / "image" / "rules.toml").egress_allow)
    out = {}
    for line in directives(text):
        name, _, value = line.partition(" ")
        out.setdefault(name, value)
    return out


def amount(value: str, units: dict[str, int]) -> int:
    m = re.fullmatch(r"(\d+)\s+(\w+)", value)
    assert m and m.group(2) in units, value
    return int(m.group(1)) * units[m.group(2)]


def test_connections_are_capped_per_client_and_in_all():
    c = conf()
    per_client = int(c["client_ip_max_connections"])
    fds = int(c["max_filedescriptors"])
    # Above what an agent uses (the gate relays at most MAX_TUNNELS tunnels of a run at once),
    # far below the flood, and the whole descriptor table above the per-client cap.
    assert gate.MAX_TUNNELS < per_client < FLOOD_CONNECTIONS // 10
    assert per_client < fds <= 4096


def test_unfinished_heads_are_cut_within_seconds():
    c = conf()
    for name in ("request_start_timeout", "request_timeout", "client_idle_pconn_timeout"):
        assert 1 <= amount(c[name], SECONDS) <= 30, (name, c[name])


def test_a_flood_head_is_over_the_head_cap_and_the_buffer_holds_a_head():
    c = conf()
    head = amount(c["request_header_max_size"], SIZES)
    buffer = amount(c["client_request_buffer_max_size"], SIZES)
    # Squid refuses to start unless its read buffer is larger than the head cap.
    assert head < buffer
    # A CONNECT head is a few hundred bytes; the flood's 60 KB head is refused on arrival.
    assert 1 << 10 <= head < FLOOD_HEAD
    assert (head, buffer) == (render.REQUEST_HEADER_MAX, render.REQUEST_BUFFER_MAX)


def test_the_worst_the_flood_can_hold_fits_the_egress_limit_with_margin():
    limit = budget.egress_limit(REPO / "compose.yaml")
    assert limit == 512 << 20
    # Every connection Squid can hold at once, each at its worst (its buffer full, its
    # kernel socket buffers full), on top of the egress at rest: under half the limit.
    assert IDLE_EGRESS + render.memory_bound() < limit // 2
    # The red team's shape: the per-client cap holds all of it but CLIENT_MAX_CONNECTIONS
    # connections, each of which holds at most the head cap before it is refused.
    held = min(FLOOD_CONNECTIONS, render.CLIENT_MAX_CONNECTIONS) * render.CONNECTION_COST
    assert held < 16 << 20
    # Before (no cap, a 64 KB head cap, 5-minute timeouts): 8,500 x 60 KB of heads alone.
    assert FLOOD_CONNECTIONS * FLOOD_HEAD > limit - IDLE_EGRESS


def test_the_bounds_come_before_any_access_rule_and_are_rendered_once():
    lines = directives(render.render(()))
    names = [l.split(" ", 1)[0] for l in lines]
    for name in ("client_ip_max_connections", "max_filedescriptors", "request_timeout",
                 "request_start_timeout", "request_header_max_size",
                 "client_request_buffer_max_size"):
        assert names.count(name) == 1, name
        assert names.index(name) < names.index("http_access")


@pytest.mark.skipif(shutil.which("squid") is None, reason="no squid binary on this host")
def test_squid_parses_the_rendered_config(tmp_path):
    path = tmp_path / "squid.conf"
    path.write_text(render.render(rules.load(REPO / "image" / "rules.toml").egress_allow,
                                  access_log="none"))
    res = subprocess.run(["squid", "-k", "parse", "-f", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "FATAL" not in res.stderr


# ---- the flood's record: connections closed at the cap are in the store (squidlog --warnings)

auditstore = scripts.module(REPO / "image" / "egress" / "auditstore.py")
squidlog = scripts.module(REPO / "image" / "egress" / "squidlog.py")
WARNING = b"2026/12/06 04:18:09| WARNING: 172.18.0.3:45182 attempting more than 64 connections.\n"


def test_a_cap_warning_becomes_a_denied_record_naming_the_client():
    line = squidlog.cap_record(WARNING, 1796530000.5)
    rec = host_audit.parse_line(line.decode())
    assert rec is not None and rec["decision"] == "denied" and rec["client"] == "172.18.0.3"
    assert "per-client connection cap" in rec["reason"] and rec["time"] == 1796530000.5
    assert squidlog.check(line[:-1]) is not None  # the listener keeps it like Squid's own
    v6 = squidlog.cap_record(WARNING.replace(b"172.18.0.3", b"[fd00::3]"), 1.0)
    assert host_audit.parse_line(v6.decode())["client"] == "fd00::3"
    # Only the whole warning, from its timestamp: text inside another line is no record.
    for other in (b"x " + WARNING, WARNING.replace(b"64 connections.", b"64 connections. x"),
                  b"2026/12/06 04:18:09| WARNING: a b attempting more than 64 connections.\n",
                  b"2026/12/06 04:18:09| Accepting HTTP Socket connections at conn2\n"):
        assert squidlog.cap_record(other, 1.0) is None, other


def test_an_unfinished_heads_timeout_reads_as_what_it_was():
    line = ("BIOTOOL_EGRESS 1796530699.010 172.18.0.3 - error:transaction-end-before-headers - - "
            "NONE_NONE 000 ERR_REQUEST_PARSE_TIMEOUT 7041 0")
    rec = host_audit.parse_line(line)
    assert rec["decision"] == "error" and "unfinished request head" in rec["reason"]


def test_the_filter_echoes_squids_log_and_stores_each_cap_warning(tmp_path):
    store = auditstore.Store(str(tmp_path / "audit.jsonl"), holds=("gate", "proxy"), burst=5)
    listener = squidlog.start(("127.0.0.1", 0), store)
    try:
        other = b"2026/12/06 04:18:09| storeLateRelease: released 0 objects\n"
        text = other + WARNING * 40 + other
        out = io.BytesIO()
        squidlog.relay_warnings(io.BytesIO(text), out, listener.server_address,
                                clock=lambda: 1796530000.0)
        assert out.getvalue() == text  # the container log keeps every line as it was
        deadline = time.monotonic() + 30   # the listener's thread stores what it was sent
        while sum(store.denied.values()) < 40 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        listener.shutdown()
        listener.server_close()
    store.flush()
    report = host_audit.report(None, None, Path(store.path).read_text(), {})
    assert report["counts"]["denied"] == 40 and report["store"]["suppressed"] == 35
    assert all("connection cap" in r["reason"] for r in report["records"])


def test_the_filter_without_a_listener_still_echoes_and_ends():
    out = io.BytesIO()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    squidlog.relay_warnings(io.BytesIO(WARNING * 3), out, ("127.0.0.1", port))
    assert out.getvalue() == WARNING * 3
