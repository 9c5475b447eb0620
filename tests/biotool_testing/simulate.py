"""Simulated truth for the reads tests and bench: a random genome, a Cas9-like cut, and
planted variants at known allele fractions, with reads carrying sequencing errors.

Everything is seeded, so a test failure reproduces exactly.
"""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

COMP = str.maketrans("ACGT", "TGCA")


def revcomp(s: str) -> str:
    return s.translate(COMP)[::-1]


def genome(length: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("ACGT") for _ in range(length))


def write_fasta(path: Path, name: str, seq: str) -> Path:
    path.write_text(f">{name}\n" + "\n".join(seq[i:i + 70] for i in range(0, len(seq), 70)) + "\n")
    return path


def write_fastq(path: Path, reads: list[tuple], qual: int = 35) -> Path:
    """Reads as (name, seq) at one quality, or (name, seq, quality string)."""
    q = chr(33 + qual)
    with open(path, "w") as fh:
        for name, seq, *quals in reads:
            fh.write(f"@{name}\n{seq}\n+\n{quals[0] if quals else q * len(seq)}\n")
    return path


def add_errors(seq: str, rate: float, rng: random.Random) -> str:
    """Substitution errors at `rate` per base (what Illumina mostly makes); the gaps between
    errors are drawn geometrically, so long libraries simulate quickly."""
    if rate <= 0:
        return seq
    out = list(seq)
    log_q = math.log1p(-rate)
    i = int(math.log(1.0 - rng.random()) / log_q)
    while i < len(out):
        out[i] = rng.choice([b for b in "ACGT" if b != out[i]])
        i += 1 + int(math.log(1.0 - rng.random()) / log_q)
    return "".join(out)


def cut_site(ref: str, rng: random.Random) -> int:
    """A 1-based cut position c (break after base c) where the planted indels cannot slide:
    bases next to each planted deletion and insertion differ, so their spans are exact."""
    while True:
        c = rng.randrange(1500, len(ref) - 1500)
        b = lambda i: ref[i - 1]  # 1-based base
        if b(c + 1) != b(c - 2) and b(c) != b(c + 4) and b(c) != b(c + 1):
            return c


def cas9_reads(ref: str, c: int, seed: int, read_len: int = 150, error_rate: float = 0.002,
               background: int = 400) -> tuple[list[tuple[str, str]], dict]:
    """Reads around a blunt cut after 1-based base c, every break signature at c, both strands.

    Molecules: left fragments ending at c, right fragments starting at c+1, chimeras joined to
    foreign DNA at the cut (clips), repair outcomes with deletions/insertions at the cut, intact
    molecules, and a genome-wide background of randomly placed reads.
    """
    rng = random.Random(seed)
    reads = []
    # Foreign DNA whose junction bases differ from the reference, so an aligner cannot
    # extend a chimera across the cut by a chance match (that ambiguity is real, not planted).
    foreign = genome(60, seed + 99)
    foreign = (next(x for x in "ACGT" if x != ref[c]) + foreign[1:-1]
               + next(x for x in "ACGT" if x != ref[c - 1]))
    ins_base = next(x for x in "ACGT" if x not in (ref[c - 1], ref[c]))
    counts = {"ends": 0, "starts": 0, "clips": 0, "indels": 0}

    def emit(kind: str, seq: str) -> None:
        seq = add_errors(seq, error_rate, rng)
        if rng.random() < 0.5:
            seq = revcomp(seq)
        reads.append((f"{kind}_{len(reads)}", seq))

    L = read_len
    # Fragments are shorter than the read length, so reads cover them end to end; their
    # other ends vary, so only the cut piles up.
    for _ in range(24):  # left fragment: last base is c (0-based slice end c)
        emit("end", ref[c - rng.randrange(90, L + 1):c]); counts["ends"] += 1
    for _ in range(22):  # right fragment: first base is c+1
        emit("start", ref[c:c + rng.randrange(90, L + 1)]); counts["starts"] += 1
    for _ in range(12):  # chimera: reference up to c, then foreign -> clip at c
        k = rng.randrange(100, 115)
        emit("clipR", ref[c - k:c] + foreign[:L - k]); counts["clips"] += 1
    for _ in range(12):  # chimera: foreign, then reference from c+1 -> clip at c
        k = rng.randrange(100, 115)
        emit("clipL", foreign[-(L - k):] + ref[c:c + k]); counts["clips"] += 1
    outcomes = [("dl", 3), ("dr", 4), ("ins", 1)]
    for i in range(30):  # repair outcomes: deletions either side of the cut, +1 insertions
        kind, k = outcomes[i % 3]
        a = rng.randrange(60, 90)
        left, right = ref[c - a:c], ref[c:c + (L - a) + 5]
        if kind == "dl":
            mol = left[:-k] + right
        elif kind == "dr":
            mol = left + right[k:]
        else:
            mol = left + ins_base + right
        emit(kind, mol[:L]); counts["indels"] += 1
    for _ in range(20):  # intact molecules spanning the cut
        a = rng.randrange(30, 120)
        emit("intact", ref[c - a:c - a + L])
    for _ in range(background):
        s = rng.randrange(0, len(ref) - L)
        emit("bg", ref[s:s + L])
    return reads, {"cut": c, "counts": counts,
                   "deletions": [(c - 2, c), (c + 1, c + 4)], "insertion": (c, ins_base)}


