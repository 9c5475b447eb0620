"""What staging makes of fetched files (manifest field `prepare`), and the indexes it builds.

  (none)        one file as it is, or several FASTA files concatenated (a demo BLAST panel)
  fasta         a genome: plain gzip (NCBI .fna.gz) decompressed to plain FASTA, which
                samtools faidx, minimap2 and the annotate tools' reader all take
  blastdb-tar   NCBI prebuilt BLAST database tarballs (+ taxdb) unpacked, an alias `db`
                over the volumes, and each sequence's taxid and scientific name recorded
  gene-table    NCBI gene_info + RefSeq GFF3 -> the gene table (biotool.staging.genetable)
  hf-model      a Hugging Face model folder; its tokenizer must encode a real C2S prompt
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from biotool.output import ToolFailure
from biotool.reads import indexes
from biotool.staging import StagingError

# A real C2S prompt's cell sentence: highly expressed genes of a human PBMC.
PROBE_GENES = ("MALAT1 TMSB4X B2M EEF1A1 TPT1 RPS27 RPL13 FTL CD74 HLA-DRA LYZ S100A9 "
               "CD3E IL7R NKG7 GNLY MS4A1 CD79A").split()


def _run(cmd: list[str], env: dict | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise StagingError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


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
    volumes = []
    for archive in fetched:
        _safe_extract(archive, db_dir)
        stem = archive.name.split(".tar")[0]
        if stem != "taxdb":
            volumes.append(stem)
    if not volumes:
        raise StagingError("no BLAST database among the fetched archives (only taxdb)")
    # An alias named `db`: the path the local search opens, over the volumes as NCBI names them.
    (db_dir / "db.nal").write_text(f"TITLE {entry.get('title') or volumes[0]}\n"
                                   f"DBLIST {' '.join(volumes)}\n")
    env = {**os.environ, "BLASTDB": str(db_dir)}
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
    return {"main": db_dir, "blastdb": db_dir}


def _gene_table(entry: dict, fetched: list[Path], item_dir: Path) -> dict:
    from biotool.staging import genetable

    info = [p for p in fetched if "gene_info" in p.name]
    gff = [p for p in fetched if ".gff" in p.name or ".gtf" in p.name]
    if len(info) != 1 or len(gff) != 1:
        raise StagingError("a gene-table item needs one gene_info and one GFF3 source")
    out = item_dir / "genes.tsv"
    n = genetable.build(info[0], gff[0], out, reference=entry["reference"],
                        seqids=entry.get("seqids", "refseq"))
    if n == 0:
        raise StagingError(f"no protein-coding CDS of {entry['reference']} in {gff[0].name}")
    for p in fetched:
        p.unlink()
    entry["genes"] = n
    return {"main": out}


def check_tokenizer(folder: Path) -> int:
    """Encode a real C2S prompt with the staged tokenizer; the number of ids (never 0)."""
    import contextlib
    import sys

    from biotool.singlecell.c2s import prompt

    try:
        with contextlib.redirect_stdout(sys.stderr):
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(str(folder))
            ids = tok(prompt(PROBE_GENES, "Homo sapiens"))["input_ids"]
    except Exception as exc:  # noqa: BLE001 - any loader failure means an unusable folder
        why = " ".join(str(exc).split())[:300]
        raise StagingError(f"the tokenizer in {folder.name} does not load ({why})") from None
    if not ids:
        raise StagingError(f"the tokenizer in {folder.name} encodes a C2S prompt to no ids "
                           "(a tokenizer folder without its vocabulary?)")
    return len(ids)


def prepare(entry: dict, fetched: list[Path], item_dir: Path) -> dict[str, Path]:
    """The item's files {"main": path, index name: path} from what was fetched into item_dir."""
    how = entry.get("prepare")
    if how == "blastdb-tar":
        return _blastdb(entry, fetched, item_dir)
    if how == "gene-table":
        return _gene_table(entry, fetched, item_dir)
    if how == "hf-model":
        weights = item_dir / "weights"
        entry["tokenizer_probe_ids"] = check_tokenizer(weights)
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
        files[index] = build_index(main, index, item_dir)
    return files
