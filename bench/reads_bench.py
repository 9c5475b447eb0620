"""Reads benchmark: `biotool breakpoints` and `biotool variants` against their text-pipeline
peers on the same BAM, with wall-time ratios and recall/precision on simulated truth.

    python bench/reads_bench.py [--depth 200] [--bp-depth 1000 [5000]] [--runs 3] [--threads 2]
                                [--out DIR] [--only PART..]

Truth, generated here (tests/biotool_testing/simulate.py, seeded): the real SARS-CoV-2
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
Also:
  amplicon:    a 220 bp Cas9 amplicon library (2,000 MiSeq-like reads, 25% edited at a known
               cut, adapters past the end): is the top position the cut, for biotool and for
               the samtools | awk read-edge tally?
  header_m5:   variants on a BAM whose @SQ M5 is of the 12 kb chromosome while --reference is
               its 4,200-base extract, against bcftools on the same files;
  short_reads: bowtie2's lambda example (tests/unit/reads/data/bowtie2_lambda): reads mapped by
               biotool (align and the whole-library BAM) against bwa mem, bowtie2 and
               minimap2 -x sr run directly (needs bwa and bowtie2 on PATH);
  alignment:   the whole-library short-read pipeline (bwa mem | samtools sort) against the
               minimap2 -x sr pipeline, time and reads mapped, on the variants reads;
  breakpoints_image: the breakpoints BAMs timed inside biotool-sandbox:latest (uid 12345, no
               network), biotool, its one-base-region floor and the peer alternated.
Each breakpoints row also gives biotool_floor_s: the command on a one-base region, its fixed
cost (start-up, input checks). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from repo_paths import REPO  # first: it puts tests/ on sys.path
import timing
from timing import repeated, timed

from biotool_testing import simulate as sim

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
    t_ours, ours = repeated(lambda: _biotool(env, "variants", "--bam", str(bam), "--reference",
                                             str(REF), "--region", region, "--top", "100000"),
                            runs)
    raw = d / "bcftools.vcf"
    t_peer, _ = repeated(lambda: _sh(
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


def cuts_library(sim, ref_seq, d, depth) -> tuple[Path, list[int], int]:
    """The breakpoints library (five Cas9-like cuts over a uniform background of `depth`)
    aligned into d/cuts<depth>.bam: (BAM, the cuts, reads)."""
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
    fq = sim.write_fastq(d / f"cuts{depth}.fastq", reads)
    bam = sim.align(REF, fq, d / f"cuts{depth}.bam")
    fq.unlink()
    return bam, cuts, len(reads)


def bench_breakpoints(sim, ref_seq, d, env, depth, runs):
    bam, cuts, n_reads = cuts_library(sim, ref_seq, d, depth)
    region = f"{CONTIG}:1-{len(ref_seq)}"
    t_ours, ours = repeated(lambda: _biotool(env, "breakpoints", "--bam", str(bam),
                                             "--reference", str(REF), "--region", region,
                                             "--top", "5"), runs)
    t_one, one = repeated(lambda: _biotool(env, "breakpoints", "--bam", str(bam),
                                           "--reference", str(REF), "--region", region,
                                           "--top", "5", "--threads", "1"), runs)
    assert one["consensus"] == ours["consensus"]  # threads inflate blocks; nothing else changes
    # The command's fixed cost (start-up, input checks, output) on a one-base region.
    t_floor, _ = repeated(lambda: _biotool(env, "breakpoints", "--bam", str(bam),
                                           "--reference", str(REF), "--region",
                                           f"{CONTIG}:1-1"), runs)
    # -F 0x704: the alignments biotool counts (supplementary ones included, for hard clips).
    t_peer, tally = repeated(lambda: _sh(
        f"samtools view -q 20 -F 0x704 {bam} {region} | awk '{AWK_TALLY}'"), runs)
    peer = sorted(((int(n), int(p)) for p, n in (l.split("\t") for l in tally.splitlines())),
                  reverse=True)[:5]
    truth = set(cuts)
    return {
        "reads": n_reads, "cuts": len(cuts), "background_depth": depth,
        "biotool_s": round(t_ours, 3), "samtools_awk_s": round(t_peer, 3),
        "ratio_biotool_over_samtools_awk": round(t_ours / t_peer, 3),
        "biotool_threads1_s": round(t_one, 3),
        "ratio_threads1_over_samtools_awk": round(t_one / t_peer, 3),
        "biotool_floor_s": round(t_floor, 3),
        "ratio_above_floor_over_samtools_awk": round((t_ours - t_floor) / t_peer, 3),
        "biotool_top5": _score({r["pos"] for r in ours["consensus"][:5]}, truth),
        "samtools_awk_top5": _score({p for _n, p in peer}, truth),
        "biotool_by_signature_exact": {k: v["pos"] in truth
                                       for k, v in ours["by_signature"].items()},
    }


# Runs inside the image with its python, after timing.py's own text (the image holds no
# bench/): each BAM's breakpoints, its floor and the peer, alternated, medians of `runs` (as
# agents run them: the image's start-up, not this host's).
IMAGE_TIMER = timing.source() + """
import json, statistics, subprocess, sys
awk, runs, bams = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
ref, region = "/ref/MN908947.3.reference.fasta", "MN908947.3:1-29903"
out = {}
for bam in bams:
    cmds = {"biotool": ["biotool", "-q", "breakpoints", "--bam", bam, "--reference", ref,
                        "--region", region, "--top", "5"],
            "floor": ["biotool", "-q", "breakpoints", "--bam", bam, "--reference", ref,
                      "--region", "MN908947.3:1-1"],
            "peer": ["bash", "-o", "pipefail", "-c",
                     f"samtools view -q 20 -F 0x704 {bam} {region} | awk '{awk}'"]}
    times = {k: [] for k in cmds}
    for _ in range(runs + 1):  # the first round warms the page cache and biotool's cache
        for k, cmd in cmds.items():
            seconds, _proc = timed(lambda: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                                                          stderr=subprocess.DEVNULL))
            times[k].append(seconds)
    med = {k: statistics.median(v[1:]) for k, v in times.items()}
    out[bam] = {**{f"{k}_s": round(v, 3) for k, v in med.items()},
                "ratio_biotool_over_samtools_awk": round(med["biotool"] / med["peer"], 3)}
