"""Commands of the taxonomy family: `biotool taxonomy`."""

from __future__ import annotations

from typing import Optional

import typer

from biotool.output import run

HELP = """Which organisms the reads or sequences come from, by BLAST (blastn).

Input: --fasta F or --fastq F (plain or gzip; "-" reads stdin), nucleotides only (a
protein record is exit 2). Empty and all-N records are skipped and counted in
input.skipped. FASTQ (and FASTA with more records than --sample) is sampled with a fixed
seed to --sample reads.

Where it searches: remote NCBI BLAST (nt) when the egress proxy (HTTPS_PROXY) is reachable,
else the BLAST database staged in this image (a small panel, NOT nt). --remote / --local
force one. Remote goes only to the allowlisted NCBI host, through HTTPS_PROXY when set (an
http:// proxy on a local network: the sandbox's egress; never a public address), and never
follows a redirect. It follows NCBI's rules across this sandbox's biotool processes
(BIOTOOL_NCBI_PACING_DIR, default $TMPDIR/biotool-ncbi-pacing): at most one contact every
10 s, one status poll per search per minute, at most 40 queries per submission. The egress
proxy enforces the same rules for every run on the host and answers 429 when another run
holds NCBI's slot; biotool waits that out within --timeout. A remote run therefore takes
minutes: 100 reads are 3 submissions; budget --timeout accordingly.

Output (one JSON object): mode and why; n (queries searched); hits (per query, the --top
best hits with accession, title, taxid, sciname, bit_score, evalue, pident, alignment
coordinates); summary: dominant organism and dominant_fraction, organisms with read
counts, detection_floor (about 1/n: organisms rarer than that were probably not sampled),
can_see_minority (whether an organism at 5% of reads had a 95% chance of being seen),
host_dominated, caveat, competence. When influenza hits are present, an `influenza` block:
strong tier (H from HA/segment 4 hits, N from NA/segment 6 hits), weak tier (strain labels
of internal-segment hits), candidate subtypes, competence (alternatives = ties = candidates
beyond the first). truncated=true when --timeout ran out with part of the queries searched.

Exit codes: 2 bad input (missing or malformed file, bad option); 3 refused by the rules
(the server is not on the egress allowlist, or HTTPS_PROXY is not a local http:// proxy);
4 BLAST failed (no RID, FAILED/UNKNOWN
status, rate-limit or HTML page instead of JSON, empty report, a redirect, the pacing
schedule not writable, timeout with nothing done).

\b
Examples:
  biotool taxonomy --fastq reads.fastq --sample 200 --local
  biotool taxonomy --fasta contigs.fasta --remote --email you@example.org --timeout 1200"""


def describe() -> dict:
    return {"commands": ["taxonomy"],
            "summary": "which organisms reads come from: NCBI BLAST within NCBI's rules, or "
                       "blastn on the staged panel; detection floor; influenza subtype tiers",
            "requires": {"binaries": ["blastn"], "python": []}}


def register(app: typer.Typer) -> None:
    @app.command("taxonomy", help=HELP)
    def taxonomy_cmd(
        fasta: Optional[str] = typer.Option(None, "--fasta", help="FASTA file of queries."),
        fastq: Optional[str] = typer.Option(None, "--fastq", help="FASTQ file of reads."),
        top: int = typer.Option(5, "--top", help="Hits kept per query (1-50; remote asks NCBI "
                                                 "for at most 10)."),
        sample: int = typer.Option(100, "--sample", help="Reads searched, drawn with a fixed "
                                                         "seed; detection floor is ~1/sample."),
        timeout: float = typer.Option(600.0, "--timeout", help="Seconds for the whole run "
                                      "(at most 604800); when it runs out, a partial result "
                                      "with truncated=true."),
        local: bool = typer.Option(False, "--local", help="Search the staged BLAST database."),
        remote: bool = typer.Option(False, "--remote", help="Search NCBI BLAST through the "
                                                            "egress proxy."),
        database: Optional[str] = typer.Option(None, "--database", help="Local: a staged "
                                               "BLAST database name or alias (default: the "
                                               "staged taxonomy panel, production before "
                                               "demo; demo-viral-panel in the demo image). "
                                               "Remote: an NCBI database (default nt)."),
        email: str = typer.Option("", "--email", help="Contact address sent to NCBI as the "
                                  "`email` parameter (or env BIOTOOL_NCBI_EMAIL)."),
        seed: int = typer.Option(0, "--seed", help="Sampling seed."),
        threads: int = typer.Option(1, "--threads", help="blastn threads (local)."),
    ) -> None:
        from biotool.taxonomy.identify import identify

        run(lambda: identify(fasta=fasta, fastq=fastq, top=top, sample=sample, timeout=timeout,
                             local=local, remote=remote, database=database, email=email,
                             seed=seed, threads=threads))
