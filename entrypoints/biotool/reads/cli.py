"""Commands of the reads family: align, breakpoints, variants, index."""

from __future__ import annotations

from biotool import options
from biotool.deadline import Deadline
from biotool.family import Binary, Family
from commandline.kinds import count, fraction
from commandline.spec import Command, Option

REF_HELP = ("Staged reference name or alias (see `biotool references`, e.g. MN908947.3), or a "
            "FASTA path, which is indexed on the fly into the cache.")
PRESET_HELP = ("Read type: auto (sr when the median read length is <= 350, whatever the base "
               "quality, else map-ont), sr (short reads: bwa mem), map-ont or map-pb (long "
               "reads: minimap2 with that preset).")
REGION_HELP = ("Limit to chr:start-end (1-based, inclusive; commas allowed), chr:start (to the "
               "contig end) or a whole contig name; {name}:start-end quotes a name that "
               "contains ':'. Exit 2 when empty, start > end or beyond the contig.")
TIMEOUT_HELP = ("Time budget in seconds: when it runs out the command returns what it has, "
                "flagged truncated: true, instead of being killed.")


def describe() -> Family:
    return Family(
        commands=("align", "breakpoints", "variants", "index"),
        summary="reads against a reference: placement, base-exact breakpoints, variants",
        # bcftools is not run here: it is what reads the VCF `variants` writes.
        binaries=(Binary("minimap2"), Binary("bwa", (), version_line="Version:"),
                  Binary("samtools"), Binary("bcftools")),
        python=("mappy", "pysam", "numpy"))


REFERENCE = Option(("--reference",), REF_HELP, required=True)
REGION = Option(("--region",), REGION_HELP)
TIMEOUT = options.timeout(TIMEOUT_HELP)
PRESET = Option(("--preset",), PRESET_HELP, default="auto")
MIN_MAPQ = options.min_mapq()
THREADS = options.threads("Threads for the aligner and sorting.", 2)


def align_cmd(fastq, reference, n_reads, preset, seed, top, timeout) -> dict:
    """Where do these reads come from? Aligns a seeded sample of reads (bwa mem for short
    reads, minimap2 via mappy for long ones) and reports aligner, n_reads (sampled),
    n_reads_in_file, mapped, mapped_fraction, mean_mapq, strands and top_loci [{contig, window [start, end]
    1-based, reads, share}], each read placed by its primary alignment's midpoint in
    1 kb windows. truncated: true when --timeout stopped it early (n_reads then counts
    the reads aligned).⟦ competence: confidence = mapped fraction, margin = top locus
    share, a blind spot when fewer than 100 reads map.⟧ Use breakpoints/variants for the whole
    library. Exit 2 on bad input (malformed/empty FASTQ, FASTA given as FASTQ,
    reference not staged)."""
    from biotool.reads.align import align_sample

    return align_sample(fastq, reference, n_reads, preset, seed, top,
                        Deadline.of_process(timeout))


def breakpoints_cmd(reference, fastq, bam, region, top, min_mapq, threads, timeout,
                    preset) -> dict:
    """Where sequenced molecules stop agreeing with the reference, at base resolution
    (e.g. a Cas9 cut site, a deletion, a junction). Counts four signatures per
    position, separately: reads starting there, reads ending there, clips (soft or hard,
    >= 5 bases) there, and indel junctions there. Convention, for every signature: pos
    is the 1-based LAST reference base covered BEFORE the break (an alignment starting at
    1-based base b counts at pos b-1; one ending at base b counts at pos b; both strands
    alike). Supplementary alignments count, so hard clips mark junctions too. Where a split
    read's pieces overlap on the read (the aligner ran one past the junction through a near
    match), the overlap goes to the piece matching the reference there with fewer
    mismatches and the other's clip counts where the overlap begins. An indel is
    consistent with a break anywhere in its span (a deletion of bases s..e spans s-1..e,
    widened across repeats), so it counts at every pos of its span. Output: consensus
    [{contig, pos, starts, ends, clips, indels, support, agreeing, intact, depth,
    broken_fraction⟦, competence⟧}] ranked by support times the number of signatures that
    agree there (>= 2 reads and >= 10% of the support each); by_signature gives the best
    pos of each signature alone (indels: the span where most agree). Read edges at a
    contig's first or last base and at amplicon primers (a few bases where most reads
    covering them start, or end, while none break on the other side) are not breaks:
    they are left out and listed in discounted with why, so on an amplicon library
    consensus[0] is the cut the indels carry. bam is the cached alignment for reuse with
    --bam; truncated: true when --timeout cut the work short; --threads N also inflates the
    BAM's compressed blocks in N threads.
    Exit 2 on bad input (malformed FASTQ, mate files of different lengths, BAM without
    index, BAM aligned to another reference, reference not staged, region outside the
    contig or on a contig the BAM lacks); 4 if the aligner or samtools fail. Two runs on the same reads at once align them once (the second
    waits and reuses the cached BAM)."""
    from biotool.reads.breakpoints import breakpoints

    files = [p for f in (fastq or []) for p in f.split(",") if p]
    return breakpoints(reference, fastq=files or None, bam=list(bam or []) or None,
                       region=region, top=top, min_mapq=min_mapq, threads=threads,
                       deadline=Deadline.of_process(timeout), preset=preset)


