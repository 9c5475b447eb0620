"""`biotool align`: a seeded sample of reads placed on a staged reference or a FASTA path."""

from biotool.cache import sha256_file


def test_artic_reads_are_placed_on_sarscov2(biotool, artic_fastq):
    r = biotool("align", "--fastq", str(artic_fastq), "--reference", "MN908947.3")
    assert r.code == 0, r.stderr
    out = r.json
    assert out["n_reads"] == 200 and out["mapped"] >= 190
    assert out["preset"] == "map-ont"  # ~480 nt nanopore reads, not short reads
    locus = out["top_loci"][0]
    assert locus["contig"] == "MN908947.3" and locus["reads"] == out["mapped"]
    # These ARTIC reads come from the amplicon at the 3' end of the genome.
    assert locus["window"][0] <= 29700 <= locus["window"][1]
    comp = out["competence"]
    assert comp["confidence"] >= 0.95 and comp["margin"] == 1.0
    assert comp["remedy"].startswith("raise --sample or align the whole library")
    names = {u["name"] for u in out["provenance"]["used"]}
    assert {"MN908947.3", "minimap2:map-ont"} <= names


def test_small_sample_is_seeded_and_says_few_reads_mapped(biotool, artic_fastq):
    a = biotool("align", "--fastq", str(artic_fastq), "--reference", "sars-cov-2",
                "--n-reads", "50", "--seed", "3")
    b = biotool("align", "--fastq", str(artic_fastq), "--reference", "sars-cov-2",
                "--n-reads", "50", "--seed", "3")
    assert a.code == 0, a.stderr
    assert a.json["n_reads"] == 50 and a.json["n_reads_in_file"] == 200
    assert a.json["top_loci"] == b.json["top_loci"]
    spots = " ".join(a.json["competence"]["blind_spots"])
    assert "fewer than 100" in spots and "sample of 50 of 200" in spots


def test_fasta_path_reference_is_indexed_into_the_cache(biotool, cas9, tmp_path):
    r = biotool("align", "--fastq", str(cas9["fastq"]), "--reference", str(cas9["fasta"]))
    assert r.code == 0, r.stderr
    out = r.json
    assert out["preset"] == "sr" and out["mapped"] >= 0.9 * out["n_reads"]
    ref_item = next(u for u in out["provenance"]["used"] if u["kind"] == "reference")
    assert ref_item["sha256"] == sha256_file(cas9["fasta"])
    index = next(u for u in out["provenance"]["used"] if u["kind"] == "index")
    assert index["path"].startswith(str(tmp_path / "cache"))


def test_gzipped_reads_are_read_like_plain_ones(biotool, artic_fastq, tmp_path):
    import gzip

    gz = tmp_path / "reads.fastq.gz"
    gz.write_bytes(gzip.compress(artic_fastq.read_bytes()))
    plain = biotool("align", "--fastq", str(artic_fastq), "--reference", "MN908947.3")
    packed = biotool("align", "--fastq", str(gz), "--reference", "MN908947.3")
    assert packed.code == 0, packed.stderr
    assert packed.json["mapped"] == plain.json["mapped"] == 200
    assert packed.json["top_loci"] == plain.json["top_loci"]


def test_timeout_returns_a_flagged_partial_result(biotool, artic_fastq):
    full = biotool("align", "--fastq", str(artic_fastq), "--reference", "MN908947.3").json
    assert full["truncated"] is False and full["n_reads"] == 200
    cut = biotool("align", "--fastq", str(artic_fastq), "--reference", "MN908947.3",
                  "--timeout", "1e-9")
    assert cut.code == 0, cut.stderr
    out = cut.json
    assert out["truncated"] is True and out["n_reads"] < 200
    assert any("--timeout" in s for s in out["competence"]["blind_spots"])
    bad = biotool("align", "--fastq", str(artic_fastq), "--reference", "MN908947.3",
                  "--timeout", "0")
    assert bad.code == 2 and "--timeout" in bad.stderr
