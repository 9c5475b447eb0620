"""`biotool taxonomy` output an agent can read: the top hits in total, taxonomic and alignment
fields only, per-query detail only on request; and bad inputs that must not hang."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from biotool.taxonomy import identify

REPO = Path(__file__).resolve().parents[3]
ARTIC = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
FLU = REPO / "refs" / "demo" / "influenza" / "influenza_a_h1n1.fasta"
OUTPUT_BOUND = 8 * 1024


def keys(obj) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in keys(v)}
    return set()


def test_default_output_is_the_top_hits_in_total_without_accessions(biotool):
    r = biotool("taxonomy", "--fastq", str(ARTIC), "--local", "--sample", "200")
    assert r.code == 0, r.stderr
    out = r.json
    assert len(r.stdout.encode()) < OUTPUT_BOUND
    assert out["n"] == 200 and len(out["hits"]) == 5
    scores = [h["bit_score"] for h in out["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert {"query", "sciname", "taxid", "bit_score", "pident"} <= set(out["hits"][0])
    assert "accession" not in keys(out) and "NC_" not in r.stdout and "MN908947" not in \
        json.dumps(out["hits"])
    assert out["search"]["hits_per_query"] == identify.HITS_PER_QUERY


def test_top_sets_the_total_not_the_search_depth(biotool):
    two = biotool("taxonomy", "--fasta", str(FLU), "--local", "--top", "2")
    many = biotool("taxonomy", "--fasta", str(FLU), "--local", "--top", "50")
    assert two.code == 0 and many.code == 0, two.stderr + many.stderr
    assert len(two.json["hits"]) == 2
    # Ten influenza segments, each with at most HITS_PER_QUERY hits: --top 50 sees them all.
    assert 10 < len(many.json["hits"]) <= 10 * identify.HITS_PER_QUERY
    # The summary and the influenza tiers rest on the same search whatever --top is.
    assert two.json["summary"] == many.json["summary"]
    assert two.json["influenza"] == many.json["influenza"]


def test_per_query_hits_only_on_request_in_a_file(biotool, tmp_path):
    dest = tmp_path / "hits.jsonl"
    r = biotool("taxonomy", "--fasta", str(FLU), "--local", "--hits-out", str(dest))
    assert r.code == 0, r.stderr
    assert r.json["hits_file"] == str(dest)
    rows = [json.loads(line) for line in dest.read_text().splitlines()]
    assert [row["query"] for row in rows] == [q for q in
                                              (line[1:].split()[0] for line in
                                               FLU.read_text().splitlines()
                                               if line.startswith(">"))]
    assert all(1 <= len(row["hits"]) <= identify.HITS_PER_QUERY for row in rows)
    assert "accession" not in keys(rows)
    assert oct(dest.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    assert not [p for p in tmp_path.iterdir() if p.name != "hits.jsonl"]  # no temp left


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def test_an_unwritable_hits_file_is_refused_before_any_search(biotool, tmp_path):
    start = time.monotonic()
    r = biotool("taxonomy", "--fastq", str(ARTIC), "--local",
                "--hits-out", str(tmp_path / "missing-dir" / "hits.jsonl"))
    assert r.code == 2 and r.stdout == "" and "--hits-out" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert time.monotonic() - start < 60


def test_titles_are_reduced_and_accessions_dropped():
    h = {"accession": "XY123456.1", "title": "word " * 100 + "T" * 500, "sciname": "S",
         "taxid": 1, "bit_score": 10.0, "evalue": 1e-5, "pident": 99.0, "align_len": 100}
    pub = identify.public_hit(h)
    assert "accession" not in pub and 0 < len(pub["title"]) <= identify.MAX_TITLE
    assert "T" * 40 not in pub["title"]  # a 500-letter "word" is a code, not a word
    assert pub["sciname"] == "S" and pub["bit_score"] == 10.0


def test_public_hits_carry_no_identifier_and_only_typed_values():
    h = {"title": "Severe acute respiratory syndrome coronavirus 2 isolate "
                  "SARS-CoV-2/human/USA/CA-CDC-QDX21497008/2021 gi|2045123|gb|MZ021680.1| "
                  "ORF1ab polyprotein, complete genome 29782",
         "sciname": "Influenza A virus (A/Puerto Rico/8/1934(H1N1))", "taxid": "2697049",
         "bit_score": "NC_045512.2", "evalue": 0.0, "align_len": ["NC_045512.2"],
         "hit_from": {"accession": "MN908947.3"}, "hit_to": True, "pident": float("nan")}
    pub = identify.public_hit(h)
    text = json.dumps(pub)
    for leak in ("QDX", "21497008", "2045123", "MZ021680", "NC_045512", "MN908947", "29782",
                 "Puerto", "1934"):
        assert leak not in text, leak
    assert pub == {"title": "Severe acute respiratory syndrome coronavirus 2 ORF1ab "
                            "polyprotein, complete genome",
                   "sciname": "Influenza A virus (H1N1)", "evalue": 0.0}


def test_a_fifo_with_no_writer_is_refused_without_blocking(biotool, tmp_path):
    fifo = tmp_path / "reads.fastq"
    os.mkfifo(fifo)
    for opt in ("--fastq", "--fasta"):
        r = biotool("taxonomy", opt, str(fifo), "--local", timeout=60)
        assert r.code == 2 and r.stdout == "", r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "FIFO" in lines[0] and str(fifo) in lines[0]


def test_an_empty_database_name_is_bad_input_not_the_default(biotool):
    for mode in ("--local", "--remote"):
        r = biotool("taxonomy", "--fastq", str(ARTIC), mode, "--database", "")
        assert r.code == 2 and r.stdout == "", r.stderr
        assert "--database '': empty value" in r.stderr  # the check every option shares
