"""A bgzipped, tabix-indexed VCF of the variant calls, cached by content, placed atomically."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from biotool import __version__
from biotool.cache import atomic_path, entry_dir
from biotool.output import InputError


def _text(calls, libs, ref, contigs, floor) -> str:
    lines = ["##fileformat=VCFv4.2",
             f"##source=biotool-{__version__} variants",
             f"##reference={ref.name}",
             f"##biotool_floor=min_depth:{floor['min_depth']},min_af:{floor['min_af']},"
             f"min_mapq:{floor['min_mapq']},min_base_quality:{floor['min_base_quality']}"]
    lines += [f"##contig=<ID={c},length={n}>" for c, n in contigs.items()]
    lines += [
        '##INFO=<ID=DP,Number=1,Type=Integer,Description="Informative depth, pooled">',
        '##INFO=<ID=AD,Number=1,Type=Integer,Description="Alt reads, pooled">',
        '##INFO=<ID=AF,Number=A,Type=Float,Description="Alt allele fraction, pooled">',
        '##INFO=<ID=SB,Number=2,Type=Integer,Description="Alt reads on forward, reverse strand">',
        '##INFO=<ID=TYPE,Number=1,Type=String,Description="SNV, insertion or deletion">',
        '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Informative depth">',
        '##FORMAT=<ID=AD,Number=R,Type=Integer,Description="Ref-or-other reads, alt reads">',
        '##FORMAT=<ID=AF,Number=A,Type=Float,Description="Alt allele fraction">',
    ]
    samples = [l["sample"] for l in libs]
    lines.append("\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO",
                            "FORMAT", *samples]))
    order = {c: i for i, c in enumerate(contigs)}
    for c in sorted(calls, key=lambda c: (order[c["contig"]], c["pos"], c["ref"], c["alt"])):
        info = (f"DP={c['depth']};AD={c['alt_reads']};AF={c['af']:.4f};SB={c['fwd']},{c['rev']};"
                f"TYPE={c['type']}")
        fmt = [f"{s['depth']}:{s['depth'] - s['alt_reads']},{s['alt_reads']}:"
               f"{(s['af'] or 0):.4f}" for s in c["samples"]]
        lines.append("\t".join([c["contig"], str(c["pos"]), ".", c["ref"], c["alt"], ".", "PASS",
                                info, "DP:AD:AF", *fmt]))
    return "\n".join(lines) + "\n"


def write_vcf(out: str | Path, calls, libs, ref, contigs, floor) -> dict:
    """Write OUT (.vcf.gz) and OUT.tbi; the cache holds the same files under a content key."""
    import pysam

    out = Path(out)
    if not out.name.endswith(".vcf.gz"):
        raise InputError(f"--vcf {out}: name it *.vcf.gz (it is written bgzipped and indexed)")
    if not out.parent.is_dir():
        raise InputError(f"--vcf {out}: directory {out.parent} does not exist")
    text = _text(calls, libs, ref, contigs, floor)
    key = hashlib.sha256(text.encode()).hexdigest()[:32]
    d = entry_dir("vcf", key)
    cached = d / "variants.vcf.gz"
    if not (cached.exists() and Path(str(cached) + ".tbi").exists()):
        with atomic_path(cached, suffix=".vcf.gz") as tmp:
            plain = Path(str(tmp) + ".txt")
            try:
                plain.write_text(text)
                pysam.tabix_compress(str(plain), str(tmp), force=True)
            finally:
                plain.unlink(missing_ok=True)
            pysam.tabix_index(str(tmp), preset="vcf", force=True)
            with atomic_path(Path(str(cached) + ".tbi"), suffix=".tbi") as tbi:
                shutil.move(str(tmp) + ".tbi", tbi)
    # The agent's copy: index first, then the VCF, each by rename, so OUT implies OUT.tbi.
    # The index gets the VCF's mtime: htslib warns on stderr about an index older than its data.
    with atomic_path(out, suffix=".vcf.gz") as tmp_vcf:
        shutil.copyfile(cached, tmp_vcf)
        stamp = os.stat(tmp_vcf).st_mtime_ns
        with atomic_path(Path(str(out) + ".tbi"), suffix=".tbi") as tmp_tbi:
            shutil.copyfile(str(cached) + ".tbi", tmp_tbi)
            os.utime(tmp_tbi, ns=(stamp, stamp))
    return {"path": str(out), "index": str(out) + ".tbi", "records": len(calls),
            "cached": str(cached)}
