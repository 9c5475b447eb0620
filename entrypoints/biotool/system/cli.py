"""Commands about the environment itself: list, references, doctor, version."""

from __future__ import annotations

import typer

from biotool.output import emit, run


def describe() -> dict:
    return {"commands": ["list", "references", "doctor", "version"],
            "summary": "what is staged and usable here, environment checks, versions",
            "requires": {}}


def register(app: typer.Typer) -> None:
    @app.command("list")
    def list_cmd() -> None:
        """Every tool family, the toolbox's commands, R libraries and Python modules (tools;
        their versions: `biotool version`), and every reference, database, model and sample
        (example inputs to try) this image knows, each with whether it is staged and usable
        here: items[] carry kind, name, set, staged, usable, and path (when staged) or reason."""
        from biotool.system.inventory import list_everything

        run(list_everything)

    @app.command("references")
    def references_cmd() -> None:
        """Staged references with their indexes (faidx, bwa, bowtie2, hisat2, minimap2 per
        preset) and sha256. An index's path is relative to the folder of the reference's path
        and is what its tool takes (bwa's, bowtie2's, hisat2's prefix); `biotool index
        --reference NAME --kind KIND` prints it whole, and builds one that is not staged."""
        from biotool.system.inventory import references

        run(references)

    @app.command("doctor")
    def doctor_cmd(
        no_sha: bool = typer.Option(False, "--no-sha", help="Skip re-hashing staged files."),
    ) -> None:
        """Check this environment against the rules and manifests: staged files and their
        sha256, writable caches, the egress proxy (or offline mode), non-root user, tools
        on PATH, and that every toolbox command starts (its version command, 8 at a time).
        Prints every check; exits 4 if a required one fails."""
        from biotool.system.doctor import DoctorFailed, doctor

        def go() -> dict:
            try:
                return doctor(verify_sha=not no_sha)
            except DoctorFailed as exc:
                emit(exc.result)  # the full report on stdout, then the one-line error
                raise

        run(go)

    @app.command("version")
    def version_cmd() -> None:
        """Versions of biotool, every scientific package, RDKit, the binaries, the toolbox
        (each tool's Debian package, each R library, each Python package), and the image's
        build identity (for graders)."""
        from biotool.system.version import versions

        run(versions)
