"""The bad-input corpus: malformed files and arguments, by class, for every command of
`biotool` and `molperceive`, each with the exit code and culprit the contract (docs/contract.md) wants.

`cases()` lists the cases (plain dicts, so the in-image driver needs no project code);
`materialise(root)` writes every file they name under `root`, where the cases run (cwd).
Cases share one folder and run concurrently, so none names a path another case could
create (each missing folder is its own). Expected codes: 2 bad input or usage (also where docs/contract.md is silent and the user gave
something wrong), 3 refused by the rules. `{home}` in an argument is the staged home.

Classes: special (FIFO, socket, device, directory, symlink loop, broken link, unreadable,
missing, not-a-folder, empty path, sparse 10 GB file), format (wrong or damaged format:
bz2/xz/zstd, gzip truncated or corrupt, BOM, UTF-16, NUL, binary, FASTA for FASTQ, protein),
content (malformed records), same (the same content twice), json (nesting, huge integers,
NaN, surrogates, not an object), count (sizes and counts out of bounds: negative, zero, impossible, or a hazard such as
100,000 threads; a count larger than the data, which only means "all", is not a case), option (empty or
impossible option values), output (unwritable, a folder, a device, empty), cache (unwritable
cache), usage (unknown commands and options).
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import random
import shutil
import socket
import struct
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "refs" / "demo"
READS = DEMO / "sarscov2" / "MT007544.fastq"
REF = DEMO / "sarscov2" / "MN908947.3.reference.fasta"
SMILES = REPO / "tests" / "unit" / "molperceive" / "data" / "nci_first_400.smi"
CONTIG = "MN908947.3"
STAGED = "MN908947.3"  # a staged reference name (demo set)

GENES = ["CD3E", "IL7R", "LTB", "MS4A1", "CD79A", "NKG7", "GNLY", "LYZ", "CST3", "FCGR3A",
         "CD14", "S100A8", "S100A9", "CD8A", "CCR7", "PPBP", "FCER1A", "GZMB", "CD4", "HLA-DRA"]

SPARSE_BYTES = 10 * 2 ** 30  # a 10 GB file that takes no disk: any unbounded read is caught

# Special files: (class tag, path, culprit in the error line); the culprit "" means the option.
SPECIALS = [
    ("missing", "no-such-file.txt"),
    ("dir", "adir"),
    ("fifo", "fifo"),
    ("socket", "sock"),
    ("devzero", "/dev/zero"),
    ("devnull", "/dev/null"),
    ("symlink-loop", "loop1"),
    ("broken-symlink", "broken"),
    ("unreadable", "unreadable.txt"),
    ("folder-unreadable", "noperm/inside.txt"),
    ("not-a-folder", "good.fastq/inside"),
    ("empty-file", "empty.txt"),
    ("sparse-10GB", "sparse.bin"),
    ("empty-path", ""),
]


# Paths whose meaning depends on not being root (modes 000 and 555).
NONROOT = {"unreadable.txt", "noperm/inside.txt", "noperm-matrix", "ro/v.vcf.gz", "ro/b.jsonl",
           "ro-cache", "noperm/v.vcf.gz"}


# ------------------------------------------------------------------ the files

def _records(lines: list[str], a: int, b: int) -> str:
    return "".join(lines[4 * a:4 * b])


def _write(root: Path, name: str, data) -> Path:
    p = root / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    p.write_bytes(data)
    return p


def _bam(path: Path, ref_seq: str, order: str = "sorted", contig_len: int | None = None,
         index: bool = True, first: int = 1000, n: int = 40, step: int = 150) -> None:
    """A BAM of n exact 100-base matches to the reference (known truth, no aligner needed)."""
    import pysam

    header = {"HD": {"VN": "1.6", "SO": "coordinate" if order == "sorted" else "unsorted"},
              "SQ": [{"SN": CONTIG, "LN": contig_len or len(ref_seq)}]}
    starts = list(range(first, first + n * step, step))
    if order != "sorted":
        starts.reverse()
    with pysam.AlignmentFile(str(path), "wb", header=header) as out:
        for i, s in enumerate(starts):
            a = pysam.AlignedSegment(out.header)
            a.query_name, a.query_sequence = f"r{i}", ref_seq[s:s + 100]
            a.reference_id, a.reference_start, a.mapping_quality = 0, s, 60
            a.cigarstring, a.query_qualities = "100M", pysam.qualitystring_to_array("I" * 100)
            out.write(a)
    if index:
        pysam.index(str(path))


EOF_BLOCK = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


def _bgzf_stored(stream: bytes) -> bytes:
    """BGZF of stored (uncompressed) deflate blocks: a block's size depends on its length
    only, so a copy with bytes changed in place keeps every offset of the original's index."""
    out = []
    for i in range(0, len(stream), 0xFF00):
        part = stream[i:i + 0xFF00]
        stored = zlib.compressobj(0, zlib.DEFLATED, -15)
        body = stored.compress(part) + stored.flush()
        out.append(b"\x1f\x8b\x08\x04" + bytes(6) + b"\x06\x00BC\x02\x00"
                   + struct.pack("<H", len(body) + 25) + body
                   + struct.pack("<II", zlib.crc32(part), len(part)))
    return b"".join(out) + EOF_BLOCK


def _hostile_bams(root: Path, ref_seq: str) -> None:
    """BAMs that pass every pysam check (sort order and index sampled on the first reads)
    and then mislead what reads the rest: bamscan in breakpoints, pileup in variants."""
    import pysam

    w = lambda name, data: _write(root, name, data)  # noqa: E731
    # Indexes: a FIFO, 1 GB of zeros after a BAI, 64 MB after a CSI, a chunk 128 TB in.
    _bam(root / "idx-fifo.bam", ref_seq, index=False)
    os.mkfifo(root / "idx-fifo.bam.bai")
    _bam(root / "idx-sparse.bam", ref_seq)
    with open(root / "idx-sparse.bam.bai", "r+b") as fh:
        fh.truncate(1 << 30)
    _bam(root / "idx-bomb.bam", ref_seq, index=False)
    pysam.index("-c", str(root / "idx-bomb.bam"))
    zeros = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = zeros.compress(bytes(0xFF00)) + zeros.flush()
    block = (b"\x1f\x8b\x08\x04" + bytes(6) + b"\x06\x00BC\x02\x00"
             + struct.pack("<H", len(body) + 25) + body
             + struct.pack("<II", zlib.crc32(bytes(0xFF00)), 0xFF00))
    with open(root / "idx-bomb.bam.csi", "ab") as fh:
        fh.write(block * 1000)
    _bam(root / "idx-far-chunk.bam", ref_seq, first=16_400, step=10)  # all in bin 4682
    bai = (root / "idx-far-chunk.bam.bai").read_bytes()
    far = 1 << 47
    (root / "idx-far-chunk.bam.bai").write_bytes(
        bai[:8] + struct.pack("<i", struct.unpack_from("<i", bai, 8)[0] + 1)
        + struct.pack("<IiQQ", 4681, 1, far << 16, (far + 1) << 16) + bai[12:])
    # Records: the 5,051st of 5,100 (past pysam's 5,000) changed in place, the index intact.
    _bam(root / "late.bam", ref_seq, first=0, n=5100, step=5, index=False)
    stream = gzip.decompress((root / "late.bam").read_bytes())
    w("late.bam", _bgzf_stored(stream))
    pysam.index(str(root / "late.bam"))
    index = (root / "late.bam.bai").read_bytes()
    for f in ("late.bam", "late.bam.bai"):
        (root / f).unlink()
    at = 12 + struct.unpack_from("<i", stream, 4)[0] + 4 + len(CONTIG) + 1 + 4
    for _ in range(5050):
        at += 4 + struct.unpack_from("<i", stream, at)[0]
    for name, where, value in (("late-corrupt.bam", at + 20, 1 << 30),  # l_seq past the record
                               ("late-unsorted.bam", at + 8, 100),  # pos
                               ("late-negative-pos.bam", at + 8, -100_000)):
        bad = bytearray(stream)
        struct.pack_into("<i", bad, where, value)
        w(name, _bgzf_stored(bytes(bad)))
        w(name + ".bai", index)


