"""Reads benchmark: `biotool breakpoints` and `biotool variants` against their text-pipeline
peers on the same BAM, with wall-time ratios and recall/precision on simulated truth.

    python bench/reads_bench.py [--depth 200] [--bp-depth 1000] [--runs 3] [--threads 2] [--out DIR]

Truth, generated here (tests/unit/reads/simulate.py, seeded): the real SARS-CoV-2
reference (refs/demo) with
  variants:    SNVs, deletions and insertions planted at fractions 1.0 / 0.5 / 0.35 (to be
               found) and 0.04 (below the 0.2 floor), 150 bp reads with 0.5% substitution errors;
  breakpoints: five Cas9-like blunt cuts (reads ending, starting, clipped and carrying
               indels at each cut, both strands) over a uniform background (--bp-depth).
Peers, on the same BAM and region, each the median of --runs:
  variants:    `bcftools mpileup -f REF -r REGION BAM | bcftools call -mv` (normalised with
               `bcftools norm -f REF -m -any` outside the timing, for scoring only)
  breakpoints: `samtools view -q 20 BAM REGION | awk` tallying read starts, ends and clips per
               position with the correct end (POS + reference length - 1)
Both biotool commands run as the agent runs them (a subprocess, start-up included); the
start-up alone (`python -m biotool --help`) is reported too, since it dominates small inputs.
Also: whole-library alignment through the minimap2 binary (what biotool uses) against a
mappy loop writing the BAM with pysam, on the same reads.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REF = REPO / "refs" / "demo" / "sarscov2" / "MN908947.3.reference.fasta"
CONTIG = "MN908947.3"

AWK_TALLY = r"""
{ pos=$4; cig=$6; ref=0; lclip=0; rclip=0; first=1; n=0
  while (match(cig, /^[0-9]+[MIDNSHP=X]/)) {
    len=substr(cig, 1, RLENGTH-1)+0; op=substr(cig, RLENGTH, 1); cig=substr(cig, RLENGTH+1)
    if (op=="M"||op=="D"||op=="N"||op=="="||op=="X") ref+=len
    if (op=="S"||op=="H") { if (first) lclip+=len; else rclip+=len } else { first=0; rclip=0 }
  }
  s=pos-1; e=pos+ref-1
  if (lclip>=5) C[s]++; else S[s]++
  if (rclip>=5) C[e]++; else E[e]++
}
END { for (p in S) T[p]+=S[p]; for (p in E) T[p]+=E[p]; for (p in C) T[p]+=C[p]
      for (p in T) print p "\t" T[p] }
