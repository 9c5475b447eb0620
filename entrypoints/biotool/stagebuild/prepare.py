"""What staging makes of fetched files (manifest field `prepare`), and the indexes it builds.
Each way is a preparer in PREPARERS, fn(entry, fetched, item_dir, beside) -> Prepared (its
files and the facts it found; the frozen manifest entry is never changed); a heavy one has
a module of its own.

  (none)        one file as it is, or several FASTA files concatenated (a demo BLAST panel)
  fasta         a genome: plain gzip (NCBI .fna.gz) decompressed to plain FASTA, which
                samtools faidx, minimap2 and the annotate tools' reader all take; an index
                the publisher built of it (`prebuilt`) is used instead of building one when
                it matches the FASTA (biotool.stagebuild.prebuilt)
  blastdb-tar   NCBI prebuilt BLAST database tarballs (biotool.stagebuild.blastdb)
  gene-table    a versioned RefSeq annotation GFF3 -> the gene table (biotool.stagebuild.genetable)
  gtf           a release's gene annotation GTF on its genome's own sequence names, checked
                against the staged genome's .fai (biotool.stagebuild.gtf)
  kraken2-tar   a prebuilt Kraken 2 database tarball unpacked, and loaded once by kraken2
                (biotool.stagebuild.kraken2)
  hf-model      a Hugging Face model folder, checked by the item's own `check`
                (biotool.stagebuild.hfmodel)
"""

from __future__ import annotations

import gzip
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from biotool.alignment import indexes
from biotool.output import ToolFailure
from biotool.staging import StagingError, usable
from biotool.staging.item import StagedItem
from biotool.staging.manifest import item_key
from biotool.stagebuild import blastdate, blastdb, genetable, gtf, hfmodel, kraken2
from biotool.stagebuild.pins import prebuilt_name
from biotool.stagebuild.prebuilt import use_prebuilt
from biotool.stagebuild.tools import Prepared, run_tool


@dataclass(frozen=True)
class Beside:
    """The home an item is staged into and what is staged there so far, for an item checked
    against another one (a GTF against its genome's sequence names)."""
    home: Path
    items: dict  # "kind/name" -> staged record, its file paths relative to home

    def item(self, kind: str, name: str) -> StagedItem | None:
        """The usable item staged there so far (its origin is moot while staging)."""
        rec = self.items.get(item_key(kind, name))
        item = StagedItem.from_record(rec, "image", self.home) if rec else None
        return item if usable(item) else None

    def file(self, kind: str, name: str, key: str) -> Path | None:
        item = self.item(kind, name)
        path = item.path(key) if item and key in item.files else None
        return path if path is not None and path.exists() else None


def build_index(fasta: Path, index: str, item_dir: Path) -> Path:
    """Build one index next to the item and return the path recorded for it."""
    if index == "faidx":
        run_tool(["samtools", "faidx", str(fasta)])
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
        run_tool(["makeblastdb", "-in", str(fasta), "-dbtype", "nucl", "-parse_seqids",
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


def _gene_table(entry: Mapping[str, Any], fetched: list[Path], item_dir: Path) -> Prepared:
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
    return Prepared({"main": out}, {"genes": n})


def _gtf(entry: Mapping[str, Any], fetched: list[Path], item_dir: Path,
         beside: Beside | None) -> Prepared:
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
    return Prepared({"main": out}, {
        "genes": len(check.genes),
        "contigs": {**check.record(), "genome": ref,
                    "genome_sha256": beside.item("reference", ref).sha256},
        "use": "featureCounts -a {main} -o counts.txt sample.bam"})


def _sequences(entry: Mapping[str, Any], fetched: list[Path], item_dir: Path,
               beside: Beside | None) -> Prepared:
    """A FASTA (`fasta`: decompressed; none: as fetched, or several concatenated) and the
    indexes the entry asks for, a publisher's prebuilt one used when it matches."""
    if entry.get("prepare") == "fasta":
        main = _plain_fasta(fetched[0], item_dir / f"{entry['name']}.fa")
    elif len(fetched) > 1:  # a database from several FASTA files: concatenate once
        main = item_dir / f"{entry['name']}.fasta"
        with open(main, "wb") as out:
            for part in fetched:
                out.write(part.read_bytes().rstrip(b"\n") + b"\n")
                part.unlink()
    else:
        main = fetched[0]
    files, origin = {"main": main}, {}
    for index in entry.get("indexes", []):
        tarball = item_dir / prebuilt_name(index)
        if tarball.exists():
            out = item_dir / indexes.artifact_name(index)
            used = origin[index] = use_prebuilt(index, tarball, main, out)
            if used.startswith("prebuilt"):
                files[index] = out
                continue
        files[index] = build_index(main, index, item_dir)
    for unused in item_dir.glob(prebuilt_name("*")):  # a prebuilt index not asked for
        unused.unlink()
    return Prepared(files, {"index_origin": origin} if origin else {})


def _alone(preparer: Callable[[Mapping[str, Any], list[Path], Path], Prepared]):
    """A preparer that needs nothing staged beside its item."""
    return lambda entry, fetched, item_dir, beside: preparer(entry, fetched, item_dir)


# The manifest's `prepare` -> fn(entry, fetched, item_dir, beside).
PREPARERS: Mapping[str | None, Callable[..., Prepared]] = MappingProxyType({
    None: _sequences,
    "fasta": _sequences,
    "blastdb-tar": _alone(blastdb.prepare),
    "gene-table": _alone(_gene_table),
    "gtf": _gtf,
    "kraken2-tar": _alone(kraken2.prepare),
    "hf-model": _alone(hfmodel.prepare),
})


def prepare(entry: Mapping[str, Any], fetched: list[Path], item_dir: Path,
            beside: Beside | None = None) -> Prepared:
    """The item's files {"main": path, index name: path} made from what was fetched into
    item_dir, and the facts found on the way (`beside`: what is staged with it, for an item
    checked against another)."""
    how = entry.get("prepare") or None
    if how not in PREPARERS:
        raise StagingError(f"unknown prepare {how!r}")
    return PREPARERS[how](entry, fetched, item_dir, beside)