print(json.dumps(out))
"""


def bench_breakpoints_image(d, depths, runs, image="biotool-sandbox:latest"):
    """The breakpoints part's BAMs again, timed inside the image as an agent runs them."""
    os.chmod(d, 0o755)  # the container runs as an arbitrary uid, like Apptainer
    names = [f"cuts{depth}.bam" for depth in depths]
    for name in names:
        for f in (d / name, d / f"{name}.bai"):
            os.chmod(f, 0o644)
    out = subprocess.run(["docker", "run", "--rm", "--network", "none", "--user", "12345:12345",
                          "-v", f"{d}:/data:ro", "-v", f"{REF.parent}:/ref:ro", image,
                          "python3", "-c", IMAGE_TIMER, AWK_TALLY, str(runs),
                          *(f"/data/{n}" for n in names)],
                         check=True, capture_output=True, text=True).stdout
    return {name: v for name, v in zip(names, json.loads(out).values())}


def bench_alignment(d, threads):
    """Whole-library alignment as biotool runs it for short reads (bwa mem | samtools sort,
    through library_bam) against the minimap2 -x sr pipeline it replaced, on the same reads."""
    from biotool.reads.bam import library_bam
    from biotool.alignment.reference import resolve

    fq = d / "variants.fastq"
    os.environ["BIOTOOL_CACHE"] = str(d / "cache-align")
    ref = resolve(str(REF))
    ref.index("sr")  # the bwa index, built outside the timing
    t_bwa, out = timed(lambda: library_bam([fq], ref, "sr", threads=threads))
    t_mm2, _ = timed(lambda: _sh(
        f"minimap2 -a -x sr -t {threads} --secondary=no {REF} {fq} 2>/dev/null | "
        f"samtools sort -@ {max(0, threads - 1)} -o {d / 'mm2.bam'} - 2>/dev/null && "
        f"samtools index {d / 'mm2.bam'}"))
    return {"reads_file": fq.name, "threads": threads,
            "biotool_bwa_pipeline_s": round(t_bwa, 3), "minimap2_sr_pipeline_s": round(t_mm2, 3),
            "ratio_bwa_over_minimap2": round(t_bwa / t_mm2, 3),
            "mapped_bwa": _mapped(out.bam), "mapped_minimap2_sr": _mapped(d / "mm2.bam")}