"""


def _sim():
    spec = importlib.util.spec_from_file_location(
        "reads_simulate", REPO / "tests" / "unit" / "reads" / "simulate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _median_time(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _sh(cmd: str, **kw) -> str:
    return subprocess.run(["bash", "-o", "pipefail", "-c", cmd], check=True, capture_output=True,
                          text=True, **kw).stdout


def _biotool(env, *args) -> dict:
    p = subprocess.run([sys.executable, "-m", "biotool", "--quiet", *args], capture_output=True,
                       text=True, env=env)
    if p.returncode:
        raise SystemExit(f"biotool {' '.join(args)} failed: {p.stderr}")
    return json.loads(p.stdout)


def _score(called: set, truth: set, also_true: set = frozenset()) -> dict:
    tp = len(called & truth)
    fp = len(called - truth - set(also_true))
    return {"calls": len(called), "true_positives": tp, "false_positives": fp,
            "recall": round(tp / len(truth), 4) if truth else None,
            "precision": round(tp / (tp + fp), 4) if tp + fp else None}


def bench_variants(sim, ref_seq, d, env, depth, runs):
    truth = sim.plant_variants(ref_seq, seed=5, fractions=(1.0, 0.5, 0.35) * 8, low=(0.04,) * 8)
    reads = sim.variant_reads(ref_seq, truth, depth=depth, seed=5, error_rate=0.005)
    fq = sim.write_fastq(d / "variants.fastq", reads)
    bam = sim.align(REF, fq, d / "variants.bam")
    region = f"{CONTIG}:1-{len(ref_seq)}"
    t_ours, ours = _median_time(lambda: _biotool(env, "variants", "--bam", str(bam), "--reference",
                                                 str(REF), "--region", region, "--top", "100000"),
                                runs)
    raw = d / "bcftools.vcf"
    t_peer, _ = _median_time(lambda: _sh(
        f"bcftools mpileup -f {REF} -r {region} {bam} 2>/dev/null | "
        f"bcftools call -mv -Ov -o {raw} 2>/dev/null"), runs)
    normed = _sh(f"bcftools norm -f {REF} -m -any {raw} 2>/dev/null | "
                 "bcftools query -f '%POS\\t%REF\\t%ALT\\n'")
    peer_calls = {(int(p), r, a) for p, r, a in (l.split("\t") for l in normed.splitlines())}
    want = {(t["pos"], t["ref"], t["alt"]) for t in truth if t["above_floor"]}
    low = {(t["pos"], t["ref"], t["alt"]) for t in truth if not t["above_floor"]}
    our_calls = {(v["pos"], v["ref"], v["alt"]) for v in ours["variants"]}
    return {
        "reads": len(reads), "depth": depth, "planted_above_floor": len(want),
        "planted_below_floor": len(low),
        "biotool_s": round(t_ours, 3), "bcftools_s": round(t_peer, 3),
        "ratio_biotool_over_bcftools": round(t_ours / t_peer, 3),
        # A call of a planted low-fraction allele is true, so it is not a false positive.
        "biotool": {**_score(our_calls, want, low), "below_floor_shown": len(our_calls & low)},
        "bcftools": {**_score(peer_calls, want, low), "below_floor_called": len(peer_calls & low)},
    }


def bench_breakpoints(sim, ref_seq, d, env, depth, runs):
    rng = random.Random(9)
    reads, cuts = [], []
    background = depth * len(ref_seq) // 150
    for i in range(5):
        while True:
            c = sim.cut_site(ref_seq, rng)
            if all(abs(c - x) > 1000 for x in cuts):
                break
        cut_reads, _ = sim.cas9_reads(ref_seq, c, seed=100 + i,
                                      background=background if i == 0 else 0)
        reads += [(f"c{i}_{n}", s) for n, s in cut_reads]
        cuts.append(c)
    fq = sim.write_fastq(d / "cuts.fastq", reads)
    bam = sim.align(REF, fq, d / "cuts.bam")
    region = f"{CONTIG}:1-{len(ref_seq)}"
    t_ours, ours = _median_time(lambda: _biotool(env, "breakpoints", "--bam", str(bam),
                                                 "--reference", str(REF), "--region", region,
                                                 "--top", "5"), runs)
    # -F 0x704: the alignments biotool counts (supplementary ones included, for hard clips).
    t_peer, tally = _median_time(lambda: _sh(
        f"samtools view -q 20 -F 0x704 {bam} {region} | awk '{AWK_TALLY}'"), runs)
    peer = sorted(((int(n), int(p)) for p, n in (l.split("\t") for l in tally.splitlines())),
                  reverse=True)[:5]
    truth = set(cuts)
    return {
        "reads": len(reads), "cuts": len(cuts), "background_depth": depth,
        "biotool_s": round(t_ours, 3), "samtools_awk_s": round(t_peer, 3),
        "ratio_biotool_over_samtools_awk": round(t_ours / t_peer, 3),
        "biotool_top5": _score({r["pos"] for r in ours["consensus"][:5]}, truth),
        "samtools_awk_top5": _score({p for _n, p in peer}, truth),
        "biotool_by_signature_exact": {k: v["pos"] in truth
                                       for k, v in ours["by_signature"].items()},
    }


def bench_alignment(d, threads):
    """The minimap2 binary pipeline biotool uses, against a mappy loop writing BAM via pysam."""
    import mappy
    import pysam

    from biotool.reads.bam import library_bam
    from biotool.reads.reference import resolve

    fq = d / "variants.fastq"
    os.environ["BIOTOOL_CACHE"] = str(d / "cache-align")
    ref = resolve(str(REF))
    ref.index("sr")
    t = time.perf_counter()
    library_bam([fq], ref, "sr", threads=threads)
    t_binary = time.perf_counter() - t

    t = time.perf_counter()
    aligner = mappy.Aligner(str(ref.index("sr")[0]), preset="sr")
    header = {"HD": {"VN": "1.6", "SO": "unsorted"},
              "SQ": [{"SN": n, "LN": len(aligner.seq(n))} for n in aligner.seq_names]}
    unsorted = d / "mappy.unsorted.bam"
    with pysam.AlignmentFile(str(unsorted), "wb", header=header) as out:
        for name, seq, qual in mappy.fastx_read(str(fq)):
            for h in aligner.map(seq):
                if not h.is_primary:
                    continue
                a = pysam.AlignedSegment(out.header)
                a.query_name, a.reference_name, a.reference_start = name, h.ctg, h.r_st
                a.mapping_quality = h.mapq
                s, q = (seq, qual) if h.strand > 0 else (mappy.revcomp(seq), qual[::-1])
                clip_l, clip_r = (h.q_st, len(seq) - h.q_en) if h.strand > 0 else \
                    (len(seq) - h.q_en, h.q_st)
                cig = ([(4, clip_l)] if clip_l else []) + [(op, ln) for ln, op in h.cigar] + \
                    ([(4, clip_r)] if clip_r else [])
                a.flag = 0 if h.strand > 0 else 16
                a.cigartuples = cig
                a.query_sequence = s
                a.query_qualities = pysam.qualitystring_to_array(q)
                out.write(a)
    pysam.sort("-o", str(d / "mappy.bam"), str(unsorted))
    pysam.index(str(d / "mappy.bam"))
    t_mappy = time.perf_counter() - t
    return {"reads_file": fq.name, "minimap2_binary_pipeline_s": round(t_binary, 3),
            "mappy_loop_s": round(t_mappy, 3),
            "ratio_binary_over_mappy": round(t_binary / t_mappy, 3), "threads": threads}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=200)
    ap.add_argument("--bp-depth", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for the whole-library alignment (minimap2, samtools sort)")
    ap.add_argument("--out", type=Path, default=None, help="keep the data here")
    args = ap.parse_args(argv)
    sim = _sim()
    ref_seq = "".join(REF.read_text().splitlines()[1:]).upper()
    with tempfile.TemporaryDirectory() as tmp:
        d = args.out or Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "BIOTOOL_CACHE": str(d / "cache")}
        result = {
            "machine": {"cpus": os.cpu_count(), "load_1min": round(os.getloadavg()[0], 2)},
            "variants": bench_variants(sim, ref_seq, d, env, args.depth, args.runs),
            "startup_s": round(_median_time(lambda: subprocess.run(
                [sys.executable, "-m", "biotool", "--help"], capture_output=True, env=env),
                args.runs)[0], 3),
            "breakpoints": bench_breakpoints(sim, ref_seq, d, env, args.bp_depth, args.runs),
            "alignment": bench_alignment(d, args.threads),
        }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