def _rows_and_predictions(root: Path) -> None:
    """A valid corpus (molperceive build on 20 NCI molecules) and perfect predictions for it."""
    from molperceive.build import build

    lines = SMILES.read_text().splitlines(keepends=True)[:20]
    _write(root, "smiles.smi", "".join(lines))
    build(str(root / "smiles.smi"), str(root / "rows.jsonl"), seed=0, eval_fraction=0.5,
          rows_per_molecule=1, graph_fraction=0.25, invalid_fraction=0.1, para_fraction=0.3,
          limit=None, fields=None)
    preds = []
    rows = [json.loads(x) for x in (root / "rows.jsonl").read_text().splitlines() if x.strip()]
    for row in rows:
        if row["status"] == "ok":
            preds.append({"id": row["id"], "answers": row["labels"]})
        else:
            preds.append({"id": row["id"], "abstain": True, "reason": row["reason"]})
    _write(root, "preds.jsonl", "".join(json.dumps(p) + "\n" for p in preds))
    first = rows[0]
    deep = "[" * 10000 + "]" * 10000
    _write(root, "rows-deep.jsonl", '{"id": "x", "labels": ' + deep + "}\n")
    _write(root, "rows-bigint.jsonl",
           json.dumps({**first, "heavy_atom_count": 0})[:-1].replace(
               '"heavy_atom_count": 0', '"heavy_atom_count": ' + "9" * 5000) + "}\n")
    _write(root, "rows-labels-string.jsonl", json.dumps({**first, "labels": "C6H6O"}) + "\n")
    _write(root, "rows-array.jsonl", "[1, 2, 3]\n")
    _write(root, "rows-notjson.jsonl", "this is not JSON\n")
    _write(root, "rows-utf16.jsonl", (json.dumps(first) + "\n").encode("utf-16"))
    _write(root, "rows-blank.jsonl", "\n\n   \n")
    _write(root, "rows-nan.jsonl", json.dumps(first).replace(
        f'"heavy_atom_count": {first["heavy_atom_count"]}', '"heavy_atom_count": NaN') + "\n")
    _write(root, "rows.jsonl.gz", gzip.compress((root / "rows.jsonl").read_bytes()))
    # Rows the gate must refuse though every contract key is right: a key the contract does not
    # know, and "id" given twice (which value counts would be the parser's choice).
    _write(root, "rows-extra-key.jsonl", json.dumps({**first, "answer_hint": "C6H6O"}) + "\n")
    _write(root, "rows-extra-input-key.jsonl",
           json.dumps({**first, "input": {**first["input"], "hint": "x"}}) + "\n")
    _write(root, "rows-duplicate-id.jsonl",
           '{"id": "mp-999998", ' + json.dumps(first)[1:] + "\n")
    _write(root, "preds-unknown-id.jsonl", '{"id": "mp-999999", "answers": {}}\n')
    _write(root, "preds-deep.jsonl", '{"id": "' + first["id"] + '", "answers": ' + deep + "}\n")
    _write(root, "preds-bigint.jsonl", '{"id": "' + first["id"] + '", "answers": '
           '{"heavy_atom_count": ' + "9" * 5000 + "}}\n")
    _write(root, "preds-array.jsonl", "[]\n")
    _write(root, "preds-answers-string.jsonl", json.dumps({"id": first["id"], "answers": "C"}) + "\n")
    _write(root, "smiles-5MB.smi", "C" * (5 * 2 ** 20) + "\n")
    _write(root, "smiles-nul.smi", "CCO\x00CC\n")
    _write(root, "smiles-bom.smi", "\ufeffCCO ethanol\n")
    _write(root, "smiles-utf16.smi", "CCO ethanol\n".encode("utf-16"))
    shutil.copyfile(root / "smiles.smi", root / "smiles-victim.smi")
    _write(root, "smiles-comments.smi", "# nothing but a comment\n\n")