def plant_variants(ref: str, seed: int, fractions=(1.0, 0.5, 0.3, 0.25), low=(0.04,),
                   spacing: int = 300) -> list[dict]:
    """SNVs, deletions and insertions at known fractions, each in VCF form (1-based pos, the
    base before an indel included in ref/alt), at places where an indel cannot slide."""
    rng = random.Random(seed)
    truth = []
    kinds = ["SNV", "deletion", "insertion"]
    pos = 300
    plan = [(f, True) for f in fractions for _ in kinds] + [(f, False) for f in low for _ in kinds]
    if 300 + len(plan) * spacing + 300 > len(ref):
        raise ValueError("genome too short for the planted variants")
    for j, (frac, above) in enumerate(plan):
        kind = kinds[j % 3]
        while True:
            p = pos + rng.randrange(0, 100)  # 1-based
            b = lambda i: ref[i - 1]
            if kind == "SNV":
                alt = rng.choice([x for x in "ACGT" if x != b(p)])
                v = {"pos": p, "ref": b(p), "alt": alt}
                break
            if kind == "deletion":
                k = rng.choice([1, 2, 3, 5])
                # deleting bases p+1..p+k with anchor p; no slide when b(p) != b(p+k) and b(p+1) != b(p+k+1)
                if b(p) != b(p + k) and b(p + 1) != b(p + k + 1):
                    v = {"pos": p, "ref": ref[p - 1:p + k], "alt": b(p)}
                    break
            else:
                k = rng.choice([1, 2, 4])
                ins = "".join(rng.choice("ACGT") for _ in range(k))
                if ins[-1] != b(p) and ins[0] != b(p + 1):
                    v = {"pos": p, "ref": b(p), "alt": b(p) + ins}
                    break
        truth.append({**v, "type": kind, "fraction": frac, "above_floor": above})
        pos += spacing
    return truth


def variant_reads(ref: str, truth: list[dict], depth: int, seed: int, read_len: int = 150,
                  error_rate: float = 0.005) -> list[tuple[str, str]]:
    """Reads from molecules that each carry every planted variant with its own fraction."""
    rng = random.Random(seed)
    n = depth * len(ref) // read_len
    reads = []
    for i in range(n):
        s = rng.randrange(0, len(ref) - read_len - 20)
        window_end = s + read_len + 20
        mol, cur = [], s
        for v in truth:
            p0 = v["pos"] - 1  # 0-based position of the first ref base of the record
            if p0 < s or p0 + len(v["ref"]) >= window_end or rng.random() >= v["fraction"]:
                continue
            mol.append(ref[cur:p0])
            mol.append(v["alt"])
            cur = p0 + len(v["ref"])
        mol.append(ref[cur:window_end])
        seq = add_errors("".join(mol)[:read_len], error_rate, rng)
        if rng.random() < 0.5:
            seq = revcomp(seq)
        reads.append((f"r{i}", seq))
    return reads