def _mapped(bam) -> int:
    """Primary alignments that map, in a BAM or SAM."""
    return int(_sh(f"samtools view -c -F 0x904 {bam}"))


LAMBDA = REPO / "tests" / "unit" / "reads" / "data" / "bowtie2_lambda"


def bench_short_reads(d, env, threads, runs):
    """bowtie2's own example (lambda phage, 10,000 simulated reads with errors and Ns): reads
    mapped by biotool (align's sample and the whole-library BAM) against bwa mem, bowtie2 and
    minimap2 -x sr run directly on the same reads."""
    reads, ref = LAMBDA / "reads_1.fq.gz", LAMBDA / "lambda_virus.fa"
    _sh(f"bwa index -p {d / 'lambda'} {ref} 2>/dev/null && "
        f"bowtie2-build -q {ref} {d / 'lambda_bt2'} >/dev/null")
    peers = {
        "bwa_mem": f"bwa mem -v 1 -t {threads} {d / 'lambda'} {reads} > {d / 'bwa_mem.sam'}",
        "bowtie2": f"bowtie2 --no-unal -p {threads} -x {d / 'lambda_bt2'} -U {reads} "
                   f"-S {d / 'bowtie2.sam'} 2>/dev/null",
        "minimap2_sr": f"minimap2 -a -x sr -t {threads} --secondary=no {ref} {reads} "
                       f"> {d / 'minimap2_sr.sam'} 2>/dev/null",
    }
    out = {"reads": 10000, "reference": "lambda phage NC_001416.1, 48,502 nt"}
    for name, cmd in peers.items():
        t, _ = repeated(lambda: _sh(cmd), runs)
        out[name] = {"mapped": _mapped(d / f"{name}.sam"), "s": round(t, 3)}
    t, aligned = repeated(lambda: _biotool(env, "align", "--fastq", str(reads), "--reference",
                                           str(ref), "--sample", "10000"), runs)
    out["biotool_align"] = {"mapped": aligned["mapped"], "s": round(t, 3),
                            "preset": aligned["preset"], "aligner": aligned["aligner"]}
    lib_env = {**env, "BIOTOOL_CACHE": str(d / "cache-lambda")}
    t, whole = timed(lambda: _biotool(lib_env, "breakpoints", "--fastq", str(reads),
                                      "--reference", str(ref), "--threads", str(threads)))
    out["biotool_library_bam"] = {"mapped": _mapped(whole["bam"]), "s_first_run": round(t, 3)}
    for k in ("biotool_align", "biotool_library_bam", "bowtie2", "minimap2_sr"):
        out[k]["fraction"] = round(out[k]["mapped"] / 10000, 4)
        out[k]["minus_bwa_mem_points"] = round(100 * (out[k]["mapped"] - out["bwa_mem"]["mapped"])
                                               / 10000, 2)
    out["bwa_mem"]["fraction"] = round(out["bwa_mem"]["mapped"] / 10000, 4)
    return out


def bench_amplicon(sim, d, env, runs):
    """A Cas9 amplicon library (220 bp amplicon as the reference, 2,000 MiSeq-like 250 bp reads
    with stagger bases and adapters past the end, 25% carrying repair outcomes at a known cut):
    is consensus[0] the cut, for biotool and for the samtools | awk read-edge tally?"""
    amp, c = sim.amplicon(220, seed=41)
    reads, truth = sim.amplicon_reads(amp, c, seed=41, n=2000, edited=0.25, reverse_share=0.5)
    fasta = sim.write_fasta(d / "amplicon.fasta", "amplicon", amp)
    fq = sim.write_fastq(d / "amplicon.fastq", reads)
    bam = sim.align(fasta, fq, d / "amplicon.bam")
    t_ours, ours = repeated(lambda: _biotool(env, "breakpoints", "--bam", str(bam),
                                             "--reference", str(fasta)), runs)
    t_peer, tally = repeated(lambda: _sh(
        f"samtools view -q 20 -F 0x704 {bam} | awk '{AWK_TALLY}'"), runs)
    peer_top = max(((int(n), int(p)) for p, n in (l.split("\t") for l in tally.splitlines())),
                   key=lambda x: (x[0], -x[1]))
    return {"reads": len(reads), "cut": c, "edited_reads": truth["edited_reads"],
            "biotool_s": round(t_ours, 3), "samtools_awk_s": round(t_peer, 3),
            "biotool_top": ours["consensus"][0]["pos"],
            "biotool_top_indels": ours["consensus"][0]["indels"],
            "biotool_discounted": [(x["pos"], x["reads"]) for x in ours["discounted"][:4]],
            "samtools_awk_top": peer_top[1], "samtools_awk_top_reads": peer_top[0]}