def materialise(root: str | os.PathLike) -> Path:
    """Write every file the cases name under `root` (created, world-accessible, so the
    cases can run as any UID) and the manifest `cases.json` beside them."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(14)
    lines = READS.read_text().splitlines(keepends=True)
    good = _records(lines, 0, 50)
    ref_text = REF.read_text()
    ref_seq = "".join(ref_text.splitlines()[1:])
    w = lambda name, data: _write(root, name, data)  # noqa: E731

    # Valid companions.
    w("good.fastq", good)
    w("good2.fastq", _records(lines, 50, 100))
    w("copy.fastq", good)
    w("good.fastq.gz", gzip.compress(good.encode()))
    w("ref.fasta", ref_text)
    w("queries.fa", "".join(f">q{i}\n{lines[4 * i + 1]}" for i in range(3)))
    w("args.json", '{"sequence": "ATGGCCTAA"}')
    _bam(root / "sorted.bam", ref_seq)
    shutil.copyfile(root / "sorted.bam", root / "copy.bam")
    shutil.copyfile(root / "sorted.bam.bai", root / "copy.bam.bai")
    for d in ("adir", "emptydir", "out"):
        (root / d).mkdir(exist_ok=True)

    # Special files.
    w("empty.txt", b"")
    w("binary.bin", rng.randbytes(4096))
    os.mkfifo(root / "fifo")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(root / "sock"))
    s.close()
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    os.symlink("gone-target", root / "broken")
    w("unreadable.txt", good)
    w("noperm/inside.txt", good)
    with open(root / "sparse.bin", "wb") as fh:
        fh.truncate(SPARSE_BYTES)

    # Reads, damaged.
    w("truncated.fastq", good[: len(good) // 2 - 7])
    recs = good.splitlines(keepends=True)
    w("qual-short.fastq", "".join(recs[:3]) + recs[3][:20] + "\n" + "".join(recs[4:]))
    w("qual-below-bang.fastq", "".join(recs[:3]) + recs[3].replace(recs[3][5], " ", 3) + "".join(recs[4:]))
    w("nul.fastq", "".join(recs[:1]) + recs[1][:10] + "\x00" + recs[1][11:] + "".join(recs[2:]))
    w("non-ascii.fastq", "".join(recs[:1]) + recs[1][:10] + "\u00e9" + recs[1][11:] + "".join(recs[2:]))
    w("long-name.fastq", "@" + "n" * 300 + "\n" + "".join(recs[1:]))
    w("not-bases.fastq", "".join(recs[:1]) + "ACGT1234XYZ!" * 3 + "\n+\n" + "I" * 36 + "\n" + "".join(recs[4:]))
    w("header-only.fastq", "@r1\n")
    w("fasta-as.fastq", ref_text)
    w("reads.fastq.bz2", bz2.compress(good.encode()))
    w("reads.fastq.xz", lzma.compress(good.encode()))
    w("reads.fastq.zst", b"\x28\xb5\x2f\xfd" + rng.randbytes(200))
    w("bom.fastq", "\ufeff" + good)
    w("utf16.fastq", good.encode("utf-16"))
    gz = gzip.compress(good.encode())
    w("gz-truncated.fastq.gz", gz[: len(gz) // 2])
    corrupt = bytearray(gz)
    for i in range(len(corrupt) // 2, len(corrupt) // 2 + 64):
        corrupt[i] ^= 0xFF
    w("gz-corrupt.fastq.gz", bytes(corrupt))
    w("gz-empty.fastq.gz", gzip.compress(b""))
    w("gz-trailing-junk.fastq.gz", gz + rng.randbytes(300))
    w("protein.fastq", "@p1\nMKWVTFISLLFLFSSAYSRGVFRRDTHKSEIAHRFK\n+\n" + "I" * 36 + "\n")

    # References, damaged.
    w("protein.fasta", ">prot\n" + "MKWVTFISLLFLFSSAYSRGVFRRDTHKSEIAHRFKDLGEENFKALVLIAFAQYLQQCPFEDHVK" * 20 + "\n")
    w("empty-name.fasta", ">\n" + ref_seq[:5000] + "\n")
    w("empty-record.fasta", ">a\n>b\n" + ref_seq[:5000] + "\n")
    w("dup-names.fasta", f">x\n{ref_seq[:3000]}\n>x\n{ref_seq[3000:6000]}\n")
    w("ragged.fasta", ">x\n" + ref_seq[:60] + "\n" + ref_seq[60:80] + "\n" + ref_seq[80:140] + "\n")
    # References an indexer is known to crash or fail on (biotool.alignment.indexes): a record
    # name past what bwa reads back (1 MB segfaults bwa mem, 10,000 fails), all N for bowtie2
    # and hisat2, no record longer than salmon's k.
    w("name-1MB.fasta", ">" + "n" * 1_000_000 + "\n" + ref_seq[:5000] + "\n")
    w("name-10k.fasta", ">" + "n" * 10_000 + "\n" + ref_seq[:5000] + "\n")
    w("all-n.fasta", ">allN\n" + "N" * 5000 + "\n")
    w("4bp.fasta", ">tiny\nACGT\n")
    w("31bp.fasta", ">short\n" + ref_seq[:31] + "\n")
    w("nul.fasta", ">x\n" + ref_seq[:2000] + "\x00" + ref_seq[2001:4000] + "\n")
    w("ref.fasta.gz", gzip.compress(ref_text.encode()))
    w("ref.fasta.bz2", bz2.compress(ref_text.encode()))
    w("bom.fasta", "\ufeff" + ref_text)
    w("utf16.fasta", ref_text.encode("utf-16"))
    w("fastq-as.fasta", good)
    w("header-only.fasta", ">x\n")
    w("queries-protein.fa", ">p\nMKWVTFISLLFLFSSAYSRGVFRRDTHKSEIAHRFKDLGEENFK\n")
    w("queries-empty-seq.fa", ">a\n>b\n")

    # BAMs, damaged or mismatched.
    shutil.copyfile(root / "sorted.bam", root / "noindex.bam")
    shutil.copyfile(root / "sorted.bam", root / "bad-bai.bam")
    w("bad-bai.bam.bai", rng.randbytes(300))
    _bam(root / "unsorted.bam", ref_seq, order="unsorted", index=False)
    shutil.copyfile(root / "sorted.bam.bai", root / "unsorted.bam.bai")  # stale index
    _bam(root / "other-ref.bam", ref_seq, contig_len=len(ref_seq) + 5000)
    w("junk.bam", rng.randbytes(2000))
    w("sam-text.bam", f"@SQ\tSN:{CONTIG}\tLN:{len(ref_seq)}\nr1\t0\t{CONTIG}\t1\t60\t4M\t*\t0\t0\tACGT\tIIII\n")
    w("reads.cram", b"CRAM\x03\x00" + rng.randbytes(500))
    w("reads.cram.crai", b"")
    _hostile_bams(root, ref_seq)

    # JSON arguments.
    deep = "[" * 10000 + "]" * 10000
    w("deep.json", '{"sequence": "ACGT", "x": ' + deep + "}")
    w("bigint.json", '{"sequence": "ATGGCC", "table": ' + "9" * 5000 + "}")
    w("array.json", '["ACGT"]')
    w("invalid.json", '{"sequence": "ACGT",')
    w("bom.json", "\ufeff" + '{"sequence": "ACGT"}')
    w("utf16.json", '{"sequence": "ACGT"}'.encode("utf-16"))
    w("latin1.json", '{"sequence": "ACGT", "note": "caf\u00e9"}'.encode("latin-1"))
    w("nan.json", '{"sequence": "ACGTACGTACGTACGTAC", "na_mM": NaN}')

    # Single-cell matrices.
    header = "cell," + ",".join(GENES) + "\n"
    body = "".join(f"c{i}," + ",".join(str(rng.randint(0, 9)) for _ in GENES) + "\n"
                   for i in range(30))
    w("good.csv", header + body)
    w("nan.csv", header + body + "cnan," + ",".join(["nan"] * len(GENES)) + "\n")
    w("inf.csv", header + body + "cinf," + ",".join(["inf"] * len(GENES)) + "\n")
    w("ragged.csv", header + body + "cshort,1,2\n")
    w("text.csv", header + body + "ctext," + ",".join(["abc"] * len(GENES)) + "\n")
    w("negative.csv", header + body + "cneg," + ",".join(["-5"] * len(GENES)) + "\n")
    w("header-only.csv", header)
    w("corrupt.csv.gz", gzip.compress((header + body).encode())[:120])
    w("junk.pkl", rng.randbytes(1000))
    w("junk.h5ad", b"\x89HDF\r\n\x1a\n" + rng.randbytes(1000))
    w("junk.h5", b"\x89HDF\r\n\x1a\n" + rng.randbytes(1000))
    w("mtx-alone/counts.mtx.gz", gzip.compress(b"%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 5\n"))
    w("noperm-matrix/matrix.csv", header + body)

    _rows_and_predictions(root)

    # Read-only places for outputs.
    (root / "ro").mkdir(exist_ok=True)
    (root / "ro-cache").mkdir(exist_ok=True)

    # The launcher's: a task source whose key.json is not JSON.
    bad_task = root / "harbor-badkey" / LAUNCHER_TASK
    w(f"harbor-badkey/{LAUNCHER_TASK}/key.json", '{"task": "' + LAUNCHER_TASK + '", ')
    w(f"harbor-badkey/{LAUNCHER_TASK}/instruction.md", "Say D614G.\n")
    w(f"harbor-badkey/{LAUNCHER_TASK}/solve.sh", "#!/bin/sh\n")
    assert bad_task.is_dir()

    manifest = {"cases": cases()}
    (root / "cases.json").write_text(json.dumps(manifest, indent=1))

    # World-accessible so any UID can run the cases; then take away what the cases forbid.
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o777)
        for n in filenames:
            p = Path(dirpath) / n
            if not p.is_symlink() and p.is_file():
                os.chmod(p, 0o666)
    os.chmod(root / "unreadable.txt", 0)
    os.chmod(root / "noperm", 0)
    os.chmod(root / "noperm-matrix", 0)
    os.chmod(root / "ro", 0o555)
    os.chmod(root / "ro-cache", 0o555)
    return root


# ------------------------------------------------------------------ the cases

def cases() -> list[dict]:
    out: list[dict] = []
    seen: set[str] = set()

    def add(id_: str, family: str, argv: list[str], expect: int = 2, culprit: str | None = None,
            cls: str = "", **extra) -> None:
        assert id_ not in seen, id_
        seen.add(id_)
        # Permission cases mean nothing to root (it reads mode-000 files): the image tier runs
        # them as an arbitrary UID; a unit run as root skips them.
        nonroot = any(a.lstrip("@") in NONROOT for a in argv) or any(
            v in NONROOT for v in (extra.get("env") or {}).values())
        out.append({"id": id_, "family": family, "cls": cls, "argv": argv, "expect": expect,
                    "culprit": culprit, "nonroot": nonroot, **extra})

    bt, mp = "biotool", "molperceive"

    # -------- special files in every option that names a file
    slots = [
        ("reads", "align.fastq", lambda x: [bt, "align", "--fastq", x, "--reference", STAGED], "--fastq"),
        ("reads", "align.reference", lambda x: [bt, "align", "--fastq", "good.fastq", "--reference", x], "--reference"),
        ("reads", "breakpoints.fastq", lambda x: [bt, "breakpoints", "--fastq", x, "--reference", STAGED], "--fastq"),
        ("reads", "breakpoints.bam", lambda x: [bt, "breakpoints", "--bam", x, "--reference", STAGED], "--bam"),
        ("reads", "breakpoints.reference", lambda x: [bt, "breakpoints", "--fastq", "good.fastq", "--reference", x], "--reference"),
        ("reads", "variants.fastq", lambda x: [bt, "variants", "--fastq", x, "--reference", STAGED], "--fastq"),
        ("reads", "variants.bam", lambda x: [bt, "variants", "--bam", x, "--reference", STAGED], "--bam"),
        ("reads", "variants.reference", lambda x: [bt, "variants", "--fastq", "good.fastq", "--reference", x], "--reference"),
        ("reads", "index.reference", lambda x: [bt, "index", "--kind", "bowtie2", "--reference", x], "--reference"),
        ("taxonomy", "taxonomy.fasta", lambda x: [bt, "taxonomy", "--fasta", x, "--local"], "--fasta"),
        ("taxonomy", "taxonomy.fastq", lambda x: [bt, "taxonomy", "--fastq", x, "--local"], "--fastq"),
        ("singlecell", "celltype.matrix", lambda x: [bt, "celltype", "--matrix", x], "--matrix"),
        ("annotate", "call.args-file", lambda x: [bt, "call", "seq_stats", "@" + x], "args"),
        ("molperceive", "label.file", lambda x: [mp, "label", "--file", x], "--file"),
        ("molperceive", "build.smiles", lambda x: [mp, "build", x, "--out", "out/built-{tag}.jsonl"], "smiles"),
        ("molperceive", "gate.rows", lambda x: [mp, "gate", x], "rows"),
        ("molperceive", "score.rows", lambda x: [mp, "score", x, "preds.jsonl"], "rows"),
        ("molperceive", "score.predictions", lambda x: [mp, "score", "rows.jsonl", x], "predictions"),
    ]
    for family, slot, make, option in slots:
        for tag, path in SPECIALS:
            culprit = path or (option if option.startswith("-") else None)
            argv = [a.replace("{tag}", tag) for a in make(path)]  # each output its own
            extra = {"outputs": [argv[-1]]} if slot.startswith("build") else {}
            add(f"{slot}.{tag}", family, argv, culprit=culprit, cls="special", **extra)
    # a directory is a matrix when it holds one; an empty or unrelated one is not
    add("celltype.matrix.empty-folder", "singlecell", [bt, "celltype", "--matrix", "emptydir"],
        culprit="emptydir", cls="special")
    add("celltype.matrix.matrix-folder-unreadable", "singlecell",
        [bt, "celltype", "--matrix", "noperm-matrix"], culprit="noperm-matrix", cls="special")
    add("celltype.reference.fifo", "singlecell",
        [bt, "celltype", "--matrix", "good.csv", "--reference", "fifo"], culprit="fifo", cls="special")
    add("celltype.reference.dir", "singlecell",
        [bt, "celltype", "--matrix", "good.csv", "--reference", "adir"], culprit="adir", cls="special")
    add("celltype.c2s-model.fifo", "singlecell",
        [bt, "celltype", "--matrix", "good.csv", "--model", "c2s-celltype", "--c2s-model", "fifo"],
        culprit="fifo", cls="special")

    # -------- reads: damaged FASTQ, for each reads command
    fastq_bad = {
        "truncated": "truncated.fastq", "quality-short": "qual-short.fastq",
        "quality-below-bang": "qual-below-bang.fastq", "nul-byte": "nul.fastq",
        "non-ascii": "non-ascii.fastq", "name-over-254": "long-name.fastq",
        "not-bases": "not-bases.fastq", "header-only": "header-only.fastq",
        "fasta-given": "fasta-as.fastq", "bz2": "reads.fastq.bz2", "xz": "reads.fastq.xz",
        "zstd": "reads.fastq.zst", "bom": "bom.fastq", "utf16": "utf16.fastq",
        "gzip-truncated": "gz-truncated.fastq.gz", "gzip-corrupt": "gz-corrupt.fastq.gz",
        "gzip-empty": "gz-empty.fastq.gz", "gzip-trailing-junk": "gz-trailing-junk.fastq.gz",
        "binary": "binary.bin", "bam-given": "sorted.bam", "protein": "protein.fastq",
    }
    for cmd in ("align", "breakpoints", "variants"):
        for tag, path in fastq_bad.items():
            add(f"{cmd}.fastq.{tag}", "reads", [bt, cmd, "--fastq", path, "--reference", STAGED],
                culprit=path, cls="format")
    # references given as a path
    ref_bad = {
        "protein": "protein.fasta", "empty-name": "empty-name.fasta",
        "empty-record": "empty-record.fasta", "duplicate-names": "dup-names.fasta",
        "ragged": "ragged.fasta", "nul-byte": "nul.fasta", "gzip": "ref.fasta.gz",
        "bz2": "ref.fasta.bz2", "bom": "bom.fasta", "utf16": "utf16.fasta",
        "fastq-given": "fastq-as.fasta", "header-only": "header-only.fasta",
        "binary": "binary.bin",
    }
    for cmd in ("align", "breakpoints", "variants"):
        for tag, path in ref_bad.items():
            add(f"{cmd}.reference.{tag}", "reads",
                [bt, cmd, "--fastq", "good.fastq", "--reference", path], culprit=path, cls="format")
        add(f"{cmd}.reference.unknown-name", "reads",
            [bt, cmd, "--fastq", "good.fastq", "--reference", "no-such-genome"],
            culprit="no-such-genome", cls="option")
    for tag, path in ref_bad.items():
        add(f"index.reference.{tag}", "reads", [bt, "index", "--kind", "hisat2", "--reference", path],
            culprit=path, cls="format")
    add("index.kind.unknown", "reads", [bt, "index", "--kind", "star", "--reference", STAGED],
        culprit="--kind", cls="option")
    # BAMs
    bam_bad = {"no-index": "noindex.bam", "garbage-index": "bad-bai.bam",
               "unsorted-stale-index": "unsorted.bam", "other-reference": "other-ref.bam",
               "junk": "junk.bam", "sam-text": "sam-text.bam", "cram": "reads.cram",
               "fastq-given": "good.fastq"}
    for cmd in ("breakpoints", "variants"):
        for tag, path in bam_bad.items():
            add(f"{cmd}.bam.{tag}", "reads", [bt, cmd, "--bam", path, "--reference", STAGED],
                culprit=path, cls="format")
    # BAMs past pysam's checks (_hostile_bams); htslib skips a negative position, bamscan not.
    hostile = {"index-fifo": "idx-fifo.bam", "index-sparse-1GB": "idx-sparse.bam",
               "index-csi-bomb": "idx-bomb.bam", "index-chunk-past-eof": "idx-far-chunk.bam",
               "late-corrupt-record": "late-corrupt.bam", "late-unsorted": "late-unsorted.bam"}
    for cmd in ("breakpoints", "variants"):
        for tag, path in hostile.items():
            add(f"{cmd}.bam.{tag}", "reads", [bt, cmd, "--bam", path, "--reference", STAGED],
                culprit=path, cls="format")
    add("breakpoints.bam.late-negative-position", "reads",
        [bt, "breakpoints", "--bam", "late-negative-pos.bam", "--reference", STAGED],
        culprit="late-negative-pos.bam", cls="format")
    # the same reads twice
    add("breakpoints.same.copy", "reads",
        [bt, "breakpoints", "--fastq", "good.fastq", "--fastq", "copy.fastq", "--reference", STAGED],
        culprit="copy.fastq", cls="same")
    add("breakpoints.same.path", "reads",
        [bt, "breakpoints", "--fastq", "good.fastq", "--fastq", "good.fastq", "--reference", STAGED],
        culprit="good.fastq", cls="same")
    add("breakpoints.same.gzip", "reads",
        [bt, "breakpoints", "--fastq", "good.fastq", "--fastq", "good.fastq.gz", "--reference", STAGED],
        culprit="good.fastq.gz", cls="same")
    add("variants.same.copy", "reads",
        [bt, "variants", "--fastq", "good.fastq", "--fastq", "copy.fastq", "--reference", STAGED],
        culprit="copy.fastq", cls="same")
    add("variants.same.gzip", "reads",
        [bt, "variants", "--fastq", "good.fastq", "--fastq", "good.fastq.gz", "--reference", STAGED],
        culprit="good.fastq.gz", cls="same")
    add("variants.same.path", "reads",
        [bt, "variants", "--fastq", "good.fastq", "--fastq", "good.fastq", "--reference", STAGED],
        culprit="good.fastq", cls="same")
    add("variants.same.bam-copy", "reads",
        [bt, "variants", "--bam", "sorted.bam", "--bam", "copy.bam", "--reference", STAGED],
        culprit="copy.bam", cls="same")
    add("variants.same.bam-path", "reads",
        [bt, "variants", "--bam", "sorted.bam", "--bam", "sorted.bam", "--reference", STAGED],
        culprit="sorted.bam", cls="same")
    add("variants.fastq-and-bam", "reads",
        [bt, "variants", "--fastq", "good.fastq", "--bam", "sorted.bam", "--reference", STAGED],
        culprit="--bam", cls="option")
    add("breakpoints.neither-fastq-nor-bam", "reads",
        [bt, "breakpoints", "--reference", STAGED], culprit="--fastq", cls="option")
    add("breakpoints.three-fastq", "reads",
        [bt, "breakpoints", "--fastq", "good.fastq", "--fastq", "good2.fastq", "--fastq",
         "copy.fastq", "--reference", STAGED], culprit="--fastq", cls="option")
    # options: empty, impossible, out of bounds
    reads_opts = {
        "align": [("--sample", "0"), ("--sample", "-5"),
                  ("--top", "0"), ("--top", "-1"),
                  ("--preset", "bogus"), ("--preset", ""), ("--timeout", "nan"),
                  ("--timeout", "-1"), ("--timeout", "inf"),
                  ("--seed", "1" * 30)],
        "breakpoints": [("--region", ""), ("--region", "chrX:1-10"), ("--region", f"{CONTIG}:0-10"),
                        ("--region", f"{CONTIG}:50000-60000"), ("--region", f"{CONTIG}:200-100"),
                        ("--region", f"{CONTIG}:1-" + "9" * 30), ("--region", f"{CONTIG}:abc"),
                        ("--top", "0"), ("--min-mapq", "-1"),
                        ("--min-mapq", "256"), ("--threads", "0"), ("--threads", "-2"),
                        ("--threads", "100000"), ("--timeout", "nan"), ("--timeout", "-3"),
                        ("--preset", "bogus"), ("--preset", "")],
        "variants": [("--region", ""), ("--region", "chrX:1-10"), ("--region", f"{CONTIG}:50000-60000"),
                     ("--min-depth", "-1"),
                     ("--min-af", "1.5"), ("--min-af", "-0.1"), ("--min-af", "nan"),
                     ("--top", "0"), ("--top", "-4"), ("--min-mapq", "-1"), ("--min-bq", "-1"),
                     ("--min-bq", "1000"), ("--threads", "0"), ("--threads", "100000"),
                     ("--timeout", "nan"), ("--timeout", "-1"), ("--vcf", ""),
                     ("--preset", "")],
    }
    for cmd, opts in reads_opts.items():
        for opt, val in opts:
            tag = val if len(val) < 12 else f"{val[:6]}..{len(val)}"
            add(f"{cmd}.option{opt}={tag}", "reads",
                [bt, cmd, "--fastq", "good.fastq", "--reference", STAGED, opt, val],
                culprit=opt, cls="count" if val.lstrip("-").isdigit() else "option",
                outputs=["out/v.vcf.gz"] if opt == "--vcf" else [])
    add("variants.reference.empty", "reads",
        [bt, "variants", "--fastq", "good.fastq", "--reference", ""], culprit="--reference", cls="option")
    # outputs
    vcf_outs = {"read-only-folder": "ro/v.vcf.gz", "is-a-folder": "adir",
                "missing-folder": "no-such-vcf-dir/v.vcf.gz", "device": "/dev/full",
                "fifo": "fifo", "folder-unreadable": "noperm/v.vcf.gz"}
    for tag, path in vcf_outs.items():
        add(f"variants.vcf.{tag}", "reads",
            [bt, "variants", "--fastq", "good.fastq", "--reference", STAGED, "--vcf", path],
            culprit=path, cls="output",
            outputs=[path + s for s in ("", ".tbi", ".csi")] if "/" in path and tag != "device" else [])
    # an unwritable cache
    for cmd in ("align", "breakpoints", "variants"):
        add(f"{cmd}.cache.read-only", "reads",
            [bt, cmd, "--fastq", "good.fastq", "--reference", "ref.fasta"],
            culprit="ro-cache", cls="cache", env={"BIOTOOL_CACHE": "ro-cache"})
    add("variants.cache.is-a-file", "reads",
        [bt, "variants", "--fastq", "good.fastq", "--reference", STAGED],
        culprit="good2.fastq", cls="cache", env={"BIOTOOL_CACHE": "good2.fastq"})

    # -------- taxonomy
    tax_bad = {"protein": ("--fasta", "queries-protein.fa"), "empty-records": ("--fasta", "queries-empty-seq.fa"),
               "fastq-as-fasta": ("--fasta", "good.fastq"), "fasta-as-fastq": ("--fastq", "queries.fa"),
               "bz2": ("--fastq", "reads.fastq.bz2"), "gzip-corrupt": ("--fastq", "gz-corrupt.fastq.gz"),
               "utf16": ("--fasta", "utf16.fasta"), "bom": ("--fasta", "bom.fasta"),
               "nul": ("--fasta", "nul.fasta"), "binary": ("--fasta", "binary.bin"),
               "truncated": ("--fastq", "truncated.fastq"), "bam": ("--fastq", "sorted.bam")}
    for tag, (opt, path) in tax_bad.items():
        add(f"taxonomy.{tag}", "taxonomy", [bt, "taxonomy", opt, path, "--local"],
            culprit=path, cls="format")
    tax_opts = [("--database", ""), ("--database", "no-such-db"), ("--top", "0"), ("--top", "-1"),
                ("--top", "1000"), ("--sample", "0"), ("--sample", "-3"), ("--timeout", "nan"), ("--timeout", "-1"),
                ("--timeout", "1e300"), ("--threads", "0"), ("--threads", "100000"),
                ("--email", ""), ("--seed", "1" * 30)]
    for opt, val in tax_opts:
        tag = val if len(val) < 12 else f"{val[:6]}..{len(val)}"
        add(f"taxonomy.option{opt}={tag}", "taxonomy",
            [bt, "taxonomy", "--fastq", "good.fastq", "--local", opt, val],
            culprit=opt, cls="count" if val.lstrip("-").isdigit() else "option")
    add("taxonomy.fasta-and-fastq", "taxonomy",
        [bt, "taxonomy", "--fasta", "queries.fa", "--fastq", "good.fastq", "--local"],
        culprit="--fast", cls="option")
    add("taxonomy.local-and-remote", "taxonomy",
        [bt, "taxonomy", "--fastq", "good.fastq", "--local", "--remote"], culprit="--remote",
        cls="option")
    add("taxonomy.stdin-empty", "taxonomy", [bt, "taxonomy", "--fasta", "-", "--local"],
        culprit="stdin", cls="format", stdin="")
    add("taxonomy.stdin-binary", "taxonomy", [bt, "taxonomy", "--fasta", "-", "--local"],
        culprit="stdin", cls="format", stdin="\x00\x01\x02garbage")

    # -------- single-cell
    mat_bad = {"nan": "nan.csv", "inf": "inf.csv", "ragged": "ragged.csv", "text-values": "text.csv",
               "negative-counts": "negative.csv", "header-only": "header-only.csv",
               "gzip-corrupt": "corrupt.csv.gz", "junk-h5ad": "junk.h5ad", "junk-h5": "junk.h5",
               "mtx-without-labels": "mtx-alone", "fastq-given": "good.fastq",
               "binary": "binary.bin", "bz2": "reads.fastq.bz2"}
    for tag, path in mat_bad.items():
        add(f"celltype.matrix.{tag}", "singlecell", [bt, "celltype", "--matrix", path],
            culprit=path, cls="format")
    add("celltype.reference.junk-pkl", "singlecell",
        [bt, "celltype", "--matrix", "good.csv", "--reference", "junk.pkl"], culprit="junk.pkl",
        cls="format")
    for opt, val in [("--model", "bogus"), ("--model", ""), ("--organism", "martian"),
                     ("--organism", ""), ("--reference", ""), ("--reference", "no-such-model"),
                     ("--sample", "0"), ("--sample", "-1"),
                     ("--timeout", "nan"), ("--timeout", "-1"),
                     ("--batch-size", "0"),
                     ("--seed", "1" * 30)]:
        tag = val if len(val) < 12 else f"{val[:6]}..{len(val)}"
        add(f"celltype.option{opt}={tag}", "singlecell",
            [bt, "celltype", "--matrix", "good.csv", opt, val], culprit=opt,
            cls="count" if val.lstrip("-").isdigit() else "option")
    add("celltype.genes.empty", "singlecell",
        [bt, "celltype", "--genes", "", "--model", "c2s-celltype"], culprit="--genes", cls="option")
    add("celltype.genes.only-commas", "singlecell",
        [bt, "celltype", "--genes", ",,,", "--model", "c2s-celltype"], culprit="--genes", cls="option")
    add("celltype.matrix-and-genes", "singlecell",
        [bt, "celltype", "--matrix", "good.csv", "--genes", "CD3E,IL7R"], culprit="--genes",
        cls="option")
    add("celltype.neither", "singlecell", [bt, "celltype", "--model", "celltypist"],
        culprit="--matrix", cls="option")

    # -------- references a tool is known to crash on: refused before it runs, naming the
    # --reference the caller gave (never the cache's copy)
    for tag, argv, culprit in [
        ("align.reference.name-1MB", [bt, "align", "--fastq", "good.fastq", "--preset", "sr",
                                      "--reference", "name-1MB.fasta"], "name-1MB.fasta"),
        ("align.reference.name-10k", [bt, "align", "--fastq", "good.fastq", "--preset", "sr",
                                      "--reference", "name-10k.fasta"], "name-10k.fasta"),
        ("index.bwa.name-1MB", [bt, "index", "--kind", "bwa", "--reference", "name-1MB.fasta"],
         "name-1MB.fasta"),
        ("index.bowtie2.all-n", [bt, "index", "--kind", "bowtie2", "--reference", "all-n.fasta"],
         "all-n.fasta"),
        ("index.hisat2.all-n", [bt, "index", "--kind", "hisat2", "--reference", "all-n.fasta"],
         "all-n.fasta"),
        ("index.salmon.4bp", [bt, "index", "--kind", "salmon", "--reference", "4bp.fasta"],
         "4bp.fasta"),
        ("index.salmon.31bp", [bt, "index", "--kind", "salmon", "--reference", "31bp.fasta"],
         "31bp.fasta"),
    ]:
        add(tag, "reads", argv, culprit=culprit, cls="content")

    # -------- annotate (`biotool call`)
    for tag, path in {"deep-nesting": "deep.json", "5000-digit-int": "bigint.json",
                      "array": "array.json", "invalid": "invalid.json", "bom": "bom.json",
                      "utf16": "utf16.json", "latin1": "latin1.json", "binary": "binary.bin",
                      "fastq": "good.fastq"}.items():
        add(f"call.args-file.{tag}", "annotate", [bt, "call", "seq_stats", "@" + path],
            culprit=path, cls="json")
    add("call.args-file.nan", "annotate", [bt, "call", "primer_tm", "@nan.json"],
        culprit="na_mM", cls="json")
    deep_arg = '{"sequence": "ACGT", "x": ' + "[" * 10000 + "]" * 10000 + "}"
    inline = {
        "deep-nesting": ("seq_stats", deep_arg, "args"),
        "5000-digit-int": ("translate", '{"sequence": "ATGGCC", "table": ' + "9" * 5000 + "}", "table"),
        "5000-digit-position": ("variant_annotate", '{"reference": "MN908947.3", "position": '
                                + "9" * 5000 + ', "ref": "A", "alt": "G"}', "position"),
        "huge-float": ("primer_tm", '{"sequence": "ACGTACGTACGTACGTAC", "na_mM": 1e999}', "na_mM"),
        "nan": ("primer_tm", '{"sequence": "ACGTACGTACGTACGTAC", "na_mM": NaN}', "na_mM"),
        "infinity": ("primer_tm", '{"sequence": "ACGTACGTACGTACGTAC", "primer_nM": -Infinity}', "primer_nM"),
        "lone-surrogate": ("seq_stats", '{"sequence": "AC\\ud800GT"}', "sequence"),
        "not-object": ("seq_stats", '"ACGT"', "args"),
        "invalid": ("seq_stats", '{"sequence": ', "args"),
        "empty-string-field": ("seq_stats", '{"sequence": ""}', "sequence"),
        "wrong-type": ("translate", '{"sequence": "ATG", "table": "11"}', "table"),
        "unknown-field": ("seq_stats", '{"sequence": "ACGT", "bogus": 1}', "bogus"),
        "frame-out-of-range": ("translate", '{"sequence": "ATGGCC", "frame": 7}', "frame"),
        "table-zero": ("translate", '{"sequence": "ATGGCC", "table": 0}', "table"),
        "not-bases": ("reverse_complement", '{"sequence": "ACGT123!"}', "sequence"),
        "primer-empty": ("primer_tm", '{"sequence": ""}', "sequence"),
        "align-empty": ("align_pairwise", '{"seq_a": "", "seq_b": "ACGT"}', "seq_a"),
        "enzymes-unknown": ("restriction_sites", '{"sequence": "GAATTC", "enzymes": ["NoSuchI"]}', "NoSuchI"),
        "gene-empty": ("gene_lookup", '{"query": ""}', "query"),
        "reference-unknown": ("seq_stats", '{"reference": "no-such-genome", "seqid": "x", "start": 1, "end": 5}', "reference"),
        "reference-range-reversed": ("seq_stats", '{"reference": "MN908947.3", "seqid": "MN908947.3", "start": 50, "end": 10}', "start"),
        "reference-range-outside": ("seq_stats", '{"reference": "MN908947.3", "seqid": "MN908947.3", "start": 1, "end": 99999999}', "end"),
        "variant-outside-named-gene": ("variant_annotate", '{"gene": "S", "reference": "MN908947.3", "position": 100, "ref": "A", "alt": "G"}', "position"),
        "variant-outside-named-gene-after": ("variant_annotate", '{"gene": "S", "position": 25500, "alt": "G"}', "position"),
        "variant-position-zero": ("variant_annotate", '{"reference": "MN908947.3", "position": 0, "ref": "A", "alt": "G"}', "position"),
        "variant-position-past-end": ("variant_annotate", '{"reference": "MN908947.3", "position": 40000, "ref": "A", "alt": "G"}', "position"),
        "variant-hgvs-huge": ("variant_annotate", '{"gene": "S", "hgvs": "c.' + "9" * 5000 + 'A>G"}', "hgvs"),
        "variant-hgvs-garbage": ("variant_annotate", '{"gene": "S", "hgvs": "p.D614G"}', "hgvs"),
        "variant-ref-mismatch": ("variant_annotate", '{"reference": "MN908947.3", "position": 23403, "ref": "C", "alt": "G"}', "ref"),
        "variant-gene-unknown": ("variant_annotate", '{"gene": "NOPE1", "hgvs": "c.1A>G"}', "gene"),
        "variant-gene-empty": ("variant_annotate", '{"gene": "", "hgvs": "c.1A>G"}', "gene"),
        "variant-table-huge": ("variant_annotate", '{"gene": "S", "hgvs": "c.1841A>G", "table": 99}', "table"),
        "variant-alt-not-bases": ("variant_annotate", '{"gene": "S", "cds_position": 1841, "alt": "Z"}', "alt"),
        "variant-cds-position-past-end": ("variant_annotate", '{"gene": "S", "cds_position": 99999, "alt": "G"}', "cds_position"),
    }
    for tag, (tool, text, culprit) in inline.items():
        add(f"call.{tool}.{tag}", "annotate", [bt, "call", tool, text], culprit=culprit, cls="json")
    add("call.stdin.deep-nesting", "annotate", [bt, "call", "seq_stats", "-"], culprit="args",
        cls="json", stdin=deep_arg)
    add("call.stdin.not-utf8", "annotate", [bt, "call", "seq_stats", "-"], culprit="stdin",
        cls="json", stdin='{"sequence": "AC\udcffGT"}')
    add("call.stdin.empty", "annotate", [bt, "call", "seq_stats", "-"], culprit="stdin",
        cls="json", stdin="")
    add("call.name.empty", "annotate", [bt, "call", "", "{}"], culprit="name", cls="option")
    add("call.name.unknown", "annotate", [bt, "call", "translat", "{}"], culprit="translat",
        cls="option")
    add("call.name.too-long", "annotate", [bt, "call", "x" * 5000, "{}"], culprit="name",
        cls="option")
    add("call.name.newline", "annotate", [bt, "call", "seq_stats\nrm -rf /", "{}"],
        culprit="name", cls="option")
    add("call.name.refused", "annotate", [bt, "call", "PubMed_search", "{}"], expect=3,
        culprit="pubmed", cls="refused")
    add("call.name.refused-lookalike", "annotate", [bt, "call", "\uff30ub\uff2ded_search", "{}"],
        expect=3, culprit="pubmed", cls="refused")
    # A name that only looks like a tool's is answered "did you mean", never run as that tool.
    for tag, name in (("fullwidth", "\uff53\uff45\uff51_\uff53\uff54\uff41\uff54\uff53"),
                      ("cyrillic", "s\u0435q_stats"), ("zero-width", "seq\u200b_stats"),
                      ("not-utf8", "seq_stats\udcff")):
        add(f"call.name.lookalike-{tag}", "annotate", [bt, "call", name, '{"sequence": "ACGT"}'],
            culprit="did you mean seq_stats" if tag != "not-utf8" else "not valid UTF-8",
            cls="option")
    # Echoed input is cut to a bound and control characters are escaped, never sent raw.
    add("call.stdin.5MB-key", "annotate", [bt, "call", "seq_stats", "-"],
        culprit="characters cut", cls="json",
        stdin='{"' + "k" * 5_000_000 + '": 1, "sequence": "ACGT"}')
    add("align.fastq.escape-in-name", "reads",
        [bt, "align", "--fastq", "no-such-\x1b[31m.fastq", "--reference", STAGED],
        culprit="\\x1b[31m", cls="special")
    add("call.schema.unknown", "annotate", [bt, "call", "nope_tool", "--schema"],
        culprit="nope_tool", cls="option")
    add("call.max-chars.negative", "annotate", [bt, "call", "seq_stats", '{"sequence": "A"}',
        "--max-chars", "-1"], culprit="--max-chars", cls="count")
    add("call.max-chars.huge", "annotate", [bt, "call", "seq_stats", '{"sequence": "A"}',
        "--max-chars", "1" * 30], culprit="--max-chars", cls="count")
    add("call.no-name", "annotate", [bt, "call", "--max-chars", "10"], culprit="name",
        cls="option")
    add("call.align-pairwise.too-long", "annotate",
        [bt, "call", "align_pairwise", json.dumps({"seq_a": "ACGT" * 12000, "seq_b": "TGCA" * 12000})],
        culprit="seq_b", cls="count")

    # -------- system commands and the CLI itself
    for n, (argv, culprit) in enumerate([
        ([bt, "frobnicate"], "frobnicate"), ([bt, "list", "extra"], "extra"),
        ([bt, "references", "--bogus"], "--bogus"), ([bt, "version", "x"], "x"),
        ([bt, "doctor", "--no-sha=3"], "--no-sha"), ([bt, "list", "--json"], "--json"),
        ([bt, "--bogus", "list"], "--bogus"),
        ([bt, "align", "--fastq"], "--fastq"),
        ([bt, "align", "--fastqq", "good.fastq", "--reference", STAGED], "--fastqq"),
        ([bt, "align", "--fastq", "good.fastq", "--fastq", "good2.fastq", "--reference", STAGED], "--fastq"),
        ([bt, "align", "--fastq", "good.fastq"], "--reference"),
        ([bt, "align", "--fastq", "good.fastq", "--reference", STAGED, "--sample", "abc"], "--sample"),
        ([bt, "align", "--fastq", "good.fastq", "--reference", STAGED, "--sample", "1e3"], "--sample"),
        ([bt, "align", "--fastq", "good.fastq", "--reference", STAGED, "--timeout", "soon"], "--timeout"),
        ([bt, "align", "--fastq", "good.fastq", "--reference", "\udcff\udcfe"], "--reference"),
        ([bt, "align", "--fastq", "good.fastq", "--reference", "r" * 100000], "--reference"),
        ([bt, "variants", "--fastq", "good.fastq", "--reference", STAGED, "--min-af", "half"], "--min-af"),
        ([bt, "call", "seq_stats", '{"sequence": "A"}', "extra-argument"], "extra-argument"),
    ]):
        tag = "".join(c if c.isascii() and c.isprintable() else "?" for c in "_".join(a[:12] for a in argv[1:]))
        add(f"cli.{n:02d}.{tag[:50]}", "cli", argv,
            culprit=culprit, cls="usage")

    # -------- molperceive
    for tag, argv, culprit, expect in [
        ("contract.extra", [mp, "contract", "extra"], "extra", 2),
        ("selftest.extra", [mp, "selftest", "--bogus"], "--bogus", 2),
        ("no-command", [mp, "frobnicate"], "frobnicate", 2),
        ("label.no-smiles", [mp, "label"], "SMILES", 2),
        ("label.empty-smiles", [mp, "label", ""], "SMILES", 2),
        # a SMILES the labeler cannot read is a label (status invalid_structure), not an error
        ("label.huge-hcount", [mp, "label", "[CH999999999]"], "[CH999999999]", 2),
        ("label.huge-isotope", [mp, "label", "[99999999999C]"], "[99999999999C]", 2),
        ("label.huge-ring-number", [mp, "label", "C%99999C"], None, 0),
        ("label.5MB-smiles-file", [mp, "label", "--file", "smiles-5MB.smi"], "smiles-5MB.smi", 2),
        ("label.nul-smiles-file", [mp, "label", "--file", "smiles-nul.smi"], "smiles-nul.smi", 2),
        ("label.utf16-smiles-file", [mp, "label", "--file", "smiles-utf16.smi"], "smiles-utf16.smi", 2),
        ("label.comments-only-file", [mp, "label", "--file", "smiles-comments.smi"], "smiles-comments.smi", 2),
        ("label.binary-file", [mp, "label", "--file", "binary.bin"], "binary.bin", 2),
        ("label.unknown-field", [mp, "label", "CCO", "--fields", "colour"], "colour", 2),
        ("label.excluded-field", [mp, "label", "CCO", "--fields", "logp"], "logp", 3),
        ("label.empty-fields", [mp, "label", "CCO", "--fields", ""], "--fields", 2),
        ("label.k-negative", [mp, "label", "CCO", "-k", "-1", "--fields", "atom_at_index"], "-k", 2),
        ("label.k-huge", [mp, "label", "CCO", "-k", "1" * 30, "--fields", "atom_at_index"], "-k", 2),
        ("label.k-not-int", [mp, "label", "CCO", "-k", "x"], "-k", 2),
        ("corrupt.invalid-smiles", [mp, "corrupt", "C1CC"], "C1CC", 2),
        ("corrupt.empty-smiles", [mp, "corrupt", ""], "SMILES", 2),
        ("corrupt.unknown-reason", [mp, "corrupt", "CCO", "--reason", "bogus"], "bogus", 2),
        ("corrupt.huge-smiles", [mp, "corrupt", "C" * 100000], "SMILES", 2),
        ("build.rows-per-molecule-huge", [mp, "build", "smiles.smi", "--out", "out/b1.jsonl", "--rows-per-molecule", "100000"], "--rows-per-molecule", 2),
        ("build.rows-per-molecule-zero", [mp, "build", "smiles.smi", "--out", "out/b2.jsonl", "--rows-per-molecule", "0"], "--rows-per-molecule", 2),
        ("build.eval-fraction-2", [mp, "build", "smiles.smi", "--out", "out/b3.jsonl", "--eval-fraction", "2"], "--eval-fraction", 2),
        ("build.eval-fraction-nan", [mp, "build", "smiles.smi", "--out", "out/b4.jsonl", "--eval-fraction", "nan"], "--eval-fraction", 2),
        ("build.graph-fraction-negative", [mp, "build", "smiles.smi", "--out", "out/b5.jsonl", "--graph-fraction", "-0.5"], "--graph-fraction", 2),
        ("build.limit-negative", [mp, "build", "smiles.smi", "--out", "out/b6.jsonl", "--limit", "-1"], "--limit", 2),
        ("build.limit-huge", [mp, "build", "smiles.smi", "--out", "out/b7.jsonl", "--limit", "1" * 30], "--limit", 2),
        ("build.unknown-field", [mp, "build", "smiles.smi", "--out", "out/b8.jsonl", "--fields", "colour"], "colour", 2),
        ("build.excluded-field", [mp, "build", "smiles.smi", "--out", "out/b9.jsonl", "--fields", "tpsa"], "tpsa", 3),
        ("build.out-read-only", [mp, "build", "smiles.smi", "--out", "ro/b.jsonl"], "ro/b.jsonl", 2),
        ("build.out-folder", [mp, "build", "smiles.smi", "--out", "adir"], "adir", 2),
        ("build.out-empty", [mp, "build", "smiles.smi", "--out", ""], "--out", 2),
        ("build.out-missing-folder", [mp, "build", "smiles.smi", "--out", "no-such-out-dir/b.jsonl"], "no-such-out-dir", 2),
        ("build.out-device", [mp, "build", "smiles.smi", "--out", "/dev/full"], "/dev/full", 2),
        ("build.out-fifo", [mp, "build", "smiles.smi", "--out", "fifo"], "fifo", 2),
        ("build.out-is-input", [mp, "build", "smiles-victim.smi", "--out", "smiles-victim.smi"], "smiles-victim.smi", 2),
        ("build.comments-only", [mp, "build", "smiles-comments.smi", "--out", "out/b10.jsonl"], "smiles-comments.smi", 2),
        ("build.5MB-smiles", [mp, "build", "smiles-5MB.smi", "--out", "out/b11.jsonl"], "smiles-5MB.smi", 2),
        ("gate.deep-nesting", [mp, "gate", "rows-deep.jsonl"], "rows-deep.jsonl", 2),
        ("gate.5000-digit-int", [mp, "gate", "rows-bigint.jsonl"], "rows-bigint.jsonl", 2),
        ("gate.labels-string", [mp, "gate", "rows-labels-string.jsonl"], "rows-labels-string.jsonl", 2),
        ("gate.array-line", [mp, "gate", "rows-array.jsonl"], "rows-array.jsonl", 2),
        ("gate.not-json", [mp, "gate", "rows-notjson.jsonl"], "rows-notjson.jsonl", 2),
        ("gate.utf16", [mp, "gate", "rows-utf16.jsonl"], "rows-utf16.jsonl", 2),
        ("gate.blank-lines", [mp, "gate", "rows-blank.jsonl"], "rows-blank.jsonl", 2),
        ("gate.nan", [mp, "gate", "rows-nan.jsonl"], "rows-nan.jsonl", 2),
        ("gate.gzip", [mp, "gate", "rows.jsonl.gz"], "rows.jsonl.gz", 2),
        ("gate.extra-key", [mp, "gate", "rows-extra-key.jsonl"], "answer_hint", 2),
        ("gate.extra-input-key", [mp, "gate", "rows-extra-input-key.jsonl"], "hint", 2),
        ("gate.duplicate-id", [mp, "gate", "rows-duplicate-id.jsonl"], "'id' given twice", 2),
        ("label.smiles-not-utf8", [mp, "label", "C\udcffC"], "SMILES", 2),
        ("label.smiles-not-utf8-second", [mp, "label", "CCO", "C\udcffC"], "not valid UTF-8", 2),
        ("gate.predictions-given", [mp, "gate", "preds.jsonl"], "preds.jsonl", 2),
        ("gate.smiles-given", [mp, "gate", "smiles.smi"], "smiles.smi", 2),
        ("score.predictions-as-corpus", [mp, "score", "preds.jsonl", "preds.jsonl"], "preds.jsonl", 2),
        ("score.swapped", [mp, "score", "preds.jsonl", "rows.jsonl"], None, 2),
        ("score.same-file", [mp, "score", "rows.jsonl", "rows.jsonl"], "rows.jsonl", 2),
        ("score.unknown-id", [mp, "score", "rows.jsonl", "preds-unknown-id.jsonl"], "mp-999999", 2),
        ("score.preds-deep", [mp, "score", "rows.jsonl", "preds-deep.jsonl"], "preds-deep.jsonl", 2),
        ("score.preds-5000-digit-int", [mp, "score", "rows.jsonl", "preds-bigint.jsonl"], "preds-bigint.jsonl", 2),
        ("score.preds-array", [mp, "score", "rows.jsonl", "preds-array.jsonl"], "preds-array.jsonl", 2),
        ("score.preds-answers-string", [mp, "score", "rows.jsonl", "preds-answers-string.jsonl"], "preds-answers-string.jsonl", 2),
        ("score.rows-labels-string", [mp, "score", "rows-labels-string.jsonl", "preds.jsonl"], "rows-labels-string.jsonl", 2),
        ("score.rows-deep", [mp, "score", "rows-deep.jsonl", "preds.jsonl"], "rows-deep.jsonl", 2),
        ("score.unknown-slice", [mp, "score", "rows.jsonl", "preds.jsonl", "--slices", "bogus"], "bogus", 2),
        ("score.empty-slices", [mp, "score", "rows.jsonl", "preds.jsonl", "--slices", ""], "--slices", 2),
    ]:
        extra = {"outputs": [argv[argv.index("--out") + 1]]} if "--out" in argv and \
            argv[argv.index("--out") + 1].startswith(("out/", "ro/", "no-such")) else {}
        add(f"mp.{tag}", "molperceive", argv, expect=expect, culprit=culprit,
            cls="refused" if expect == 3 else "molperceive", **extra)
    _launcher_cases(add)
    return out


LAUNCHER_TASK = "spike-d614g"
NO_RUN = "bts-0badc0de"  # a run id no engine has: every case is refused before it is looked up
# The file kinds an option that names a file is held to (commandline.kinds): no sparse file
# (a regular file), no permission case twice.
LAUNCHER_SPECIALS = [(t, p) for t, p in SPECIALS if t not in ("sparse-10GB", "folder-unreadable")]


def _launcher_cases(add) -> None:
    """The host launcher's (`biotool-sandbox`) refusals that need no engine: every option
    that names a file, harbor's sources and output, option kinds' bounds, and the variables a
    refusal must name. They run on the host only (the image has no launcher to run)."""
    bs = "biotool-sandbox"
    slots = [
        ("verify-image.manifest", lambda x: [bs, "verify-image", "biotool-no-such:image",
                                             "--manifest", x], "--manifest", "file"),
        ("harbor.compose-file", lambda x: [bs, "harbor", "--out", "out/harbor-{tag}",
                                           "--compose-file", x], "--compose-file", "file"),
        ("harbor.sources", lambda x: [bs, "harbor", "--out", "out/harbor-src-{tag}",
                                      "--sources", x], "--sources", "folder"),
        ("k8s-values.compose-file", lambda x: [bs, "k8s-values", "--compose-file", x],
         "--compose-file", "file"),
        ("k8s-values.rules", lambda x: [bs, "k8s-values", "--rules", x], "--rules", "file"),
        ("up.extra-ca", lambda x: [bs, "up", "--extra-ca", x], "--extra-ca", "file"),
        ("up.site", lambda x: [bs, "up", "--site", x], "--site", "folder"),
    ]
    for slot, make, option, want in slots:
        for tag, path in LAUNCHER_SPECIALS:
            if want == "folder" and tag == "dir" or slot == "k8s-values.rules" and \
                    tag == "empty-file":
                continue  # a folder is what it takes; an empty rules file allows nothing
            argv = [a.replace("{tag}", tag) for a in make(path)]
            absent = [a for a in argv if a.startswith("out/harbor")]
            add(f"launcher.{slot}.{tag}", "launcher", argv, culprit=path or option,
                cls="special", absent=[*absent, *(f"{a}.partial" for a in absent)])
    out_cases = [
        # harbor: the output and the sources are checked before anything is written
        ("harbor.out.existing-file", [bs, "harbor", "--out", "good.fastq"], "good.fastq", {}),
        ("harbor.out.fifo", [bs, "harbor", "--out", "fifo"], "fifo", {}),
        ("harbor.out.no-folder", [bs, "harbor", "--out", "no-such-dir-h/x/tasks"],
         "no-such-dir-h/x/tasks", {}),
        ("harbor.key-not-json", [bs, "harbor", "--out", "out/harbor-badkey", "--sources",
                                 "harbor-badkey"], "key.json",
         {"absent": ["out/harbor-badkey"]}),
        ("harbor.compose-empty-no-partial", [bs, "harbor", "--out", "out/harbor-empty",
                                             "--compose-file", "empty.txt", "--task",
                                             LAUNCHER_TASK], "empty.txt",
         {"absent": ["out/harbor-empty", f"out/harbor-empty/{LAUNCHER_TASK}.partial"]}),
        ("k8s-values.out.folder", [bs, "k8s-values", "--out", "adir"], "adir", {}),
        ("k8s-values.out.device", [bs, "k8s-values", "--out", "/dev/zero"], "/dev/zero", {}),
        # a named compose file is used or refused, never replaced by another
        ("harbor.compose-env-missing", [bs, "harbor", "--out", "out/harbor-env"],
         "BIOTOOL_COMPOSE_FILE", {"env": {"BIOTOOL_COMPOSE_FILE": "no-such-compose.yaml"},
                                  "absent": ["out/harbor-env"]}),
        ("k8s-values.compose-env-empty-file", [bs, "k8s-values"], "BIOTOOL_COMPOSE_FILE",
         {"env": {"BIOTOOL_COMPOSE_FILE": "empty.txt"}}),
        # what the clock and the engine can hold
        ("exec.timeout.1e10", [bs, "exec", NO_RUN, "--timeout", "1e10", "--", "true"],
         "--timeout", {}),
        ("exec.timeout.1e300", [bs, "exec", NO_RUN, "--timeout", "1e300", "--", "true"],
         "--timeout", {}),
        ("up.work-size.past-int64", [bs, "up", "--work-size", "99999999999999999999g"],
         "--work-size", {}),
        ("up.memory.zero", [bs, "up", "--memory", "0"], "--memory", {}),
        # a variable's bad value is named as the variable
        ("up.env.work-size-1t", [bs, "up"], "BIOTOOL_WORK_SIZE",
         {"env": {"BIOTOOL_WORK_SIZE": "1t"}}),
        ("up.env.mem-limit-words", [bs, "up"], "BIOTOOL_MEM_LIMIT",
         {"env": {"BIOTOOL_MEM_LIMIT": "lots"}}),
        ("up.env.relay-not-https", [bs, "up"], "BIOTOOL_NCBI_RELAY",
         {"env": {"BIOTOOL_NCBI_RELAY": "http://relay.invalid"}}),
    ]
    for tag, argv, culprit, extra in out_cases:
        add(f"launcher.{tag}", "launcher", argv, culprit=culprit,
            cls="count" if "timeout" in tag or "size" in tag or "memory" in tag else
            "output" if ".out." in tag else "option", **extra)


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:
        print(materialise(sys.argv[1]))
    print(len(cases()), "cases")
