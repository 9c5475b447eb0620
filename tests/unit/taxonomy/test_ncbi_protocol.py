"""The BLAST URL API client against the mock NCBI over TLS, on a controllable clock: the
protocol, NCBI's pacing rules, batching, the halving retry, and every failure's message."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from biotool.deadline import Deadline
from biotool.output import ToolFailure
from biotool.taxonomy import sequences
from biotool.taxonomy.ncbi import BlastClient, Settings
from biotool.taxonomy.pacing import Pacer

REPO = Path(__file__).resolve().parents[3]
ARTIC = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
SARS2 = "Severe acute respiratory syndrome coronavirus 2"
HIT_FIELDS = {"accession", "title", "taxid", "sciname", "bit_score", "evalue", "pident",
              "align_len", "query_len", "query_from", "query_to", "hit_from", "hit_to"}


def reads(n: int) -> list:
    return list(sequences.read_fastq(ARTIC))[:n]


def within(seconds: float, clock) -> Deadline:
    """A budget on the test's clock, which moves only when the client sleeps."""
    return Deadline.from_now(seconds, clock.now)


def client(url: str, clock, tmp_path) -> BlastClient:
    s = Settings(url=url, email="agent@example.org", hitlist_size=5)
    pacer = Pacer(tmp_path / "pacing", s.min_interval, s.poll_interval, clock.now, clock.sleep)
    return BlastClient(s, pacer, clock=clock.now)


def test_protocol_and_pacing_follow_ncbi_rules(serve_mock, clock, tmp_path):
    mock, url, _ = serve_mock(clock=clock.now, rtoe=30, ready_after=150)
    out = client(url, clock, tmp_path).search(reads(100), top=5, budget=within(3600, clock))

    reqs = mock.requests
    puts = [r for r in reqs if r["what"] == "put"]
    assert [r["queries"] for r in puts] == [40, 40, 20]  # at most 40 per submission
    for r in puts:
        assert r["method"] == "POST"
        assert r["params"].items() >= {"CMD": "Put", "PROGRAM": "blastn", "DATABASE": "nt",
                                    "HITLIST_SIZE": "5", "FORMAT_TYPE": "JSON2_S",
                                    "tool": "biotool", "email": "agent@example.org"}.items()
    # Never two contacts within 10 s, on the shared (fake) clock of client and server.
    times = [r["t"] for r in reqs]
    assert min(b - a for a, b in zip(times, times[1:])) >= 10.0
    for put in puts:
        polls = [r["t"] for r in reqs if r["what"] == "poll" and r["rid"] == put["rid"]]
        assert polls[0] - put["t"] >= 30.0  # waited RTOE before the first poll
        assert len(polls) >= 2 and all(b - a >= 60.0 for a, b in zip(polls, polls[1:]))
        gets = [r for r in reqs if r["what"] == "get" and r["rid"] == put["rid"]]
        assert len(gets) == 1 and gets[0]["params"]["FORMAT_TYPE"] == "JSON2_S"
    assert mock.violations == []

    assert len(out.searched) == 100 and out.truncated is False
    best = [out.hits[q][0]["sciname"] for q in out.searched if out.hits[q]]
    assert len(best) >= 90 and set(best) == {SARS2}
    # Only taxonomic and alignment fields come back (no sequences, no midlines).
    assert all(set(h) == HIT_FIELDS for q in out.searched for h in out.hits[q])


def test_the_mock_flags_a_client_that_breaks_the_rules(serve_mock, clock, tmp_path):
    mock, url, _ = serve_mock(clock=clock.now)
    s = Settings(url=url)
    rude = BlastClient(s, Pacer(tmp_path / "p", 0.0, 0.0, clock.now, clock.sleep),
                       clock=clock.now)
    rude.search(reads(2), top=1, budget=within(60, clock))
    assert any("after the previous request" in v for v in mock.violations)


def test_truncated_json_halves_the_batch_and_merges(serve_mock, clock, tmp_path):
    mock, url, _ = serve_mock(clock=clock.now, mode="truncate", truncate_above=10)
    out = client(url, clock, tmp_path).search(reads(40), top=3, budget=within(36000, clock))
    sizes = Counter(r["queries"] for r in mock.requests if r["what"] == "put")
    assert sizes == Counter({40: 1, 20: 2, 10: 4})
    assert out.where["halvings"] == 3
    assert sorted(out.searched) == sorted(q for q, _ in reads(40))
    assert mock.violations == []


def test_a_single_query_still_truncated_is_a_failure(serve_mock, clock, tmp_path):
    _, url, _ = serve_mock(clock=clock.now, mode="truncate", truncate_above=0)
    with pytest.raises(ToolFailure, match="alone still gives a truncated reply"):
        client(url, clock, tmp_path).search(reads(2), top=3, budget=within(36000, clock))