def align(fasta: Path, fastq: Path, bam: Path, preset: str = "sr") -> Path:
    """minimap2 | samtools sort, indexed: the BAM a peer tool and ours both read."""
    import subprocess

    mm = subprocess.Popen(["minimap2", "-a", "-x", preset, str(fasta), str(fastq)],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    subprocess.run(["samtools", "sort", "-o", str(bam), "-"], stdin=mm.stdout, check=True,
                   stderr=subprocess.DEVNULL)
    mm.wait()
    subprocess.run(["samtools", "index", str(bam)], check=True)
    return bam


ADAPTER = "AGATCGGAAGAGCACACGTCTGAACTCCAGTCACGGATCTCGTATGCCGTCTTCTGCTTG"  # Illumina TruSeq


def miseq(seq: str, rng: random.Random) -> tuple[str, str]:
    """A MiSeq-like read of `seq`: substitution errors rising from 0.1% to 1% along the read,
    with qualities falling from Q38 to Q24 to match."""
    out, quals = [], []
    n = len(seq)
    for i, b in enumerate(seq):
        rate = 0.001 + 0.009 * i / max(1, n - 1)
        q = round(-10 * math.log10(rate))
        out.append(rng.choice([x for x in "ACGT" if x != b]) if rng.random() < rate else b)
        quals.append(chr(33 + min(41, q)))
    return "".join(out), "".join(quals)


def cas9_outcome(amp: str, c: int, rng: random.Random) -> tuple[str, str]:
    """One Cas9 repair outcome at a blunt cut after 1-based base c: a templated +1 insertion
    (the base left of the cut, doubled) or a deletion of 1-40 bases, split at random between
    the two sides of the cut (so some lie wholly left, some wholly right of it)."""
    roll = rng.random()
    if roll < 0.35:
        return amp[:c] + amp[c - 1] + amp[c:], "ins1"
    k = rng.choice([1] * 6 + [2] * 3 + [3] * 2 + list(range(4, 11)) * 1) if roll < 0.85 \
        else rng.randrange(11, 41)
    left = rng.randrange(0, k + 1)
    return amp[:c - left] + amp[c - left + k:], f"del{k}"


def amplicon_reads(amp: str, c: int, seed: int, n: int = 2000, edited: float = 0.25,
                   read_len: int = 250, reverse_share: float = 0.0) -> tuple[list[tuple], dict]:
    """MiSeq reads of an amplicon cut after 1-based base c: every read starts at the
    amplicon's first base (after 0-4 stagger bases, as in real runs) and runs past its last
    base into the sequencing adapter; `edited` of them carry a Cas9 repair outcome at c.
    With reverse_share > 0 that share are read from the other end (R2-like)."""
    rng = random.Random(seed)
    reads, outcomes = [], {}
    for i in range(n):
        mol, kind = cas9_outcome(amp, c, rng) if rng.random() < edited else (amp, "wt")
        outcomes[kind] = outcomes.get(kind, 0) + 1
        if rng.random() < reverse_share:
            mol = revcomp(mol)
        stagger = "".join(rng.choice("ACGT") for _ in range(rng.randrange(0, 5)))
        seq, qual = miseq((stagger + mol + ADAPTER + "A" * read_len)[:read_len], rng)
        reads.append((f"{kind}_{i}", seq, qual))
    edits = sum(v for k, v in outcomes.items() if k != "wt")
    return reads, {"cut": c, "edited_reads": edits, "outcomes": outcomes}


def amplicon(length: int, seed: int) -> tuple[str, int]:
    """A random amplicon and a cut c (1-based, break after base c) in its middle third whose
    flanking bases differ, so wholly-right deletions cannot slide across the cut."""
    rng = random.Random(seed)
    amp = genome(length, seed)
    while True:
        c = rng.randrange(length // 3, 2 * length // 3)
        if amp[c - 1] != amp[c]:
            return amp, c


def deletion_site(ref: str, k: int, rng: random.Random, margin: int = 1500) -> int:
    """A 0-based start i for deleting ref[i:i+k] with no microhomology at the junction (the
    bases beside it differ), so its two breakpoints are exact: the last kept base is 1-based
    i, the last deleted one i + k."""
    while True:
        i = rng.randrange(margin, len(ref) - margin - k)
        if ref[i - 1] != ref[i + k - 1] and ref[i] != ref[i + k]:
            return i


def shotgun_reads(seq: str, depth: int, seed: int, read_len: int = 150,
                  error_rate: float = 0.002) -> list[tuple[str, str]]:
    """Reads of `read_len` from uniform random places of `seq` at `depth`, half reversed."""
    rng = random.Random(seed)
    reads = []
    for i in range(depth * len(seq) // read_len):
        s = rng.randrange(0, len(seq) - read_len + 1)
        read = add_errors(seq[s:s + read_len], error_rate, rng)
        reads.append((f"r{i}", revcomp(read) if rng.random() < 0.5 else read))
    return reads


def chimeric_amplicon_reads(amps: list[str], seed: int, n: int = 2000, chimeric: float = 0.2,
                            read_len: int = 250) -> list[tuple[str, str, str]]:
    """MiSeq reads of amplicons that each start at the amplicon's first base (after 0-4
    stagger bases) and run past its end into the adapter; `chimeric` of them read two
    amplicons ligated end to end (as in amplicon libraries), so the read splits across them."""
    rng = random.Random(seed)
    reads = []
    for i in range(n):
        mol = rng.choice(amps)
        if rng.random() < chimeric:
            mol += rng.choice([a for a in amps if a != mol])
        if rng.random() < 0.5:
            mol = revcomp(mol)
        stagger = "".join(rng.choice("ACGT") for _ in range(rng.randrange(0, 5)))
        reads.append((f"a{i}", *miseq((stagger + mol + ADAPTER + "A" * read_len)[:read_len],
                                      rng)))
    return reads


def big_reference(folder: Path, mb: int = 9) -> tuple[Path, Path]:
    """A random genome of `mb` Mb (past biotool's background-index threshold, 8 Mb) as
    big.fa, and 100 short reads cut from it as reads.fastq, in `folder`."""
    acgt = bytes.maketrans(bytes(range(256)), b"ACGT" * 64)
    seq = os.urandom(mb * 1_000_000).translate(acgt).decode()
    fasta = folder / "big.fa"
    fasta.write_text(">big\n" + "\n".join(seq[i:i + 80] for i in range(0, len(seq), 80)) + "\n")
    reads = folder / "reads.fastq"
    step = len(seq) // 100
    reads.write_text("".join(f"@r{i}\n{seq[i * step:i * step + 150]}\n+\n{'I' * 150}\n"
                             for i in range(100)))
    return fasta, reads
