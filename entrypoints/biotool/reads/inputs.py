"""The checks on the reads a command is given, before any work: BAMs against the reference
(names, lengths, sequence), the same reads never twice, sample names unique
(`biotool.reads.job` gathers the libraries through them)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from pathlib import Path

from biotool.alignment.reference import Reference
from biotool.arms import hedge
from biotool.files import input_file, unreadable
from biotool.output import InputError
from biotool.reads.bam import (MISMATCH_MIN_BASES, MISMATCH_REFUSE, refuse_if_divergent,
                               sampled_divergence)


def check_header(handle, path: str, ref: Reference, contigs: dict[str, int],
                 md5s: dict[str, str]) -> list[str]:
    """InputError unless the BAM was aligned to this reference: it must share a contig name
    with it and every shared name must have the same length. An @SQ M5 of another sequence
    is only a warning (returned) when the aligned bases agree with the reference: real BAMs
    carry the M5 of the full chromosome beside an extract of it. Pooling BAMs of different
    references would add unrelated positions. `md5s` memoises each contig's digest, so
    several BAMs hash the reference once."""

    shared = [sq for sq in handle.header.to_dict().get("SQ", []) if sq.get("SN") in contigs]
    if not shared:
        names = ", ".join(list(contigs)[:5])
        raise InputError(f"--bam {path}: its header has none of the reference contigs ({names}); "
                         "was it aligned to this --reference?")
    warnings = []
    for sq in shared:
        if int(sq.get("LN", -1)) != contigs[sq["SN"]]:
            raise InputError(f"--bam {path}: contig {sq['SN']} is {sq.get('LN')} bp in its header "
                             f"but {contigs[sq['SN']]} bp in --reference {ref.name}: it was "
                             "aligned to a different reference")
        if sq.get("M5"):
            if sq["SN"] not in md5s:
                md5s[sq["SN"]] = _contig_md5(ref, sq["SN"])
            if md5s[sq["SN"]] != str(sq["M5"]).lower():
                differ, bases = sampled_divergence(handle, ref, contigs, contig=sq["SN"])
                if bases >= MISMATCH_MIN_BASES and differ > MISMATCH_REFUSE * bases:
                    raise InputError(f"--bam {path}: contig {sq['SN']} has a different sequence "
                                     f"(M5) in its header than in --reference {ref.name}, and "
                                     f"{differ / bases:.0%} of a sample of its aligned bases "
                                     "differ from it: it was aligned to a different reference")
                ur = f" (UR {sq['UR']})" if sq.get("UR") else ""
                # What the checks found and how positions are read are findings (both arms);
                # the guess at why is a hedge.
                warnings.append(
                    f"--bam {path}: the header's M5 for {sq['SN']}{ur} is not the md5 of "
                    f"{sq['SN']} in --reference {ref.name}, but the lengths agree and "
                    f"{_share(differ, bases)} of a sample of {bases} aligned bases differ from "
                    "it" + hedge(": the BAM was likely aligned to a longer or differently "
                                 "packaged sequence of the same name (e.g. the full "
                                 "chromosome)") + "; positions are read as --reference's")
    return warnings


def _share(differ: int, bases: int) -> str:
    return f"{differ / bases:.1%}" if bases else "none (no aligned bases sampled)"


def _contig_md5(ref: Reference, contig: str) -> str:
    """The SAM-spec M5 of a reference contig: md5 of its upper-cased sequence."""
    import hashlib

    return hashlib.md5(ref.fetch(contig).encode()).hexdigest()


def check_same_sequence(handle, path: str, ref: Reference, contigs: dict[str, int]) -> None:
    """InputError when the BAM's first aligned bases mostly differ from --reference: names and
    lengths can match while the sequence is another one (the rule `variants` also applies to
    its full pileup)."""
    mism, bases = sampled_divergence(handle, ref, contigs)
    refuse_if_divergent(path, mism, bases, ref.name)


PREFIX_BYTES = 1 << 20


def _digest(path: str, flag: str, limit: int | None) -> str:
    """sha256 of a file's reads: the decompressed stream of a gzip FASTQ (so a FASTQ and its
    .gz agree), the file itself otherwise; of the first `limit` bytes when given."""
    import gzip
    import hashlib
    import zlib

    from biotool.files import magic

    h = hashlib.sha256()
    gz = flag == "--fastq" and magic(path) == "gzip"
    left = limit if limit is not None else -1
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as fh:
            while left:
                chunk = fh.read(1 << 20 if left < 0 else min(left, 1 << 20))
                if not chunk:
                    break
                h.update(chunk)
                left = left - len(chunk) if left > 0 else left
    except (EOFError, zlib.error, OSError) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, gzip.BadGzipFile) and not gz:
            raise unreadable(flag, path, exc) from None
        raise InputError(f"{flag} {path}: gzip stream is corrupt or truncated "
                         f"({type(exc).__name__})") from None
    return h.hexdigest()


def no_repeats(paths: list[str], flag: str) -> None:
    """The same reads given twice would count every read twice when pooled: inputs are told
    apart by content (a copy, a FASTQ and its .gz, a BAM and its copy), not by path. The
    first megabyte of every file is hashed; only files that agree there are hashed whole."""
    from biotool.reads import fastq

    for p in paths:  # every path checked by kind before any is read (a FIFO never opened)
        if flag == "--fastq":
            fastq.check_path(Path(p))
        else:
            input_file(p, flag)
    if len(paths) < 2:
        return
    heads: dict[str, list[str]] = {}
    for p in paths:
        heads.setdefault(_digest(p, flag, PREFIX_BYTES), []).append(p)
    for group in (g for g in heads.values() if len(g) > 1):
        seen: dict[str, str] = {}
        for p in group:
            key = _digest(p, flag, None)
            if key in seen:
                q = seen[key]
                how = ("the same file" if os.path.realpath(p) == os.path.realpath(q)
                       else "identical content under another path")
                raise InputError(f"{flag} {p}: the same reads twice: given twice, also as {q} "
                                 f"({how}); give each library once")
            seen[key] = p


def unique_samples(libs: list) -> list:
    """Sample names are file names; two files of one name in different folders get their paths,
    so VCF sample columns stay distinct (and free of tabs)."""
    counts = Counter(lib.sample for lib in libs)
    out = []
    for lib in libs:
        name = (lib.bam if not lib.aligned_here else lib.fastq[0]) \
            if counts[lib.sample] > 1 else lib.sample
        out.append(replace(lib, sample=" ".join(name.split()) or "sample"))
    return out


def region_not_in_bam(bam_path: str, regions) -> InputError:
    """The error for a BAM whose header lacks every contig of --region (it shares others with
    --reference, or check_header would have refused it)."""
    names = ", ".join(c for c, _, _ in regions[:3])
    return InputError(f"--bam {bam_path}: its header has none of the region's contigs ({names}); "
                      "was it aligned to this --reference?")
