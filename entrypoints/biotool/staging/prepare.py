"""What staging makes of fetched files (manifest field `prepare`), and the indexes it builds.

  (none)        one file as it is, or several FASTA files concatenated (a demo BLAST panel)
  fasta         a genome: plain gzip (NCBI .fna.gz) decompressed to plain FASTA, which
                samtools faidx, minimap2 and the annotate tools' reader all take; an index
                the publisher built of it (`prebuilt`) is used instead of building one when
                it matches the FASTA (use_prebuilt)
  blastdb-tar   NCBI prebuilt BLAST database tarballs (+ taxdb) unpacked, an alias `db`
                over the volumes, and each sequence's taxid and scientific name recorded; a
                protein one (`molecule = "protein"`) records its sequence count instead, and
                with indexes = ["diamond"] gets a DIAMOND database built from its sequences
  gene-table    a versioned RefSeq annotation GFF3 -> the gene table (biotool.staging.genetable)
  gtf           a release's gene annotation GTF on its genome's own sequence names, checked
                against the staged genome's .fai (biotool.staging.gtf)
  kraken2-tar   a prebuilt Kraken 2 database tarball unpacked, and loaded once by kraken2
  hf-model      a Hugging Face model folder: config and weights in a format transformers
                loads, then the item's own check (`check`, the family's "module:function":
                for Cell2Sentence, a real prompt its tokenizer encodes and the model continues)
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from biotool.alignment import indexes
from biotool.alignment.aligners import bwa_command
from biotool.alignment.vocabulary import NOT_PRIMARY
from biotool.output import ToolFailure
from biotool.procs import capture
from biotool.staging import StagingError, blastdate, hook, usable
from biotool.staging.item import StagedItem
from biotool.staging.pins import prebuilt_name

@dataclass(frozen=True)
class Beside:
    """The home an item is staged into and what is staged there so far, for an item checked
    against another one (a GTF against its genome's sequence names)."""
    home: Path
    items: dict  # "kind/name" -> staged record, its file paths relative to home

    def item(self, kind: str, name: str) -> StagedItem | None:
        """The usable item staged there so far (its origin is moot while staging)."""
        rec = self.items.get(f"{kind}/{name}")
        item = StagedItem.from_record(rec, "image", self.home) if rec else None
        return item if usable(item) else None

    def file(self, kind: str, name: str, key: str) -> Path | None:
        item = self.item(kind, name)
        path = item.path(key) if item and key in item.files else None
        return path if path is not None and path.exists() else None


def _run(cmd: list[str], env: dict | None = None, stdout=None) -> str:
    """A tool's stdout (or into the open file `stdout`); StagingError with its stderr's tail."""
    try:
        done = capture(cmd, None, env=env, into=stdout)
    except ToolFailure as exc:
        raise StagingError(str(exc)) from None
    if done.rc != 0:
        raise StagingError(f"{' '.join(cmd)} failed: {done.err.strip()[-500:]}")
    return done.out


def build_index(fasta: Path, index: str, item_dir: Path) -> Path:
    """Build one index next to the item and return the path recorded for it."""
    if index == "faidx":
        _run(["samtools", "faidx", str(fasta)])
        return Path(str(fasta) + ".fai")
    if index == "minimap2:sr":
        raise StagingError('index "minimap2:sr" would never be used: short reads align with '
                           'bwa; stage "bwa" instead')
    if index in indexes.KINDS:
        # A folder index (bwa's, bowtie2's, ...) is recorded (and hashed) whole, like a BLAST
        # database.
        out = item_dir / indexes.artifact_name(index, fasta.stem)
        try:
            indexes.build(index, fasta, out)
        except ToolFailure as exc:
            raise StagingError(str(exc)) from None
        return out
    if index == "blastdb":
        db = item_dir / "db"
        _run(["makeblastdb", "-in", str(fasta), "-dbtype", "nucl", "-parse_seqids",
              "-title", fasta.stem, "-out", str(db)])
        blastdate.pin_dates(item_dir)  # makeblastdb's clock time: the build's date instead
        return item_dir  # the database is the directory of db.* files
    raise StagingError(f"unknown index {index!r}")


def _plain_fasta(src: Path, dest: Path) -> Path:
    with open(src, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    if not gz:
        if src != dest:
            os.replace(src, dest)
        return dest
    try:
        with gzip.open(src, "rb") as inp, open(dest, "wb") as out:
            shutil.copyfileobj(inp, out, 1 << 20)
    except (OSError, EOFError) as exc:
        raise StagingError(f"{src.name}: not a readable gzip file ({exc})") from None
    src.unlink()
    with open(dest, "rb") as fh:
        if fh.read(1) != b">":
            raise StagingError(f"{src.name}: does not decompress to FASTA")
    return dest


def _safe_extract(archive: Path, into: Path) -> list[str]:
    try:
        with tarfile.open(archive, "r:*") as tar:
            names = tar.getnames()
            for m in tar.getmembers():  # also where tarfile predates extraction filters
                if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in m.name:
                    raise tarfile.TarError(f"unsafe member {m.name!r}")
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, filter="data")
            else:
                tar.extractall(into)
    except (tarfile.TarError, OSError) as exc:
        raise StagingError(f"{archive.name}: not a usable tar archive ({exc})") from None
    archive.unlink()
    return names


def _blastdb(entry: dict, fetched: list[Path], item_dir: Path) -> dict:
    db_dir = item_dir / "blastdb"
    db_dir.mkdir()
    protein = entry.get("molecule") == "protein"
    volumes = []
    for archive in fetched:
        _safe_extract(archive, db_dir)
        stem = archive.name.split(".tar")[0]
        if stem != "taxdb":
            volumes.append(stem)
    if not volumes:
        raise StagingError("no BLAST database among the fetched archives (only taxdb)")
    # An alias named `db`: the path the local search opens, over the volumes as NCBI names them.
    (db_dir / ("db.pal" if protein else "db.nal")).write_text(
        f"TITLE {entry.get('title') or volumes[0]}\nDBLIST {' '.join(volumes)}\n")
    env = {**os.environ, "BLASTDB": str(db_dir)}
    files = {"main": db_dir, "blastdb": db_dir}
    if protein:
        # Swiss-Prot's half a million taxa would bloat the inventory every command reads; the
        # database carries its taxids, and taxdb beside it names them for blastp's sscinames.
        entry["sequences"] = _blastdb_count(db_dir / "db", env)
        entry["use"] = "blastp -db {blastdb}/db -query proteins.faa"
        if "diamond" in entry.get("indexes", []):
            files["diamond"] = item_dir / f"{entry['name']}.dmnd"
            _diamond(db_dir / "db", files["diamond"], entry["sequences"], env)
            entry["use"] += "; diamond blastp -d {diamond} -q proteins.faa"
        return files
    out = _run(["blastdbcmd", "-db", str(db_dir / "db"), "-entry", "all", "-outfmt",
                "%a\t%T\t%S\t%t"], env=env)
    taxa = {}
    for line in out.splitlines():
        acc, taxid, sciname, title = (line.split("\t") + ["", "", ""])[:4]
        if sciname in ("", "N/A"):
            sciname = title.split(",")[0]
        taxa[acc] = {"sciname": sciname, "taxid": int(taxid) if taxid.isdigit() and
                     int(taxid) > 0 else None}
    if not taxa:
        raise StagingError("the BLAST database holds no sequences")
    entry["taxa"] = taxa
    entry["use"] = "blastn -db {blastdb}/db -query sequences.fa"
    return files


def _blastdb_count(db: Path, env: dict) -> int:
    """The number of sequences in a BLAST database, as blastdbcmd -info reports it."""
    info = _run(["blastdbcmd", "-db", str(db), "-info"], env=env)
    for line in info.splitlines():
        words = line.split()
        if len(words) > 1 and words[1] == "sequences;":
            n = int(words[0].replace(",", ""))
            if n:
                return n
    raise StagingError("the BLAST database holds no sequences")


def _diamond(db: Path, out: Path, expected: int, env: dict) -> None:
    """A DIAMOND database of every sequence of the BLAST database `db`; refused unless it
    holds as many sequences as the BLAST database does."""
    fasta = out.with_name(out.name + ".faa")
    with open(fasta, "w") as fh:
        _run(["blastdbcmd", "-db", str(db), "-entry", "all"], env=env, stdout=fh)
    try:
        _run(["diamond", "makedb", "--in", str(fasta), "-d", str(out), "--threads",
              str(os.cpu_count() or 1)])
    finally:
        fasta.unlink()
    info = _run(["diamond", "dbinfo", "-d", str(out)])
    got = next((int(l.split()[-1]) for l in info.splitlines() if l.split()[:1] == ["Sequences"]),
               None)
    if got != expected:
        raise StagingError(f"diamond makedb wrote {got} sequences of the BLAST database's "
                           f"{expected}")


KRAKEN2_FILES = ("hash.k2d", "opts.k2d", "taxo.k2d")


def _kraken2(entry: dict, fetched: list[Path], item_dir: Path) -> dict:
    """A prebuilt Kraken 2 database tarball unpacked, and loaded and run once by this
    kraken2 (a database another version cannot read fails the build, not a first use)."""
    if len(fetched) != 1:
        raise StagingError("a kraken2-tar item needs one source, the database tarball")
    into = item_dir / "kraken2"
    into.mkdir()
    archive = fetched[0].name
    _safe_extract(fetched[0], into)
    found = [p.parent for p in into.rglob("hash.k2d")
             if all((p.parent / f).is_file() for f in KRAKEN2_FILES)]
    if len(found) != 1:
        raise StagingError(f"{archive}: holds no Kraken 2 database ({', '.join(KRAKEN2_FILES)} "
                           "in one folder)")
    db = found[0]
    header = _run(["kraken2-inspect", "--db", str(db), "--skip-counts"])
    facts = dict(line[2:].split(": ", 1) for line in header.splitlines()
                 if line.startswith("# ") and ": " in line)
    probe = item_dir / "probe.fa"
    probe.write_text(">probe\n" + "ACGT" * 50 + "\n")
    try:
        said = capture(["kraken2", "--db", str(db), "--threads", "1", str(probe)], None)
    except ToolFailure as exc:
        raise StagingError(f"kraken2 does not run on {archive}: {exc}") from None
    finally:
        probe.unlink()
    if said.rc != 0 or "1 sequences" not in said.err:
        raise StagingError(f"kraken2 does not run on {archive}: {said.err.strip()[-300:]}")
    entry["kraken2"] = {"options": facts.get("Database options", ""),
                        "taxonomy_nodes": int(facts.get("Total taxonomy nodes", "0") or 0)}
    entry["use"] = "kraken2 --db {main} reads.fq"
    return {"main": db}


def _gene_table(entry: dict, fetched: list[Path], item_dir: Path) -> dict:
    from biotool.staging import genetable

    gff = [p for p in fetched if ".gff" in p.name]
    if len(gff) != 1 or len(fetched) != 1:
        raise StagingError("a gene-table item needs one source, a RefSeq annotation GFF3")
    out = item_dir / "genes.tsv"
    n = genetable.build(gff[0], out, reference=entry["reference"],
                        seqids=entry.get("seqids", "refseq"))
    if n == 0:
        raise StagingError(f"no protein-coding CDS of {entry['reference']} in {gff[0].name}")
    for p in fetched:
        p.unlink()
    entry["genes"] = n
    return {"main": out}


# What transformers' PyTorch loader reads as weights: one file, or an index of shards.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def check_weights(folder: Path) -> list[str]:
    """The weight files of a staged Hugging Face folder (a shard index counts when every shard
    it names is there); StagingError naming what is there when there are none."""
    if not (folder / "config.json").is_file():
        raise StagingError(f"{folder.name}: no config.json among the staged files")
    found = [w for w in WEIGHT_FILES if (folder / w).is_file()]
    for index in (folder / f"{w}.index.json" for w in WEIGHT_FILES):
        if not index.is_file():
            continue
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise StagingError(f"{index.name}: not a shard index ({exc})") from None
        missing = sorted(sh for sh in shards if not (folder / sh).is_file())
        if missing:
            raise StagingError(f"{index.name} names shards that were not staged: "
                               f"{', '.join(missing)[:200]}")
        found.append(index.name)
    if not found:
        have = ", ".join(sorted(p.name for p in folder.iterdir()))[:300]
        raise StagingError(f"no model weights among the staged files ({have}): transformers "
                           f"loads {' or '.join(WEIGHT_FILES)} or a sharded index of either; "
                           "widen the manifest's include to match the repository's weights")
    return found


def check_hf_model(folder: Path, entry: dict) -> dict:
    """What staging records of a Hugging Face model folder: its weight files (transformers'
    formats), then the item's own check (manifest `check`, "module:function" of the family
    that runs the model, given the folder: a real prompt encoded and answered), so staging
    knows the format and never a framework's prompt."""
    from biotool.output import ProgramError

    weights = check_weights(folder)
    spec = entry.get("check")
    if not spec:
        raise StagingError("an hf-model item names its check (check = \"module:function\", "
                           "the code that proves the model answers)")
    try:
        found = hook(spec)(folder)
    except ProgramError as exc:
        raise StagingError(str(exc)) from None
    return {"tokenizer_probe_ids": found["tokenizer_ids"],
            "model_probe": {"weights": weights, "answer": found["answer"]}}


def _gtf(entry: dict, fetched: list[Path], item_dir: Path, beside: Beside | None) -> dict:
    from biotool.staging import gtf

    ref = entry.get("reference")
    if not ref or len(fetched) != 1:
        raise StagingError("a gtf item needs one source, a GTF, and its genome (reference)")
    fai = beside.file("reference", ref, "faidx") if beside else None
    if fai is None:
        raise StagingError(f"its genome {ref} is not staged here, and a GTF is staged only on "
                           f"its genome's sequence names: stage the two together (--only {ref} "
                           f"--only {entry['name']})")
    out = item_dir / f"{entry['name']}.gtf"
    check = gtf.stage_gtf(fetched[0], out, gtf.genome_names(fai))
    fetched[0].unlink()
    entry["genes"] = len(check.genes)
    entry["contigs"] = {**check.record(), "genome": ref,
                        "genome_sha256": beside.item("reference", ref).sha256}
    entry["use"] = "featureCounts -a {main} -o counts.txt sample.bam"
    return {"main": out}


def prepare(entry: dict, fetched: list[Path], item_dir: Path,
            beside: Beside | None = None) -> dict[str, Path]:
    """The item's files {"main": path, index name: path} from what was fetched into item_dir
    (`beside`: what is staged with it, for an item checked against another)."""
    how = entry.get("prepare")
    if how == "blastdb-tar":
        return _blastdb(entry, fetched, item_dir)
    if how == "gene-table":
        return _gene_table(entry, fetched, item_dir)
    if how == "gtf":
        return _gtf(entry, fetched, item_dir, beside)
    if how == "kraken2-tar":
        return _kraken2(entry, fetched, item_dir)
    if how == "hf-model":
        weights = item_dir / "weights"
        entry.update(check_hf_model(weights, entry))
        return {"main": weights}
    if how == "fasta":
        main = _plain_fasta(fetched[0], item_dir / f"{entry['name']}.fa")
    elif how:
        raise StagingError(f"unknown prepare {how!r}")
    elif len(fetched) > 1:  # a database from several FASTA files: concatenate once
        main = item_dir / f"{entry['name']}.fasta"
        with open(main, "wb") as out:
            for part in fetched:
                out.write(part.read_bytes().rstrip(b"\n") + b"\n")
                part.unlink()
    else:
        main = fetched[0]
    files = {"main": main}
    for index in entry.get("indexes", []):
        tarball = item_dir / prebuilt_name(index)
        if tarball.exists():
            out = item_dir / indexes.artifact_name(index)
            used = use_prebuilt(index, tarball, main, out)
            entry.setdefault("index_origin", {})[index] = used
            if used.startswith("prebuilt"):
                files[index] = out
                continue
        files[index] = build_index(main, index, item_dir)
    for unused in item_dir.glob(prebuilt_name("*")):  # a prebuilt index not asked for
        unused.unlink()
    return files


PROBE_READS = 20   # reads cut from the FASTA that a prebuilt index must place back
PROBE_LEN = 150
PROBE_AGREE = 0.9  # repeats may send a read elsewhere; more than this share must land home


def _ann(path: Path) -> list[tuple[str, int]]:
    """(name, length) of every sequence in a bwa .ann file, in order."""
    lines = path.read_text().splitlines()
    return [(lines[i].split()[1], int(lines[i + 1].split()[1])) for i in range(1, len(lines) - 1, 2)]


def use_prebuilt(index: str, tarball: Path, fasta: Path, out: Path) -> str:
    """See _use_prebuilt; a tarball that cannot be read is a reason to build, not a failure."""
    try:
        return _use_prebuilt(index, tarball, fasta, out)
    except (StagingError, ValueError, IndexError, OSError) as exc:
        shutil.rmtree(out, ignore_errors=True)
        return f"built here: the prebuilt {index} index could not be used ({' '.join(str(exc).split())[:200]})"


def _use_prebuilt(index: str, tarball: Path, fasta: Path, out: Path) -> str:
    """Unpack a publisher's prebuilt `index` of `fasta` into `out` when it matches: the same
    sequence names and lengths as the FASTA's .fai, and reads cut from the FASTA placed back
    where they came from. What was done, in a line (starting "prebuilt" when used); a
    mismatch leaves nothing behind, so the caller builds the index itself."""
    import random
    import tempfile

    if index != indexes.BWA:
        tarball.unlink()
        return f"built here: a prebuilt {index} index is not checked by this staging"
    suffixes = (".amb", ".ann", ".bwt", ".pac", ".sa")
    scratch = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{index}-prebuilt."))
    try:
        _safe_extract(tarball, scratch)
        found = {p.name[:-len(p.suffix)]: p for p in scratch.rglob("*.bwt")}
        prefix = next((stem for stem, p in found.items()
                       if all((p.parent / (stem + s)).is_file() for s in suffixes)), None)
        if prefix is None:
            return "built here: the prebuilt tarball holds no complete bwa index (.amb .ann .bwt .pac .sa)"
        folder = found[prefix].parent
        fai = Path(str(fasta) + ".fai")
        if not fai.exists():
            _run(["samtools", "faidx", str(fasta)])
        seqs = [(f[0], int(f[1])) for f in (l.split("	") for l in fai.read_text().splitlines())]
        if _ann(folder / (prefix + ".ann")) != seqs:
            return "built here: the prebuilt index names other sequences or lengths than the FASTA"
        rng = random.Random(0)
        total = sum(n for _, n in seqs)
        picks = []
        for _ in range(PROBE_READS * 5):
            if len(picks) == PROBE_READS:
                break
            at = rng.randrange(total)
            for name, n in seqs:
                if at < n:
                    break
                at -= n
            if n >= PROBE_LEN + 1:
                start = min(at, n - PROBE_LEN) + 1
                picks.append((name, start))
        regions = _run(["samtools", "faidx", str(fasta)] +
                       [f"{c}:{b}-{b + PROBE_LEN - 1}" for c, b in picks])
        reads, name = [], None
        for line in regions.splitlines():
            if line.startswith(">"):
                name = line[1:]
                reads.append([name, ""])
            elif name:
                reads[-1][1] += line.strip()
        usable = [(c, b, seq) for (c, b), (_, seq) in zip(picks, reads) if seq.upper().count("N") < 5]
        fq = scratch / "probe.fq"
        fq.write_text("".join(f"@{c}:{b}\n{seq}\n+\n{'I' * len(seq)}\n" for c, b, seq in usable))
        sam = _run(bwa_command(folder / prefix, 1, paired=False, reads=str(fq)))
        home = sum(1 for l in sam.splitlines() if not l.startswith("@") and
                   (f := l.split("	")) and not int(f[1]) & NOT_PRIMARY and
                   f[0] == f"{f[2]}:{f[3]}")
        if not usable or home < PROBE_AGREE * len(usable):
            return (f"built here: the prebuilt index placed {home} of {len(usable)} reads cut "
                    "from the FASTA back where they came from")
        out.mkdir()
        for s in suffixes:
            os.replace(folder / (prefix + s), out / (indexes.PREFIX + s))
        return (f"prebuilt: the publisher's index, with the FASTA's {len(seqs)} sequence names "
                f"and lengths, placed {home} of {len(usable)} reads cut from it back home")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        tarball.unlink(missing_ok=True)