def variants_cmd(reference, fastq, bam, region, min_depth, min_af, top, vcf, min_mapq, min_bq,
                 threads, timeout, preset) -> dict:
    """Substitutions and indels the reads support, each with depth (reads informing the
    position: a base passing --min-bq or a deletion over it), alt_reads, af (alt_reads /
    depth), strand counts fwd/rev and per-sample counts, ranked by alt_reads then af.
    Nothing below the floor (--min-depth, --min-af, and at least 2 alt reads) is listed.⟦
    n_below_floor says how many candidate alleles seen in 2+ reads fell below it.⟧ An
    indel's depth is the reads spanning its anchor base and the base after it. pos is
    1-based; an indel's pos is the base before it and ref/alt include that base (VCF
    convention), shifted fully left in repeats.⟦ other_indels_nearby counts different
    indels overlapping an indel call (one event written several ways by noisy reads).⟧
    Also, in that same depth: median_depth (over the region) and median_depth_covered
    (over positions with depth > 0).⟦ fraction_assessed (share of positions with depth >=
    --min-depth) and competence say what the depth cannot show.⟧ Exit 2 on bad
    input (malformed FASTQ, BAM without index, reference not staged, region outside the
    contig, the same file twice, BAMs aligned to a different reference: a contig of another
    length in the header, or >30% of aligned bases differing from --reference); 4 if the
    aligner or samtools fail. A header M5 that differs while lengths and bases agree is
    listed in warnings⟦ and competence⟧."""
    from biotool.reads.variants import variants

    groups = [[p for p in f.split(",") if p] for f in (fastq or [])]
    return variants(reference, fastq=groups or None, bam=list(bam or []) or None,
                    region=region, min_depth=min_depth, min_af=min_af, top=top, vcf=vcf,
                    min_mapq=min_mapq, min_bq=min_bq, threads=threads,
                    deadline=Deadline.of_process(timeout), preset=preset)


def index_cmd(reference, kind, timeout) -> dict:
    """The path to give bowtie2 -x, hisat2 -x, bwa mem, minimap2, salmon quant -i or
    kallisto quant -i for a reference: the staged index (see `biotool references`), else
    one built once into the cache (a lock, so parallel runs build it once) and kept for
    later runs. Reports reference, kind, path, staged, fasta, use (an example command
    line) and the index's sha256 in provenance. salmon and kallisto index every FASTA
    record as a transcript: give them a transcript FASTA. Exit 2 on an unknown kind or
    reference, or a build --timeout cannot cover; 4 if the indexer fails."""
    from biotool.reads.toolindex import index_path

    return index_path(reference, kind, Deadline.of_process(timeout))


def commands() -> list[Command]:
    # --fastq and --bam also take several files after one flag (`--bam a b c`, `--fastq R1
    # R2`), the form the seed and agents write, besides the repeated flag (Option.gather).
    return [
        Command("align", align_cmd, help=align_cmd.__doc__, options=(
            Option(("--fastq",), "Reads (FASTQ, plain or gzip).", required=True),
            REFERENCE,
            Option(("--sample",), "Size of the seeded random sample.", kind=count(), default=20000,
                   aliases=("--n-reads",), dest="n_reads"),
            PRESET,
            Option(("--seed",), "Sampling seed (same seed, same sample).", kind=int, default=0),
            options.top("How many loci to list.", 5),
            TIMEOUT)),
        Command("breakpoints", breakpoints_cmd, help=breakpoints_cmd.__doc__, options=(
            REFERENCE,
            Option(("--fastq",), "Reads (FASTQ, plain or gzip) of one library: one file, or "
                   "the two mate files of a paired library as --fastq R1.fq R2.fq (also --fastq "
                   "R1.fq --fastq R2.fq or R1.fq,R2.fq). Aligned whole into a cached, sorted, "
                   "indexed BAM.", multiple=True, gather="each", metavar="F [F2]"),
            Option(("--bam",), "Instead of --fastq: one coordinate-sorted BAM with its .bai "
                   "index, aligned to --reference.", multiple=True, gather="each", metavar="B"),
            REGION,
            options.top("How many consensus positions to list.", 10),
            MIN_MAPQ, THREADS, TIMEOUT, PRESET)),
        Command("variants", variants_cmd, help=variants_cmd.__doc__, options=(
            REFERENCE,
            Option(("--fastq",), "Reads (FASTQ, plain or gzip), one library per --fastq: one "
                   "file, or the two mate files of a paired library as --fastq R1.fq R2.fq (or "
                   "R1.fq,R2.fq); repeat --fastq for more libraries. Each is aligned whole into "
                   "a cached, sorted, indexed BAM.", multiple=True, gather="grouped",
                   metavar="F [F2]"),
            Option(("--bam",), "Instead of --fastq: coordinate-sorted, indexed BAMs, one per "
                   "sample: --bam a.bam b.bam c.bam or --bam a.bam --bam b.bam (pooled, "
                   "per-sample counts kept).", multiple=True, gather="each", metavar="B.."),
            REGION,
            Option(("--min-depth",), "Floor: informative depth.", kind=count(), default=10),
            Option(("--min-af",), "Floor: allele fraction.", kind=fraction(zero_ok=False),
                   default=0.2),
            options.top("How many variants to list (all go to --vcf).", 25),
            Option(("--vcf",), "Also write every variant above the floor to this .vcf.gz "
                   "(bgzipped, with a .tbi index; readable by bcftools)."),
            MIN_MAPQ,
            Option(("--min-bq",), "Ignore bases below this quality.", kind=count(0, 93),
                   default=13),
            THREADS, TIMEOUT, PRESET)),
        Command("index", index_cmd, help=index_cmd.__doc__, options=(
            REFERENCE,
            Option(("--kind",), "bwa, bowtie2, hisat2, salmon, kallisto, or minimap2:PRESET "
                   "(map-ont, map-pb, map-hifi, asm5, asm10, asm20, splice).", required=True),
            options.timeout("Time budget in seconds for building the index when it is "
                            "neither staged nor cached: a build it cannot cover is stopped, "
                            "keeps nothing, and exits 2."))),
    ]
