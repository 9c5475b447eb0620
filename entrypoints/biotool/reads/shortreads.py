"""Short reads go to `bwa mem`; long reads stay on minimap2.

minimap2's `sr` preset maps ~11% fewer of a noisy short-read library than `bwa mem` (bowtie2's
lambda-phage example: 85% against 96.4%, bench/reads_bench.py), so the short-read path is bwa,
with its index staged with the reference or built once into the cache (biotool.reads.indexes).
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path

from biotool.output import ToolFailure
from biotool.procs import last_line

SHORT = "sr"  # the preset name of the short-read path, kept from minimap2's vocabulary
_REF_OPS = re.compile(r"(\d+)[MDN=X]")


def aligner_of(preset: str) -> str:
    """The aligner command a preset runs, as the output names it."""
    return "bwa mem" if preset == SHORT else f"minimap2 -x {preset}"


def index_label(preset: str) -> str:
    """The provenance name of a preset's index."""
    return "bwa" if preset == SHORT else f"minimap2:{preset}"


def bwa_command(prefix: Path, threads: int, paired: bool) -> list[str]:
    """`bwa mem` reading FASTQ on stdin (mates interleaved when paired), SAM on stdout."""
    return ["bwa", "mem", "-v", "1", "-t", str(threads), *(["-p"] if paired else []),
            str(prefix), "-"]


def map_sample(prefix: Path, recs, as_text, threads: int = 1,
               deadline: float | None = None) -> tuple[list[tuple], int, bool]:
    """Primary placements of `recs` by bwa mem: ([(contig, start0, end0, mapq, reverse)] for
    mapped reads, reads aligned, truncated). Reads are fed from a thread while SAM is read
    back, and feeding stops at the deadline, so the budget bounds the work."""
    try:
        proc = subprocess.Popen(bwa_command(prefix, threads, False), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise ToolFailure("bwa is not installed (needed to align short reads)") from None
    fed = {"n": 0, "truncated": False}

    def feed():
        try:
            for rec in recs:
                if deadline is not None and fed["n"] % 256 == 0 and time.monotonic() > deadline:
                    fed["truncated"] = True
                    break
                proc.stdin.write(as_text(rec))
                fed["n"] += 1
        except BrokenPipeError:
            pass
        finally:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    placed, seen = [], 0
    err = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
    reader.start()
    for line in proc.stdout:
        if line[:1] == b"@":
            continue
        f = line.split(b"\t", 6)
        flag = int(f[1])
        if flag & 0x900:
            continue
        seen += 1
        if flag & 4:
            continue
        start = int(f[3]) - 1
        length = sum(int(n) for n in _REF_OPS.findall(f[5].decode()))
        placed.append((f[2].decode(), start, start + length, int(f[4]), bool(flag & 16)))
    writer.join()
    rc = proc.wait()
    reader.join()
    if rc != 0:
        said = (err or [b""])[0].decode(errors="replace")
        raise ToolFailure(f"bwa mem failed (exit {rc}): {last_line(said)}")
    return placed, seen, fed["truncated"]