def bench_header_m5(sim, d, env, runs):
    """The 1000 Genomes layout: a BAM whose @SQ carries the M5 of a 12 kb chromosome while
    --reference is its 4,200-base extract. biotool variants (a warning, not a refusal)
    against bcftools on the same BAM and extract."""
    import hashlib

    import pysam

    chrom = sim.genome(12000, seed=31)
    ref = chrom[3000:7200]
    truth = sim.plant_variants(ref, seed=31, fractions=(1.0, 0.5), low=())
    fasta = sim.write_fasta(d / "extract.fasta", "20", ref)
    fq = sim.write_fastq(d / "extract.fastq", sim.variant_reads(ref, truth, depth=60, seed=31))
    plain = sim.align(fasta, fq, d / "extract.plain.bam")
    bam = d / "extract.m5.bam"
    with pysam.AlignmentFile(str(plain)) as src:
        header = src.header.to_dict()
        header["SQ"][0]["M5"] = hashlib.md5(chrom.encode()).hexdigest()
        with pysam.AlignmentFile(str(bam), "wb", header=header) as out:
            for read in src:
                out.write(pysam.AlignedSegment.fromstring(read.to_string(), out.header))
    pysam.index(str(bam))
    t_ours, ours = repeated(lambda: _biotool(env, "variants", "--bam", str(bam),
                                             "--reference", str(fasta), "--top", "100"), runs)
    t_peer, called = repeated(lambda: _sh(
        f"bcftools mpileup -f {fasta} {bam} 2>/dev/null | bcftools call -mv 2>/dev/null | "
        "bcftools query -f '%POS\\n'"), runs)
    want = {t["pos"] for t in truth}
    return {"planted": len(want), "warnings": len(ours.get("warnings", [])),
            "biotool_s": round(t_ours, 3), "bcftools_s": round(t_peer, 3),
            "biotool": _score({v["pos"] for v in ours["variants"]}, want),
            "bcftools": _score({int(p) for p in called.split()}, want)}


PARTS = ("variants", "startup", "breakpoints", "breakpoints_image", "amplicon", "header_m5",
         "short_reads", "alignment")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=200)
    ap.add_argument("--bp-depth", type=int, nargs="+", default=[1000],
                    help="background depth of each breakpoints library (1000: 200k reads)")
    ap.add_argument("--only", nargs="+", choices=PARTS, default=PARTS, help="parts to run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for the whole-library alignment (minimap2, samtools sort)")
    ap.add_argument("--out", type=Path, default=None, help="keep the data here")
    args = ap.parse_args(argv)
    ref_seq = "".join(REF.read_text().splitlines()[1:]).upper()
    with tempfile.TemporaryDirectory() as tmp:
        d = args.out or Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "BIOTOOL_CACHE": str(d / "cache")}
        parts = {
            "variants": lambda: bench_variants(sim, ref_seq, d, env, args.depth, args.runs),
            "startup": lambda: round(repeated(lambda: subprocess.run(
                [sys.executable, "-m", "biotool", "--help"], capture_output=True, env=env),
                args.runs)[0], 3),
            "breakpoints": lambda: [bench_breakpoints(sim, ref_seq, d, env, depth, args.runs)
                                    for depth in args.bp_depth],
            # Needs the breakpoints part's BAMs and the built image (make image).
            "breakpoints_image": lambda: bench_breakpoints_image(d, args.bp_depth, args.runs),
            "amplicon": lambda: bench_amplicon(sim, d, env, args.runs),
            "header_m5": lambda: bench_header_m5(sim, d, env, args.runs),
            "short_reads": lambda: bench_short_reads(d, env, args.threads, args.runs),
            # The whole-library alignment reads the variants part's FASTQ.
            "alignment": lambda: bench_alignment(d, args.threads),
        }
        result = {"machine": {"cpus": os.cpu_count(), "load_1min": round(os.getloadavg()[0], 2)}}
        for name in PARTS:
            if name in args.only:
                result[name] = parts[name]()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
