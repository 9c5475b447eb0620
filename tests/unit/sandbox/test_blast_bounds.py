"""The BLAST request policy's bounds (image/egress/blastrequest.py, blastreply.py, upstream.py), issue 38: a
request's and a reply's memory are bounded by construction, whatever their shape, and the
line rules are NCBI's (ASCII), not Python's. Peaks are measured with tracemalloc against
limits far under the egress container's 512 MB (compose.yaml) and the relay's 256 MB."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from urllib.parse import quote

import pytest

from biotool_testing import certificates, mock_ncbi, scripts

REPO = Path(__file__).resolve().parents[3]
EGRESS = REPO / "image" / "egress"
blastrequest = scripts.module(EGRESS / "blastrequest.py")
blastreply = scripts.module(EGRESS / "blastreply.py")
upstream = scripts.module(EGRESS / "upstream.py")
MB = 1 << 20
HEAD = b"CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY="


def peak(fn, *args, **kw):
    """(result or the exception raised, peak bytes allocated while it ran)."""
    tracemalloc.start()
    try:
        try:
            out = fn(*args, **kw)
        except Exception as exc:  # noqa: BLE001 - the refusal is the result here
            out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def fill(unit: bytes, prefix: bytes = HEAD) -> bytes:
    return prefix + unit * ((blastrequest.MAX_BODY - len(prefix)) // len(unit))


def test_one_letter_lines_under_the_body_cap_are_refused_in_bounded_memory():
    body = fill(b"A%0A")  # ~2.1 million one-letter lines: 516 MB in the old parse
    assert len(body) <= blastrequest.MAX_BODY
    out, used = peak(blastrequest.parse, "POST", body)
    assert isinstance(out, blastrequest.Refused) and "more than 250000 lines" in out.reason
    assert used < 2 * blastrequest.MAX_BODY, used  # the value's one copy, the lines before the cap


def test_a_full_body_of_fasta_is_accepted_in_bounded_memory():
    body = fill(b"ACGT" * 15 + b"%0A", HEAD + b"%3Eread_1%0A")
    out, used = peak(blastrequest.parse, "POST", body)
    assert isinstance(out, blastrequest.Request), out
    assert out.records == 1 and len(out.params["QUERY"]) > 0.9 * blastrequest.MAX_BODY
    # The value, the decoded text and the canonical form (each at most the body's size) and
    # their pieces: a few times the body, never a function of how many lines it holds.
    assert used < 5 * blastrequest.MAX_BODY, used


def test_fasta_with_long_titles_is_bounded_by_the_title_cap():
    title = quote("x" * blastrequest.MAX_TITLE_LINE, safe="").encode()
    ok = HEAD + b"".join(b"%3E" + title + b"%0AACGTACGT%0A" for _ in range(90))
    out, used = peak(blastrequest.parse, "POST", ok)
    assert isinstance(out, blastrequest.Request) and out.records == 90
    assert used < 2 * MB, used
    long_title = fill(b"x", HEAD + b"%3E")
    out, used = peak(blastrequest.parse, "POST", long_title)
    assert isinstance(out, blastrequest.Refused) and "over 1000 characters" in out.reason
    assert used < 1.5 * blastrequest.MAX_BODY, used
    many = HEAD + b"%3Et%0AA%0A" * (blastrequest.MAX_QUERY_RECORDS + 1)
    out = peak(blastrequest.parse, "POST", many)[0]
    assert isinstance(out, blastrequest.Refused) and "more than 100 FASTA records" in out.reason


def test_a_non_ascii_title_keeps_memory_bounded():
    out, used = peak(blastrequest.parse, "POST", fill(b"ACGT" * 15 + b"%0A",
                                                  HEAD + b"%3E%C3%A9t%C3%A9%0A"))
    assert isinstance(out, blastrequest.Request)
    assert used < 8 * blastrequest.MAX_BODY, used  # one wide character widens the decoded text


def test_other_values_are_short_and_never_decoded_whole():
    out, used = peak(blastrequest.parse, "POST", fill(b"%41", b"CMD=Put&email="))
    assert isinstance(out, blastrequest.Refused) and "email is over 1024 bytes" in out.reason
    assert used < 1.5 * blastrequest.MAX_BODY
    out, used = peak(blastrequest.parse, "POST", fill(b"&"))
    assert isinstance(out, blastrequest.Refused) and used < 2 * MB


@pytest.mark.parametrize("query,why", [
    ("\xa0>q1\nACGT\n", "line 1 holds"),                       # NBSP: Python strips it, NCBI not
    (" >q1\nACGT\n", "whitespace before '>'"),
    (">q1\nAC\x0bGT\n", "line 2 holds"),                        # \v: a line break to Python only
    (">q1\nACGT\x1c>NC_045512.2\n", "line 2 holds"),
    (">q1\nACGT\u2028NC_045512.2\n", "line 2 holds"),
    (">q1 \u2028x\nACGT\n", "holds a control character"),
    (">q1\nACGT\n>q2\n", "the last FASTA record holds none"),
    (">q1\nÄCGT\n", "line 2 holds"),                            # non-ASCII outside a title
])
def test_line_rules_are_ncbis_ascii_ones(query, why):
    with pytest.raises(blastrequest.Refused, match=why):
        blastrequest.parse("POST", HEAD + quote(query, safe="").encode())


def test_crlf_and_cr_line_ends_and_tabs_are_what_ncbi_reads():
    for query in (">q1\r\nACGT\r\n>q2\r\nAC\tGT\r\n", ">q1\rACGT\r>q2\rACGT", "ACGT ACGT\n"):
        req = blastrequest.parse("POST", HEAD + quote(query, safe="").encode())
        assert req.params["QUERY"] == query
    # A CR LF split across two decoding chunks is one line end, not two.
    query = ">q1\n" + "A" * (blastrequest.DECODE_CHUNK - 5) + "\r\n" + "ACGT\n"
    assert blastrequest.parse("POST", HEAD + query.replace("\n", "%0A").replace(
        "\r", "%0D").replace(">", "%3E").encode()).records == 1


def test_database_comes_from_ncbis_names():
    for db in ("NC_045512.2", "MN908947", "nt.00", "a" * 64):
        with pytest.raises(blastrequest.Refused, match="NCBI's BLAST database names"):
            blastrequest.parse("POST", f"CMD=Put&PROGRAM=blastn&DATABASE={db}&QUERY=ACGT".encode())
    for db in ("nt", "core_nt", "ref_viruses_rep_genomes", "16S_ribosomal_RNA"):
        assert blastrequest.parse("POST", f"CMD=Put&PROGRAM=blastn&DATABASE={db}&QUERY=ACGT"
                              .encode()).params["DATABASE"] == db


def test_a_bare_equals_sign_in_a_value_is_refused():
    with pytest.raises(blastrequest.Refused, match="bare '='"):
        blastrequest.parse("POST", b"CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=%3Ea=b%0AACGT")


def _report(n_queries: int, hits: int, seq_len: int) -> bytes:
    hit = {"num": 1, "description": [{"accession": "X", "title": "Severe acute respiratory "
                                      "syndrome coronavirus 2 complete genome", "taxid": 2697049,
                                      "sciname": "Severe acute respiratory syndrome coronavirus 2"}],
           "len": 29903, "hsps": [{"num": 1, "bit_score": 1.8 * seq_len, "evalue": 0.0,
                                   "identity": seq_len, "align_len": seq_len, "query_from": 1,
                                   "query_to": seq_len, "hit_from": 1, "hit_to": seq_len,
                                   "query_strand": "Plus", "hit_strand": "Plus",
                                   "qseq": "A" * seq_len, "hseq": "A" * seq_len,
                                   "midline": "|" * seq_len}]}
    search = {"query_title": "q", "query_len": seq_len, "hits": [hit] * hits}
    return json.dumps({"BlastOutput2": [{"report": {"results": {"search": search}}}]
                       * n_queries}).encode()


def test_a_report_at_the_cap_is_filtered_in_bounded_memory():
    body = _report(40, 20, 12_000)
    assert 0.5 * blastreply.MAX_REPLY < len(body) <= blastreply.MAX_REPLY
    out, used = peak(blastreply.filter_report, body)
    doc = json.loads(out)
    assert len(doc["BlastOutput2"]) == 40 and "qseq" not in out.decode()
    assert used < 4 * blastreply.MAX_REPLY, used  # text, parse, output: far under 512 MB
    # The shape json.loads spends most on (an object per 3 bytes) is cut off unparsed.
    out, used = peak(blastreply.filter_report, b"[" + b"{}," * (blastreply.MAX_REPLY // 4) + b"{}]")
    assert out == blastreply.CUT_OFF and used < 2 * MB


def test_a_150_mb_reply_is_read_no_further_than_the_cap(tmp_path):
    ca = certificates.server_ca(tmp_path / "up", "blast.ncbi.nlm.nih.gov", ca_name="up CA")
    mock = mock_ncbi.MockNCBI("ok")
    body = b'{"BlastOutput2":[' + b'{"report":{}},' * (150 * MB // 14) + b'{}]}'
    mock.script["get"] = (200, "OK", [("Content-Type", "application/json")], body)
    port = mock.serve(0, "127.0.0.1", ca["cert"], ca["key"])
    try:
        ctx = upstream.verified_context(ca["ca"])
        out, used = peak(upstream.send, "blast.ncbi.nlm.nih.gov", 443, ctx, "GET", "/Blast.cgi",
                         "CMD=Get&FORMAT_TYPE=JSON2_S&RID=ABCDEF12345",
                         address=("127.0.0.1", port))
    finally:
        mock.close()
    assert isinstance(out, upstream.TooLarge) and out.status == 200
    assert used < 1.5 * upstream.MAX_REPLY, used
