"""Issue 47, item 4: one agent cannot fill the run's 16 MB audit store within an episode.

Counted records are written once per key and then updated in place, each key keeps at
most KEEP_WINDOWS bursts in a run, and the destinations a counted flood of Squid's lines
reached are listed once each, up to DESTINATION_BYTES in the run, so a flood of every kind of
record (at the longest each can be) stops growing the store; what still grows it is allowed
requests, which NCBI's interval paces. And no destination hides behind decoys (issue 47). The clock is injected and the agent's rate is unbounded (every window gets
more than a burst of every kind), so the verdicts are about bytes, never about speed.
"""

from __future__ import annotations

import json
from pathlib import Path

from biotool_sandbox import audit as host_audit
from biotool_testing import scripts

EGRESS = Path(__file__).resolve().parents[3] / "image" / "egress"
auditstore = scripts.module(EGRESS / "auditstore.py")
audit = scripts.module(EGRESS / "audit.py")

INTERVAL = 10.5         # the gate's NCBI interval: at most one allowed request per this
KINDS = auditstore.MAX_KEYS + 8  # more kinds than the store gives slots of their own
# The longest an episode's store is in use: the Slurm template's whole job (hpc/episodes.sbatch,
# 4 h for 10 episodes); a task's own timeout is 10 to 30 minutes.
EPISODE_S = 4 * 3600


class Clock:
    def __init__(self):
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        return self.t


