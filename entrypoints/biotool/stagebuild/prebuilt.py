"""A publisher's prebuilt index, used instead of building one when it matches the FASTA: the
same sequence names and lengths as its .fai, and reads cut from it placed back home."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path

from biotool.alignment import indexes
from biotool.alignment.aligners import bwa_command
from biotool.alignment.vocabulary import NOT_PRIMARY
from biotool.staging import StagingError
from biotool.stagebuild.tools import run_tool, safe_extract

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

    if index != indexes.BWA:
        tarball.unlink()
        return f"built here: a prebuilt {index} index is not checked by this staging"
    suffixes = (".amb", ".ann", ".bwt", ".pac", ".sa")
    scratch = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{index}-prebuilt."))
    try:
        safe_extract(tarball, scratch)
        found = {p.name[:-len(p.suffix)]: p for p in scratch.rglob("*.bwt")}
        prefix = next((stem for stem, p in found.items()
                       if all((p.parent / (stem + s)).is_file() for s in suffixes)), None)
        if prefix is None:
            return "built here: the prebuilt tarball holds no complete bwa index (.amb .ann .bwt .pac .sa)"
        folder = found[prefix].parent
        fai = Path(str(fasta) + ".fai")
        if not fai.exists():
            run_tool(["samtools", "faidx", str(fasta)])
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
        regions = run_tool(["samtools", "faidx", str(fasta)] +
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
        sam = run_tool(bwa_command(folder / prefix, 1, paired=False, reads=str(fq)))
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
