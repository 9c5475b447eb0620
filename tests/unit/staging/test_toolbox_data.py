"""The toolbox's production data, pinned and staged from the fake sources and used by the real
tools: a GTF on its genome's names (featureCounts), Swiss-Prot's place as a protein BLAST
database with a DIAMOND database built at staging (blastp, diamond blastp), and a dated
Kraken 2 database built from real viral genomes by kraken2-build (kraken2)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from biotool_testing.fake_sources import gene_reads, protein_queries, virus_reads

REPO = Path(__file__).resolve().parents[3]


def _record(home: Path, key: str) -> dict:
    return json.loads((home / "staged.json").read_text())["items"][key]


# ---------------------------------------------------------------- pins

def test_the_new_sources_are_dated_and_pinned_with_their_publishers_digests(pinned, world):
    import hashlib

    from biotool.staging import load_manifests
    from biotool.stagebuild import pins

    root, _ = world
    entries = {e["name"]: e for e in load_manifests(REPO / "refs")}
    lock = {p["name"]: p for p in tomllib.loads(pinned.read_text())["pin"]}
    assert [f["path"] for f in lock["swissprot"]["files"]] == ["swissprot.tar.gz", "taxdb.tar.gz"]
    for name in ("human-gtf", "swissprot", "k2_viral"):
        for f in lock[name]["files"]:
            assert f["url"] in pins.sources(entries[name]) and pins.rewritten(f["url"]) is None
            served = (root / f["url"].split("://", 1)[1]).read_bytes()
            assert f["sha256"] == hashlib.sha256(served).hexdigest() and f["size"] == len(served)
    # GENCODE's MD5SUMS and the bucket's .md5 were read and agree; genome-idx publishes none.
    gtf = lock["human-gtf"]["files"][0]
    assert gtf["url"].endswith("/Gencode_human/release_46/gencode.v46.primary_assembly."
                               "annotation.gtf.gz") and len(gtf["md5"]) == 32
    assert all(len(f["md5"]) == 32 for f in lock["swissprot"]["files"])
    assert "md5" not in lock["k2_viral"]["files"][0]


def test_the_moving_copies_of_the_new_sources_are_refused():
    from biotool.stagebuild import pins

    for moving in (
            "https://ftp.ebi.ac.uk/pub/databases/gencode/Gencode_human/latest_release/"
            "gencode.v46.primary_assembly.annotation.gtf.gz",
            "https://ncbi-blast-databases.s3.amazonaws.com/latest/swissprot.tar.gz",
            "https://ncbi-blast-databases.s3.amazonaws.com/latest-dir",
            "https://ftp.ncbi.nlm.nih.gov/blast/db/swissprot.tar.gz",
            "https://ftp.ncbi.nlm.nih.gov/refseq/M_musculus/annotation_releases/current/"
            "GCF_000001635.27-RS_2024_02/GCF_000001635.27_GRCm39_genomic.gtf.gz",
            "https://ftp.ncbi.nlm.nih.gov/genomes/all/GCF/000/001/635/GCF_000001635.27_GRCm39/"
            "GCF_000001635.27_GRCm39_genomic.gtf.gz"):
        assert pins.rewritten(moving), moving
    assert pins.rewritten("https://ncbi-blast-databases.s3.amazonaws.com/2025-09-16-01-05-02/"
                          "swissprot.tar.gz") is None


def test_a_gtf_missing_from_gencodes_md5sums_is_refused_at_pin_time(server, tmp_path, world):
    from biotool.staging import StagingError
    from biotool.stagebuild import pins

    root, _ = world
    listing = root / "ftp.ebi.ac.uk/pub/databases/gencode/Gencode_human/release_46/MD5SUMS"
    saved = listing.read_text()
    try:
        listing.write_text(saved.replace(saved.split()[0], "0" * 32))
        with pytest.raises(StagingError, match="its publisher lists 0{32}: refused"):
            pins.pin(REPO / "refs", ["production"], tmp_path / "lock.toml", only=["human-gtf"])
    finally:
        listing.write_text(saved)


# ---------------------------------------------------------------- the GTF

def _bam(reads: list[str], bwa_prefix: Path, work: Path) -> Path:
    fq = work / "reads.fq"
    fq.write_text("".join(f"@r{i}\n{s}\n+\n{'I' * len(s)}\n" for i, s in enumerate(reads)))
    sam = subprocess.run(["bwa", "mem", "-v", "1", str(bwa_prefix), str(fq)], check=True,
                         capture_output=True, text=True).stdout
    bam = work / "reads.bam"
    subprocess.run(["samtools", "sort", "-o", str(bam), "-"], input=sam, text=True, check=True,
                   capture_output=True)
    return bam


def test_featurecounts_counts_reads_per_gene_with_the_staged_gtf(prod_home, use_home, world,
                                                                  tmp_path):
    """Reads cut from the designed genes' exons, aligned with the staged bwa index, counted by
    the real featureCounts against the staged GTF: each gene gets exactly its reads."""
    from biotool import staging

    _, truth = world
    use_home(prod_home)
    rec = staging.find("database", "gencode-46")
    contigs = rec.extra["contigs"]
    assert rec.reference == "GRCh38" and rec.extra["genes"] == 2
    assert contigs["dropped"] == 0 and contigs["on_genome"] == contigs["lines"]
    assert contigs["genome_sha256"] == staging.find("reference", "GRCh38").sha256
    gtf = rec.path()
    assert {l.split("\t")[0] for l in gtf.read_text().splitlines() if not l.startswith("#")} \
        == {truth["genomes"]["GRCh38"]["seqid"]}
    reads, want = gene_reads(truth, "GRCh38", random.Random(3))
    ref = staging.find("reference", "GRCh38")
    bam = _bam(reads, ref.path("bwa") / "reference", tmp_path)
    subprocess.run(["featureCounts", "-a", str(gtf), "-g", "gene_name", "-o",
                    str(tmp_path / "counts.txt"), str(bam)], check=True, capture_output=True)
    rows = [l.split("\t") for l in (tmp_path / "counts.txt").read_text().splitlines()[2:]]
    assert {r[0]: int(r[-1]) for r in rows} == want
    summary = dict(l.split("\t") for l in (tmp_path / "counts.txt.summary").read_text()
                   .splitlines()[1:])
    assert int(summary["Unassigned_NoFeatures"]) == 7


def _gtf_refs(tmp_path: Path, url: str) -> Path:
    refs = tmp_path / "refs"
    refs.mkdir()
    shutil.copy(REPO / "refs" / "references.toml", refs)
    (refs / "annotations.toml").write_text(
        '[[database]]\nname = "other-gtf"\nset = "production"\nformat = "gtf"\n'
        f'reference = "GRCh38"\nprepare = "gtf"\nsource = "{url}"\n')
    return refs


def test_a_gtf_on_another_naming_is_refused_and_one_on_the_genomes_names_staged(
        server, world, prod_home, tmp_path):
    """Ensembl's own GTF names chromosomes 17, not chr17: staged beside the UCSC-named
    genome it would count nothing, so staging refuses it, naming both namings."""
    from biotool.staging import StagingError
    from biotool.stagebuild import build

    root, truth = world
    url = "https://ftp.ensembl.org/pub/release-112/gtf/homo_sapiens/Homo_sapiens.GRCh38.112.gtf.gz"
    served = root / url.split("://", 1)[1]
    gencode = root / (truth["gtf"]["GRCh38"].split("://", 1)[1])
    served.parent.mkdir(parents=True, exist_ok=True)
    import gzip

    text = gzip.decompress(gencode.read_bytes()).decode()
    served.write_bytes(gzip.compress(text.replace("chr17\t", "17\t").encode()))
    home = tmp_path / "home"
    shutil.copytree(prod_home, home)  # GRCh38 staged there by an earlier run
    refs = _gtf_refs(tmp_path, url)
    with pytest.raises(StagingError, match=r"lines name sequences the genome does not \(17; "
                                           r"the genome names chr17"):
        build.stage(refs, home, ["production"], lock=tmp_path / "none.toml", tofu=True,
                    only=["other-gtf"])
    assert not (home / "databases" / "other-gtf").exists()
    assert not list((home / "databases").glob(".*staging"))
    served.write_bytes(gzip.compress(text.encode()))
    inv = build.stage(refs, home, ["production"], lock=tmp_path / "none.toml", tofu=True,
                      only=["other-gtf"])
    assert inv["items"]["database/other-gtf"]["genes"] == 2


def test_a_gtf_is_not_staged_without_its_genome(server, pinned, tmp_path):
    from biotool.staging import StagingError
    from biotool.stagebuild import build

    with pytest.raises(StagingError, match="its genome GRCh38 is not staged here"):
        build.stage(REPO / "refs", tmp_path / "home", ["production"], lock=pinned,
                    only=["human-gtf"])


def test_gencode_scaffold_accessions_land_on_the_analysis_sets_names(tmp_path):
    from biotool.staging import StagingError
    from biotool.stagebuild import gtf

    fai = tmp_path / "g.fa.fai"
    fai.write_text("chr1\t1000\t6\t60\t61\nchr1_KI270706v1_random\t500\t1100\t60\t61\n"
                   "chrEBV\t300\t1700\t60\t61\n")
    line = 'KI270706.1\tENSEMBL\texon\t10\t90\t.\t+\t.\tgene_id "G2"; transcript_id "T2";\n'
    src = tmp_path / "in.gtf"
    body = ['chr1\tHAVANA\texon\t1\t100\t.\t+\t.\tgene_id "G1"; transcript_id "T1";\n'] * 150
    src.write_text("##provider: GENCODE\n" + "".join(body) + line)
    out = tmp_path / "out.gtf"
    check = gtf.stage_gtf(src, out, gtf.genome_names(fai))
    assert out.read_text().splitlines()[-1].startswith("chr1_KI270706v1_random\tENSEMBL\texon")
    assert (check.kept, check.renamed, len(check.genes)) == (151, 1, 2)
    # A patch the genome lacks is dropped and counted; past 1% of the lines it is refused.
    src.write_text("".join(body) + line.replace("KI270706.1", "KN196472.1"))
    assert gtf.stage_gtf(src, out, gtf.genome_names(fai)).record()["dropped_sequences"] == \
        ["KN196472.1"]
    src.write_text("".join(body) + line.replace("KI270706.1", "KN196472.1") * 2)
    with pytest.raises(StagingError, match="2 of its 152 lines name sequences"):
        gtf.stage_gtf(src, out, gtf.genome_names(fai))
    src.write_text("##gff-version 3\nchr1\tx\tgene\t1\t9\t.\t+\t.\tID=gene1;Name=A\n")
    with pytest.raises(StagingError, match="not a GTF line"):
        gtf.stage_gtf(src, out, gtf.genome_names(fai))


def test_the_mouse_refseq_gtf_stages_on_the_refseq_genome(server, world, tmp_path):
    """The other naming: GRCm39 from the RefSeq release folder keeps NC_ accessions, and so
    does the GTF of the same release (its md5 from the folder's md5checksums.txt)."""
    from biotool.stagebuild import build, pins

    _, truth = world
    lock = tmp_path / "lock.toml"
    pins.pin(REPO / "refs", ["production"], lock, only=["GRCm39", "mouse-gtf"])
    assert len({p["name"]: p for p in tomllib.loads(lock.read_text())["pin"]}["mouse-gtf"]
               ["files"][0]["md5"]) == 32
    inv = build.stage(REPO / "refs", tmp_path / "home", ["production"], lock=lock,
                      only=["GRCm39", "mouse-gtf"])
    rec = inv["items"]["database/mouse-gtf"]
    gtf = tmp_path / "home" / rec["files"]["main"]["path"]
    seqids = {l.split("\t")[0] for l in gtf.read_text().splitlines() if not l.startswith("#")}
    assert seqids == {truth["genomes"]["GRCm39"]["seqid"]} == {"NC_000077.7"}
    assert rec["genes"] == 2 and 'gene_id "Trp53"' in gtf.read_text()


# ---------------------------------------------------------------- proteins

def test_blastp_and_diamond_find_a_protein_offline(prod_home, use_home, world, tmp_path):
    """A homologue of a real SARS-CoV-2 protein (one substitution in 15) finds that protein
    first with the real blastp and with diamond blastp on the database built at staging."""
    from biotool import staging

    _, truth = world
    use_home(prod_home)
    rec = staging.find("database", "swissprot")
    assert rec.extra["sequences"] == len(truth["proteins"]) and rec.taxa is None
    db = rec.path("blastdb") / "db"
    dmnd = rec.path("diamond")
    assert staging.status(rec.record()).use == (f"blastp -db {db} -query proteins.faa; "
                                          f"diamond blastp -d {dmnd} -q proteins.faa")
    queries = protein_queries(truth, random.Random(7))
    assert len(queries) >= 4
    q = tmp_path / "q.faa"
    q.write_text("".join(f">{pid}\n{s}\n" for pid, s in queries.items()))
    for cmd in (["blastp", "-db", str(db), "-query", str(q), "-outfmt", "6", "-evalue", "1e-10"],
                ["diamond", "blastp", "-d", str(dmnd), "-q", str(q), "--outfmt", "6",
                 "--evalue", "1e-10", "--threads", "1"]):
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        top = {}
        for line in out.splitlines():
            f = line.split("\t")
            top.setdefault(f[0], f[1])
        assert top == {pid: pid for pid in queries}, cmd[0]


def test_the_protein_database_is_never_taken_for_a_taxonomy_search(prod_home, use_home):
    from biotool.output import InputError
    from biotool.taxonomy import local

    use_home(prod_home)
    assert local.staged_database(None).name == "ref_viruses_rep_genomes"
    with pytest.raises(InputError, match="swissprot is a protein database .* blastp -db "):
        local.staged_database("swissprot")


# ---------------------------------------------------------------- Kraken 2

def test_kraken2_classifies_reads_of_real_viruses_with_the_staged_database(
        prod_home, use_home, world, tmp_path):
    from biotool import staging

    _, truth = world
    use_home(prod_home)
    rec = staging.find("database", "kraken2-viral")
    assert rec.extra["kraken2"]["options"].startswith("nucleotide db, k = 35, l = 31")
    reads = virus_reads(truth, ("MN908947.3", "NC_001802.1", "NC_001422.1", "NC_002017.1"),
                        random.Random(11))
    fa = tmp_path / "reads.fa"
    fa.write_text("".join(f">{n}\n{s}\n" for n, s in reads))
    out = subprocess.run(["kraken2", "--db", str(rec.path()), "--report",
                          str(tmp_path / "report.txt"), str(fa)], check=True,
                         capture_output=True, text=True).stdout
    called = {f[1]: (f[0], int(f[2])) for f in (l.split("\t") for l in out.splitlines())}
    for name, _ in reads[:-1]:
        assert called[name] == ("C", truth["kraken2"][name.split("/")[0]]["taxid"]), name
    assert called["random"] == ("U", 0)
    report = (tmp_path / "report.txt").read_text()
    assert "Human immunodeficiency virus 1" in report and "Influenza A virus" in report


def test_a_tarball_without_a_kraken2_database_is_refused(tmp_path):
    import tarfile

    from biotool.staging import StagingError
    from biotool.stagebuild import prepare

    (tmp_path / "opts.k2d").write_bytes(b"x")
    archive = tmp_path / "k2_viral_20240904.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "opts.k2d", arcname="opts.k2d")
    item = tmp_path / "item"
    item.mkdir()
    with pytest.raises(StagingError, match="holds no Kraken 2 database"):
        prepare.prepare({"name": "k2", "prepare": "kraken2-tar"}, [archive], item)


# ---------------------------------------------------------------- where an agent finds them

def test_references_and_list_say_where_each_lives(prod_home, use_home):
    from biotool import staging
    from biotool.system import inventory

    use_home(prod_home)
    rows = {r["name"]: r for r in inventory.references()["references"]}
    gtf = staging.find("database", "human-gtf").path()
    assert rows["GRCh38"]["annotation"] == {"human-gtf": str(gtf)} and gtf.is_file()
    items = {i["name"]: i for i in inventory.list_everything()["items"]}
    assert items["human-gtf"]["use"] == f"featureCounts -a {gtf} -o counts.txt sample.bam"
    kraken = staging.find("database", "k2_viral").path()
    assert items["k2_viral"]["use"] == f"kraken2 --db {kraken} reads.fq"
    assert (kraken / "hash.k2d").is_file()