def _capped(text: str, limit: int = audit.FIELD_CAP) -> str:
    return audit.cap(text * (limit // len(text) + 2), limit)


def gate_denial(clock: Clock, kind: int) -> dict:
    """A denied request's record with every string field at its cap (the largest it can be)."""
    return {"time": clock(), "tunnel": _capped("t", 64), "client": "172.18.0.3",
            "event": "request", "request": 10**9, "host": _capped("h"), "port": 443,
            "sni": _capped("s"), "method": _capped("M"), "url": _capped("u", audit.URL_CAP),
            "decision": "denied", "reason": _capped("r"), "http_status": 403,
            "bytes_sent": 10**9, "bytes_received": 10**9, "code": f"code-{kind}"}


def squid_line(clock: Clock, n: int) -> str:
    """One of Squid's records at render.py's field widths (the longest Squid writes)."""
    url = f"h{n}.invalid:443" + "x" * 1480
    return (f"BIOTOOL_EGRESS {clock():.3f} 172.18.0.3 {'C' * 32} {url[:1500]} {'d' * 300} 443 "
            f"{'S' * 40} 403 {'E' * 60} 3900 97\n")


def allowed_pair(store, clock: Clock, n: int) -> None:
    """An allowed Put: its `decided` record (owing its outcome) and the outcome."""
    rec = {**gate_denial(clock, 0), "decision": "allowed", "what": "put", "code": None,
           "request": n, "query_sha256": "0" * 64, "titles_sha256": "0" * 64}
    assert store.write({**rec, "event": "decided"}) == auditstore.KEPT
    assert store.write(rec, "owed") == auditstore.KEPT


def flood_window(store, clock: Clock, sent: dict) -> None:
    """One WINDOW of the worst flood: more than a burst of every kind, tunnel openings and
    their closes included, with the store's periodic writes of its counts (flush_every)."""
    for kind in range(KINDS):
        for _ in range(store.burst + 2):
            if kind % 2:
                store.write_proxy(squid_line(clock, sent["proxy"]), f"proxy kind {kind}", 403)
                sent["proxy"] += 1
            else:
                store.write(gate_denial(clock, kind))
                sent["gate"] += 1
    for _ in range(store.burst + 2):
        opened = store.write({"time": clock(), "event": "open", "decision": "allowed",
                              "url": _capped("o"), "tunnel": _capped("t", 64)})
        store.write({"time": clock(), "event": "close", "decision": "allowed", "reason": "closed",
                     "tunnel": _capped("t", 64)}, "owed" if opened == auditstore.KEPT else "count")
    for _ in range(int(store.window / auditstore.FLUSH_EVERY)):
        clock.t += auditstore.FLUSH_EVERY
        store.flush()


def test_a_flood_of_every_kind_stops_growing_the_store(tmp_path):
    clock = Clock()
    store = auditstore.Store(str(tmp_path / "audit.jsonl"), clock=clock, holds=("gate", "proxy"))
    sent = {"gate": 0, "proxy": 0}
    sizes = []
    listing = []
    for w in range(auditstore.OPEN_KEEP_WINDOWS + 5):
        flood_window(store, clock, sent)
        sizes.append(store.size)
        if w in (auditstore.KEEP_WINDOWS, auditstore.KEEP_WINDOWS + 1):
            listing.append(_listing_bytes(store))
    # Past the last kind's last burst (the openings'), the counts change in place only.
    assert sizes[-1] == sizes[auditstore.OPEN_KEEP_WINDOWS], sizes[-6:]
    grown = sizes[auditstore.KEEP_WINDOWS + 1] - sizes[auditstore.KEEP_WINDOWS]
    assert grown - (listing[1] - listing[0]) < 40_000
    # Every destination was new: the listing spent its budget, and no more than that.
    assert 0.9 * auditstore.DESTINATION_BYTES < _listing_bytes(store) <= auditstore.DESTINATION_BYTES
    assert not store.full and store.size < store.max_bytes - auditstore.RESERVE
    print(f"a flood of {KINDS} kinds for {len(sizes)} min holds the store at "
          f"{store.size / 2**20:.2f} MB of {store.max_bytes / 2**20:.0f} MB")
    # Every record is accounted for: kept, or counted in its key's slot.
    report = host_audit.report(None, None, Path(store.path).read_text(), {})
    assert report["unparsed_lines"] == 0
    assert report["counts"]["denied"] == sent["gate"] + sent["proxy"]
    slots = [r for r in report["records"] if r["event"] == "suppressed"]
    assert len(slots) <= auditstore.MAX_KEYS + 4  # one per key, a shared one past MAX_KEYS
    # Each of Squid's lines named a destination of its own: each is named, or counted.
    floods = [r for r in slots if r["source"] == "proxy"]
    assert all(len(r["destinations"]["kept"]) + r["destinations"]["more"] == r["count"]
               for r in floods)


def test_time_to_fill_under_the_worst_shape_is_past_any_episode(tmp_path):
    # The flood above, and beside it an allowed request at every NCBI interval (the only
    # records no bound counts away): the store fills only after EPISODE_S, if ever.
    clock = Clock()
    store = auditstore.Store(str(tmp_path / "audit.jsonl"), clock=clock, holds=("gate", "proxy"))
    sent = {"gate": 0, "proxy": 0}
    start, n = clock(), 0
    for _ in range(auditstore.OPEN_KEEP_WINDOWS + 1):
        begin = clock()
        flood_window(store, clock, sent)
        t = begin
        while t < clock():
            allowed_pair(store, clock, n)
            n += 1
            t += INTERVAL
    grown = store.size  # the flood's bounded part, and the allowed pairs so far
    pair = len(audit.line(audit.GATE, {**gate_denial(clock, 0), "event": "decided"})) * 2
    rate = pair / INTERVAL  # bytes a second that still grow the store
    elapsed = clock() - start
    fill_s = elapsed + (store.max_bytes - auditstore.RESERVE - grown) / rate
    print(f"worst shape: {grown / 2**20:.2f} MB after {elapsed / 60:.0f} min, then "
          f"{rate * 60 / 1024:.1f} KB/min: full after {fill_s / 3600:.1f} h")
    assert not store.full
    assert fill_s > EPISODE_S


def test_a_counted_flood_is_updated_in_place_not_rewritten(tmp_path):
    clock = Clock()
    store = auditstore.Store(str(tmp_path / "audit.jsonl"), clock=clock, holds=("gate", "proxy"),
                             burst=1)
    for i in range(3):
        store.write_proxy(squid_line(clock, i), "k", 403)
    store.flush()
    size = Path(store.path).stat().st_size
    for i in range(3, 2000):
        clock.t += 0.01
        store.write_proxy(squid_line(clock, i), "k", 403)
        store.write(gate_denial(clock, 1))  # anything kept writes the counts first
        store.flush()
    gate_kept = store.burst * (auditstore.KEEP_WINDOWS)  # this window's burst of gate denials
    text = Path(store.path).read_text()
    lines = text.splitlines()
    counted = [json.loads(l.split(" ", 1)[1]) for l in lines if '"suppressed"' in l]
    proxy = [c for c in counted if c.get("source") == "proxy"]
    assert len(proxy) == 1 and proxy[0]["count"] == 1999
    assert proxy[0]["destinations_listed"] == 1999 and proxy[0]["destinations_more"] == 0
    # Only the one kept gate denial, the one gate slot and the destinations, each listed once,
    # were added: no record per update.
    grown = Path(store.path).stat().st_size - size - _listing_bytes(store)
    assert grown < 6_000 + gate_kept * 2_000
    report = host_audit.report(None, None, text, {})
    assert report["counts"]["denied"] == 2000 + 1997
    flood = [r for r in report["records"] if r["event"] == "suppressed" and r["source"] == "proxy"]
    assert flood[0]["destinations"]["kept"] == [_host(squid_line(clock, i)) for i in range(1, 2000)]


def _listing_bytes(store) -> int:
    """Bytes of the store's `destinations` records."""
    with open(store.path, "rb") as fh:
        return sum(len(line) for line in fh if b'"event":"destinations"' in line)


def _host(line: str) -> str:
    return line.split(" ")[4][:200]


def _proxy_floods(store) -> list[dict]:
    store.flush()
    report = host_audit.report(None, None, Path(store.path).read_text(), {})
    return [r for r in report["records"] if r["event"] == "suppressed" and r["source"] == "proxy"]


def _deny(store, clock: Clock, host: str) -> None:
    clock.t += 0.01
    line = (f"BIOTOOL_EGRESS {clock():.3f} 172.18.0.3 CONNECT {host}:443 - 443 "
            f"TCP_DENIED/403 403 ERR_ACCESS_DENIED 3900 97\n")
    store.write_proxy(line, "the proxy ended it: CONNECT, TCP_DENIED/403, ERR_ACCESS_DENIED, 403", 403)


def test_no_marker_hides_behind_decoys(tmp_path):
    """The red team's shape: a burst that is kept, 16 decoy hosts, then the 3 hosts it wants,
    in one window and again in a later one: all 3 are named in the audit."""
    clock = Clock()
    store = auditstore.Store(str(tmp_path / "audit.jsonl"), clock=clock, holds=("gate", "proxy"))
    for i in range(store.burst):
        _deny(store, clock, f"burst{i}.invalid")
    for i in range(16):
        _deny(store, clock, f"decoy{i}.invalid")
    for name in ("marker-a", "marker-b", "marker-c"):
        _deny(store, clock, f"{name}.example")
    clock.t += 5 * store.window
    for i in range(40):
        _deny(store, clock, f"late-decoy{i}.invalid")
    _deny(store, clock, "marker-d.example")
    [flood] = _proxy_floods(store)
    named = flood["destinations"]["kept"]
    assert {"marker-a.example:443", "marker-b.example:443", "marker-c.example:443",
            "marker-d.example:443"} <= set(named)
    # Counted: all but each window's first burst, which is kept whole (and named in its line).
    assert flood["count"] == 16 + 3 + 40 + 1 - store.burst
    assert len(named) == flood["count"] and flood["destinations"]["more"] == 0


def test_past_the_budget_the_latest_are_named_and_the_rest_counted(tmp_path, monkeypatch):
    """Once the run's listing has spent DESTINATION_BYTES, a flood's slot keeps its latest
    DESTINATIONS and counts the lines to the others: markers sent last are named, and markers
    pushed out by later decoys are counted, never silently gone."""
    monkeypatch.setattr(auditstore, "DESTINATION_BYTES", 4096)
    clock = Clock()
    store = auditstore.Store(str(tmp_path / "audit.jsonl"), clock=clock, holds=("gate", "proxy"),
                             burst=1)
    for i in range(400):
        _deny(store, clock, f"decoy{i}.invalid")
    for name in ("marker-a", "marker-b", "marker-c"):
        _deny(store, clock, f"{name}.example")
    [flood] = _proxy_floods(store)
    assert {"marker-a.example:443", "marker-b.example:443",
            "marker-c.example:443"} <= set(flood["destinations"]["kept"])
    assert len(flood["destinations"]["kept"]) + flood["destinations"]["more"] == flood["count"]
    for i in range(auditstore.DESTINATIONS):
        _deny(store, clock, f"after{i}.invalid")
    _deny(store, clock, "decoy1.invalid")  # listed before: named already, no line unaccounted
    [flood] = _proxy_floods(store)
    assert "marker-a.example:443" not in flood["destinations"]["kept"]
    assert len(set(flood["destinations"]["kept"])) + flood["destinations"]["more"] == flood["count"] - 1
    assert _listing_bytes(store) <= 4096


def test_a_restarted_gates_floods_keep_their_own_destinations(tmp_path):
    """A restarted gate numbers its floods afresh: each flood's listing still joins its own
    record, never the earlier gate's flood of the same number."""
    clock = Clock()
    path = str(tmp_path / "audit.jsonl")
    first = auditstore.Store(path, clock=clock, holds=("gate", "proxy"), burst=1)
    for i in range(3):
        _deny(first, clock, f"before{i}.invalid")
    first.flush()
    second = auditstore.Store(path, clock=clock, burst=1)
    for i in range(3):
        _deny(second, clock, f"after{i}.invalid")
    floods = sorted(_proxy_floods(second), key=lambda r: r["time"])
    assert [f["destinations"]["kept"] for f in floods] == [
        ["before1.invalid:443", "before2.invalid:443"], ["after1.invalid:443", "after2.invalid:443"]]
    # And the listing's budget is the run's: a restart starts from what is already listed.
    assert auditstore.Store(path, clock=clock).listed_bytes == _listing_bytes(second) > 0
