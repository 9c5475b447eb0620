"""The taxonomy draw (biotool_sandbox.draws.taxonomy.mix): reads of 2-3 panel organisms in
drawn amounts. The truth is checked against the reads themselves (each read placed by its
exact k-mers in the panel's sequences), not against the draw's own counts."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from biotool_sandbox.draws import common, taxonomy

K = 31  # a 150-nt read with a few substitutions keeps many exact 31-mers of its source


def draw(seed: int, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    return taxonomy.mix(random.Random(seed), out)


def read_fastq(path: Path) -> list[tuple[str, str]]:
    lines = path.read_text().splitlines()
    return [(lines[i][1:], lines[i + 1]) for i in range(0, len(lines), 4)]


@pytest.fixture(scope="module")
def kmer_index(staged_home):
    """Every 31-mer of each panel organism (both strands) -> the organism, built from the staged
    panel's FASTA and its taxa metadata directly."""
    from biotool import staging

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BIOTOOL_HOME", str(staged_home))
        item = staging.require("database", taxonomy.PANEL, "test")
        records = common.staged_records("database", taxonomy.PANEL)
    index: dict[str, set] = {}
    for ident, seq in records:
        acc = next(a for a in [ident, *ident.split("|")] if a in item.taxa)
        name = taxonomy.species_name(item.taxa[acc]["sciname"])
        for s in (seq, common.reverse_complement(seq)):
            for i in range(len(s) - K + 1):
                index.setdefault(s[i:i + K], set()).add(name)
    return index


def place(seq: str, index: dict) -> str:
    """The one organism whose 31-mers the read carries (error-free stretches of it)."""
    hits = Counter(n for i in range(len(seq) - K + 1) for n in index.get(seq[i:i + K], ()))
    assert hits, "a read carries no exact 31-mer of the panel"
    (top, count), *rest = hits.most_common()
    assert not rest or rest[0][1] * 10 < count, f"read shared between organisms: {hits}"
    return top


def test_same_seed_same_files_and_truth(biotool_env, tmp_path):
    a, b = draw(7, tmp_path / "a"), draw(7, tmp_path / "b")
    assert a == b
    assert (tmp_path / "a/reads.fastq").read_bytes() == (tmp_path / "b/reads.fastq").read_bytes()


def test_only_reads_fastq_with_neutral_unique_names(biotool_env, tmp_path):
    truth = draw(3, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reads.fastq"]
    reads = read_fastq(tmp_path / "reads.fastq")
    assert [n for n, _ in reads] == [f"read{i:06d}" for i in range(1, len(reads) + 1)]
    assert all(len(s) == taxonomy.READ_LENGTH for _, s in reads)
    text = (tmp_path / "reads.fastq").read_text().lower()
    assert not any(o.lower() in text for o in truth["organisms"])


@pytest.mark.parametrize("seed", [0, 1, 2, 11, 12345])
def test_truth_is_what_the_reads_hold(biotool_env, tmp_path, kmer_index, seed):
    truth = draw(seed, tmp_path)
    placed = Counter(place(s, kmer_index) for _, s in read_fastq(tmp_path / "reads.fastq"))
    assert sorted(placed) == truth["organisms"]
    (top, count), (_, second) = placed.most_common(2)
    assert (top, count) == (truth["dominant"], truth["dominant_reads"])
    assert taxonomy.DOMINANT_READS[0] <= count <= taxonomy.DOMINANT_READS[1]
    assert second * 2 <= count  # the dominant organism clearly dominates


def test_names_are_biotools_organism_names(biotool_env, tmp_path):
    """The truth names organisms as biotool taxonomy's summary does (strains pooled)."""
    from biotool import staging
    from biotool.taxonomy.summary import organism_of

    taxa = staging.require("database", taxonomy.PANEL, "test").taxa
    biotool_names = {organism_of({"sciname": t["sciname"]}) for t in taxa.values()}
    assert set(taxonomy.panel_organisms()) == biotool_names
    assert "Influenza A virus" in biotool_names and len(biotool_names) == 5
    for seed in range(5):
        assert set(draw(seed, tmp_path / str(seed))["organisms"]) <= biotool_names


def test_answer_space(biotool_env, tmp_path):
    """Different seeds give different truths, and no fixed answer is right with 1e-4."""
    truths = {json.dumps(draw(s, tmp_path / str(s)), sort_keys=True) for s in range(25)}
    assert len(truths) == 25
    n = len(taxonomy.panel_organisms())
    counts = taxonomy.DOMINANT_READS[1] - taxonomy.DOMINANT_READS[0] + 1
    # The likeliest answer: a 2-organism set (1/2 x 1/C(n,2)), its dominant (1/2), one count.
    assert 0.5 / math.comb(n, 2) * 0.5 / counts < 1e-4


def test_oracle_biotool_taxonomy_local_agrees(biotool, tmp_path):
    """solve.sh's search: biotool taxonomy --local on every read gives the truth exactly."""
    truth = draw(5, tmp_path)
    ran = biotool("-q", "taxonomy", "--fastq", str(tmp_path / "reads.fastq"), "--local",
                  "--sample", "1000000")
    assert ran.code == 0, ran.stderr
    summary = json.loads(ran.stdout)["summary"]
    assert summary["whole_input"] and summary["no_hit"] == 0 and summary["ambiguous"] == 0
    assert sorted(o["name"] for o in summary["organisms"]) == truth["organisms"]
    assert summary["dominant"] == truth["dominant"]
    assert summary["organisms"][0]["reads"] == truth["dominant_reads"]


# ---- taxonomy.searched: one organism's reads for the remote search task (reads-organism-blast)

@pytest.mark.parametrize("seed", range(6))
def test_searched_reads_are_of_the_drawn_organism_and_the_truth_lists_their_digests(
        biotool_env, tmp_path, kmer_index, seed):
    from biotool_sandbox.harbor_audit import read_digests, sample_digests
    from biotool_sandbox.harbor_grade import SEARCH_READS

    truth = taxonomy.searched(random.Random(seed), tmp_path)
    reads = read_fastq(tmp_path / "reads.fastq")
    assert [p.name for p in tmp_path.iterdir()] == ["reads.fastq"]
    assert len(reads) == taxonomy.SEARCHED_READS
    assert [n for n, _ in reads] == [f"read{i:06d}" for i in range(1, len(reads) + 1)]
    # Every read is of the drawn organism, told by its own k-mers, not by the draw's record.
    assert truth["organism"] in taxonomy.SEARCHED
    assert {place(seq, kmer_index) for _, seq in reads} == {truth["organism"]}
    # The reads the grader holds the audit's Puts to are these very reads.
    assert read_digests(truth[SEARCH_READS]) == sample_digests(tmp_path / "reads.fastq")


def test_searched_draws_every_organism_it_names(biotool_env, tmp_path):
    seen = set()
    for seed in range(30):
        (tmp_path / str(seed)).mkdir()
        seen.add(taxonomy.searched(random.Random(seed), tmp_path / str(seed))["organism"])
    assert seen == set(taxonomy.SEARCHED)
