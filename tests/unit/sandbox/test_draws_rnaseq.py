"""The RNA-seq draws (biotool_sandbox.draws.rnaseq) on the staged demo data: the same seed gives
the same files and truth, seeds differ in truth, and each truth agrees with the files it came
with, checked from the files themselves (reads traced to transcripts by k-mer, fold changes
from the count matrix) rather than from the draw's bookkeeping."""

from __future__ import annotations

import csv
import hashlib
import random
import re
from pathlib import Path

import pytest

from biotool import seqio
from biotool_sandbox.draws import common, rnaseq

K = 31


def _draw(fn, seed: int, folder: Path) -> tuple[dict, dict[str, str]]:
    folder.mkdir(parents=True)
    truth = fn(random.Random(seed), folder)
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    return truth, files


# --- rnaseq-quant-drawn -----------------------------------------------------------------------

@pytest.fixture
def quant(biotool_env, tmp_path):
    truth, _ = _draw(rnaseq.quant, 7, tmp_path / "q")
    return truth, tmp_path / "q"


def test_quant_writes_only_the_instructions_files(quant):
    _, folder = quant
    assert sorted(p.name for p in folder.iterdir()) == ["reads.fastq", "transcripts.fasta"]


def test_quant_same_seed_same_files_and_truth(biotool_env, tmp_path):
    assert _draw(rnaseq.quant, 3, tmp_path / "a") == _draw(rnaseq.quant, 3, tmp_path / "b")


def test_quant_seeds_differ_in_truth(biotool_env, tmp_path):
    truths = [_draw(rnaseq.quant, s, tmp_path / str(s))[0] for s in range(5)]
    keys = {(t["top"], tuple(t["top3"]), frozenset(t["absent"])) for t in truths}
    assert len(keys) == 5


def test_quant_transcripts_are_staged_sequences_sharing_no_kmer(quant):
    _, folder = quant
    records = [(ident, seq) for ident, seq, _ in seqio.fasta(folder / "transcripts.fasta")]
    assert [i for i, _ in records] == [f"tx{n:02d}" for n in range(1, len(records) + 1)]
    assert 12 <= len(records) <= 16
    staged = [seq for name in ("MN908947.3", "influenza-A-H1N1", "phiX174", "pPCP1", "HIV-1")
              for _, seq in common.staged_records("reference", name)]
    owner: dict[str, str] = {}
    for ident, seq in records:
        assert any(seq in s for s in staged), ident
        for s in (seq, common.reverse_complement(seq)):
            for i in range(len(s) - K + 1):
                assert owner.setdefault(s[i:i + K], ident) == ident, ident


def test_quant_truth_is_what_the_reads_say(quant):
    truth, folder = quant
    index: dict[str, str] = {}
    ids = []
    for ident, seq, _ in seqio.fasta(folder / "transcripts.fasta"):
        ids.append(ident)
        for s in (seq, common.reverse_complement(seq)):
            index.update((s[i:i + K], ident) for i in range(len(s) - K + 1))
    counts = dict.fromkeys(ids, 0)
    with open(folder / "reads.fastq", encoding="ascii") as fh:
        lines = fh.read().split("\n")
    names, reads = lines[0::4][:-1], lines[1::4]
    assert all(re.fullmatch(r"@r\d{6}", n) for n in names)    # names tell nothing
    for read in reads:
        hits = (index.get(read[i:i + K]) for i in range(len(read) - K + 1))
        counts[next(h for h in hits if h)] += 1     # a read with a k-mer of no transcript fails
    ranked = sorted(ids, key=lambda t: -counts[t])
    assert truth["top"] == ranked[0] and truth["top3"] == ranked[:3]
    first, second, third, fourth = (counts[t] for t in ranked[:4])
    assert first >= 1.6 * second and second >= 1.6 * third and third >= 1.5 * fourth
    assert sorted(truth["absent"]) == sorted(t for t in ids if counts[t] == 0)
    assert 3 <= len(truth["absent"]) <= 5
    assert min(c for c in counts.values() if c) >= rnaseq.MIN_READS


# --- rnaseq-de-drawn --------------------------------------------------------------------------

@pytest.fixture
def de(tmp_path):
    truth, _ = _draw(rnaseq.de, 11, tmp_path / "d")
    return truth, tmp_path / "d"


def _matrix(folder: Path):
    import numpy as np

    with open(folder / "counts.tsv", encoding="ascii") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    return rows[0], [r[0] for r in rows[1:]], np.array([[int(c) for c in r[1:]] for r in rows[1:]])


def test_de_writes_the_matrix_and_design(de):
    _, folder = de
    assert sorted(p.name for p in folder.iterdir()) == ["counts.tsv", "samples.tsv"]
    header, genes, counts = _matrix(folder)
    assert counts.shape == (2000, 6) and (counts >= 0).all()
    assert len(set(genes)) == 2000 and all(re.fullmatch(r"G\d{5}", g) for g in genes)
    with open(folder / "samples.tsv", encoding="ascii") as fh:
        design = list(csv.reader(fh, delimiter="\t"))
    assert design[0] == ["sample", "condition"]
    assert [s for s, _ in design[1:]] == header[1:]
    assert [c for _, c in design[1:]] == ["control"] * 3 + ["treated"] * 3


def test_de_same_seed_same_files_and_truth(tmp_path):
    assert _draw(rnaseq.de, 5, tmp_path / "a") == _draw(rnaseq.de, 5, tmp_path / "b")


def test_de_seeds_differ_in_truth(tmp_path):
    truths = [_draw(rnaseq.de, s, tmp_path / str(s))[0] for s in range(4)]
    assert len({frozenset(t["up"]) | {"|"} | frozenset(t["down"]) for t in truths}) == 4


def test_de_truth_is_the_planted_fold_changes(de):
    """The truth's genes are exactly those whose normalized means differ 2^2.5-fold or more,
    in the truth's direction; every other gene's differ less than 2^0.8-fold."""
    import numpy as np

    truth, folder = de
    _, genes, counts = _matrix(folder)
    assert 4 <= len(truth["up"]) <= 10 and 4 <= len(truth["down"]) <= 10
    assert not set(truth["up"]) & set(truth["down"])
    positive = counts[(counts > 0).all(axis=1)].astype(float)
    logs = np.log(positive)
    sf = np.exp(np.median(logs - logs.mean(axis=1, keepdims=True), axis=0))
    norm = counts / sf
    lfc = np.log2((norm[:, 3:].mean(axis=1) + 0.5) / (norm[:, :3].mean(axis=1) + 0.5))
    by_gene = dict(zip(genes, lfc))
    assert all(by_gene[g] >= 2.5 for g in truth["up"])
    assert all(by_gene[g] <= -2.5 for g in truth["down"])
    planted = set(truth["up"]) | set(truth["down"])
    assert max(abs(v) for g, v in by_gene.items() if g not in planted) < 0.8
    expressed = norm.mean(axis=1)
    assert min(expressed[genes.index(g)] for g in planted) >= 10
