"""Commands of the taxonomy family: `biotool taxonomy`."""

from __future__ import annotations

from biotool import options
from biotool.arms import hedge
from biotool.family import Binary, Family
from commandline.kinds import count
from commandline.spec import Command, Option

MAX_TOP = 50  # hits an agent reads; each query is searched for 5 whatever --top
# A week: beyond it, time arithmetic overflows and NCBI drops RIDs.
MAX_TIMEOUT = 7 * 86400

HELP = """Which organisms the reads or sequences come from, by BLAST (blastn).

Input: --fasta F or --fastq F (plain or gzip; "-" reads stdin), nucleotides only (a
protein record is exit 2). Empty and all-N records are skipped and counted in
input.skipped. FASTQ (and FASTA with more records than --sample) is sampled with a fixed
seed to --sample reads.

Where it searches: remote NCBI BLAST (nt) when the egress proxy (HTTPS_PROXY) is reachable,
else the BLAST database staged in this image (a small panel⟦, NOT nt⟧). --remote / --local
force one. Remote goes only to the allowlisted NCBI host, through HTTPS_PROXY when set (an
http:// proxy on a local network: the sandbox's egress; never a public address), and never
follows a redirect. It follows NCBI's rules across this sandbox's biotool processes
(BIOTOOL_NCBI_PACING_DIR, default $TMPDIR/biotool-ncbi-pacing): at most one contact every
10 s, one status poll per search per minute, at most 40 queries per submission. The egress
proxy enforces the same rules for every run on the host and answers 429 when another run
holds NCBI's slot; biotool waits that out within --timeout. A remote run therefore takes
minutes: 100 reads are 3 submissions; budget --timeout accordingly.

Output (one JSON object, bounded: a few KB whatever the input): mode and why; n (queries
searched); hits: the --top best hits over all queries (not per query), each with its query
and only taxonomic and alignment fields (sciname, taxid, title cut to 200 characters,
bit_score, evalue, pident, align_len, query and subject coordinates; never an accession).
Every query is searched for 5 hits (search.hits_per_query, whatever --top); --hits-out FILE
writes them all, one JSON line per query, and returns the path as hits_file. summary: the
dominant organism, organisms with read counts (the top 20; the rest counted in
other_organisms; a read tied between names counts for each), no_hit, whole_input (true
when every searchable record was searched, not a sample) and, for --fasta,
aligned_fraction (how much of the named records their best hits align).⟦ Beside them:
dominant_fraction (of named_reads, the reads with a named best hit), no_hit_caveat,
detection_floor (1/n: an organism rarer than that is unobserved, not absent), can_see_minority (true only when the
dominant organism holds under half the named reads and at least 200 reads have a named hit;
no named hit at all establishes nothing; otherwise the caveat gives the dominant share and
names the other organisms seen and how to see rarer ones: deplete it, or search far more
reads; with the whole input searched, only more sequence helps), p_minority_seen (the chance
an organism at 5% of reads was drawn), host_dominated, caveat, competence. Competence is over
every record searched: confidence = dominant share of the named reads x identified share of
the records searched (--fasta: each named record weighted by how much of it aligns); margin =
the dominant organism's lead beyond the no-hit reads (which might all be the runner-up), over
the records searched. The whole input's shares are exact; a sample's are taken at their 95%
Wilson bound (k of k reads: k/(k+3.84)), so few reads give low confidence smoothly, with no
cut at a count. With no named hit, detection_floor is 1.0 and competence.applicable is
false.⟧ When influenza hits are present, an `influenza` block: strong tier (H from
HA/segment 4 hits, N from NA/segment 6 hits), weak tier (strain labels of internal-segment
hits) and candidate subtypes.⟦ Its competence: (confidence = min(1, strong reads / 10); margin 1.0
only when a strong H x N subtype exists (HA-only reads, H5N?, give 0.0) and no weak-only
subtype lies outside them; alternatives =
ties = candidates beyond the first, and never 0 on a panel holding one subtype). On a panel
holding one subtype the margin is 0, and on any panel many no-hit reads (10%+) set it to 0 too:
HA/NA reads of a subtype the panel lacks come back as no-hit; search nt (--remote) or a wider
database (--database).⟧ truncated=true when --timeout ran out with part of the queries searched.

Exit codes: 2 bad input (missing or malformed file, bad option), or a local search that
searched no query within --timeout; 3 refused by the rules
(the server is not on the egress allowlist, or HTTPS_PROXY is not a local http:// proxy);
4 BLAST failed (no RID, FAILED/UNKNOWN
status, rate-limit or HTML page instead of JSON, empty report, a redirect, the pacing
schedule not writable, --timeout with nothing done at NCBI).

\b
Examples:
  biotool taxonomy --fastq reads.fastq --sample 200 --local --hits-out hits.jsonl
  biotool taxonomy --fasta contigs.fasta --remote --email you@example.org --timeout 1200"""


def describe() -> Family:
    return Family(
        commands=("taxonomy",),
        summary="which organisms reads come from: NCBI BLAST within NCBI's rules, or "
                "blastn on the staged panel; " + hedge("detection floor; ") + "influenza subtype tiers",
        # makeblastdb builds the staged panels' databases, and an agent's own.
        binaries=(Binary("blastn", ("-version",)), Binary("makeblastdb", ("-version",))))


def taxonomy_cmd(fasta, fastq, top, sample, timeout, local, remote, database, email, seed,
                 threads, hits_out) -> dict:
    from biotool.deadline import Deadline
    from biotool.taxonomy.identify import identify

    return identify(fasta=fasta, fastq=fastq, top=top, sample=sample,
                    deadline=Deadline.of_process(timeout),
                    local=local, remote=remote, database=database, email=email or "",
                    seed=seed, threads=threads, hits_out=hits_out)


def commands() -> list[Command]:
    return [Command("taxonomy", taxonomy_cmd, help=HELP, options=(
        Option(("--fasta",), "FASTA file of queries."),
        Option(("--fastq",), "FASTQ file of reads."),
        options.top("Best hits returned over all queries; each query is searched for 5 hits "
                    "whatever this is.", 5, max=MAX_TOP),
        Option(("--sample",), "Reads searched, drawn with a fixed seed." + hedge(
               " The detection floor is ~1/sample."), kind=count(), default=100),
        options.timeout("Seconds for the whole run; when it runs out, a partial result with "
                        "truncated=true.", 600.0, max=MAX_TIMEOUT),
        Option(("--local",), "Search the staged BLAST database.", flag=True),
        Option(("--remote",), "Search NCBI BLAST through the egress proxy.", flag=True),
        Option(("--database",), "Local: a staged BLAST database name or alias (default: the "
               "staged taxonomy panel, production before demo; demo-viral-panel in the demo "
               "image). Remote: an NCBI database (default nt)."),
        Option(("--email",), "Contact address sent to NCBI as the `email` parameter (or env "
               "BIOTOOL_NCBI_EMAIL)."),
        Option(("--seed",), "Sampling seed.", kind=int, default=0),
        options.threads("blastn threads (local).", 1),
        Option(("--hits-out",), "Write every query's hits (JSON Lines) to this file; its path "
               "is returned as hits_file."),
    ))]