@pytest.mark.parametrize("mode,message", [
    ("norid", r"gave no RID for the submission of 3 queries: got an HTML page titled "
              r"'NCBI Blast: Error'"),
    ("ratelimit", r"refused the submission with a rate-limit page \(HTTP 200"),
    ("ratelimit429", r"rate-limit page \(HTTP 429"),
    ("failed", r"RID \w+: Status=FAILED; the search failed at NCBI"),
    ("unknown", r"RID \w+: Status=UNKNOWN; NCBI does not know this RID"),
    ("empty", r"RID \w+: empty report; the search failed \(this is not 'nothing found'\)"),
    ("emptyjson", r"empty report \(no BlastOutput2 entries\)"),
    ("html", r"got an HTML page titled 'NCBI - Too Many Requests' instead of the JSON report"),
    ("redirect", r"answered the submission with HTTP 302: an HTML page titled 'Moved'"),
])
def test_each_failure_has_its_own_message(serve_mock, clock, tmp_path, mode, message):
    _, url, _ = serve_mock(clock=clock.now, mode=mode)
    with pytest.raises(ToolFailure, match=message) as err:
        client(url, clock, tmp_path).search(reads(3), top=3, budget=within(3600, clock))
    assert err.value.exit_code == 4


def test_never_ready_stops_at_the_timeout(serve_mock, clock, tmp_path):
    mock, url, _ = serve_mock(clock=clock.now, mode="never", rtoe=20)
    start = clock.now()
    with pytest.raises(ToolFailure, match=r"did not finish within --timeout 600 s \(RID \w+ "
                                          r"still WAITING after 10 polls\)"):
        client(url, clock, tmp_path).search(reads(3), top=3, budget=within(600, clock))
    polls = [r["t"] for r in mock.requests if r["what"] == "poll"]
    assert len(polls) == 10 and polls[-1] - start <= 600  # 20 s RTOE, then once a minute
    assert mock.violations == []


def test_timeout_with_some_batches_done_is_partial(serve_mock, clock, tmp_path):
    _, url, _ = serve_mock(clock=clock.now, ready_after=100)
    out = client(url, clock, tmp_path).search(reads(100), top=3, budget=within(165, clock))
    assert out.truncated is True
    assert 0 < len(out.searched) < 100


def test_env_cannot_shorten_the_intervals_for_ncbi(monkeypatch):
    monkeypatch.setenv("BIOTOOL_NCBI_MIN_INTERVAL", "0.01")
    monkeypatch.setenv("BIOTOOL_NCBI_POLL_INTERVAL", "0.01")
    monkeypatch.delenv("BIOTOOL_NCBI_URL", raising=False)
    s = Settings.from_env()
    assert (s.url, s.min_interval, s.poll_interval) == (
        "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi", 10.0, 60.0)
    monkeypatch.setenv("BIOTOOL_NCBI_MIN_INTERVAL", "30")
    assert Settings.from_env().min_interval == 30.0  # lengthening is always allowed
    monkeypatch.setenv("BIOTOOL_NCBI_MIN_INTERVAL", "0.01")
    for spelling in ("https://BLAST.NCBI.NLM.NIH.GOV./blast/Blast.cgi",
                     "https://blast.ncbi.nlm.nih.gov:0443/blast/Blast.cgi"):
        monkeypatch.setenv("BIOTOOL_NCBI_URL", spelling)
        s = Settings.from_env()
        assert (s.min_interval, s.poll_interval) == (10.0, 60.0), spelling
    monkeypatch.setenv("BIOTOOL_NCBI_URL", "https://localhost:8443/blast/Blast.cgi")
    monkeypatch.setenv("BIOTOOL_NCBI_MIN_INTERVAL", "0.01")
    assert Settings.from_env().min_interval == 0.01  # a mock server may be paced faster


@pytest.mark.parametrize("body,message", [
    (b"\xef\xbb\xbf<!DOCTYPE html><html><head><title>Service unavailable</title>",
     r"got an HTML page titled 'Service unavailable' instead of the JSON report"),
    (b"  \n", r"empty report; the search failed"),
    (b"[]", r"empty report \(no BlastOutput2 entries\)"),
    (b'{"BlastOutput2": [{"report": {"results": {"search": {"hits": [7]}}}}]}',
     r"report 1 has malformed hits"),
    (b"Status=WAITING", r"reply is not JSON: 'Status=WAITING'"),
])
def test_odd_report_bodies_are_named_never_read_as_nothing_found(body, message):
    from biotool.taxonomy.ncbi import parse_report

    with pytest.raises(ToolFailure, match=message):
        parse_report(body, "RID1", ["q1"], 5)


def test_a_report_keeps_only_taxonomic_and_alignment_fields():
    import json

    from biotool.taxonomy.ncbi import parse_report

    hit = {"num": 1, "description": [{"id": "gi|1|ref|NC_045512.2|", "accession": "NC_045512",
                                      "title": "SARS-CoV-2 isolate Wuhan-Hu-1", "taxid": 2697049,
                                      "sciname": "Severe acute respiratory syndrome coronavirus 2",
                                      "extra": "dropped"}],
           "len": 29903, "hsps": [{"bit_score": 180.0, "evalue": 1e-40, "identity": 99,
                                   "align_len": 100, "query_from": 1, "query_to": 100,
                                   "hit_from": 5, "hit_to": 104, "qseq": "ACGT" * 25,
                                   "hseq": "ACGT" * 25, "midline": "|" * 100, "gaps": 0}]}
    body = json.dumps({"BlastOutput2": [{"report": {"results": {"search": {
        "query_title": "q1 read", "query_len": 120, "hits": [hit]}}}}]}).encode()
    got = parse_report(body, "RID1", ["q1"], 5)["q1"][0]
    assert set(got) == HIT_FIELDS
    assert got["pident"] == 99.0 and got["sciname"].startswith("Severe acute")
