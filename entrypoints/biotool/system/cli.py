"""Commands about the environment itself: list, references, doctor, version."""

from __future__ import annotations

from biotool.family import Family
from commandline.spec import Command, Option


def describe() -> Family:
    return Family(commands=("list", "references", "doctor", "version"),
                  summary="what is staged and usable here, environment checks, versions")


def list_cmd() -> dict:
    """Every tool family, the toolbox's commands, R libraries and Python modules (tools;
    their versions: `biotool version`), and every reference, database, model and sample
    (example inputs to try) this image knows, each with whether it is staged and usable
    here: items[] carry kind, name, set, staged, usable, and path (when staged) or reason."""
    from biotool.system.inventory import list_everything

    return list_everything()


def references_cmd() -> dict:
    """Staged references with their indexes (faidx, bwa, bowtie2, hisat2, minimap2 per
    preset) and sha256. An index's path is relative to the folder of the reference's path
    and is what its tool takes (bwa's, bowtie2's, hisat2's prefix); `biotool index
    --reference NAME --kind KIND` prints it whole, and builds one that is not staged."""
    from biotool.system.inventory import references

    return references()


def doctor_cmd(no_sha: bool) -> dict:
    """Check this environment against the rules and manifests: staged files and their
    sha256, writable caches, the egress proxy (or offline mode), non-root user, tools
    on PATH, and that every toolbox command starts (its version command, 8 at a time).
    Prints every check; exits 4 if a required one fails."""
    from biotool.system.doctor import doctor

    # A failed doctor (DoctorFailed) carries the full report, printed before its error line.
    return doctor(verify_sha=not no_sha)


def version_cmd() -> dict:
    """Versions of biotool, every scientific package, RDKit, the binaries, the toolbox
    (each tool's Debian package, each R library, each Python package), and the image's
    build identity (for graders)."""
    from biotool.system.version import versions

    return versions()


def commands() -> list[Command]:
    return [Command("list", list_cmd, help=list_cmd.__doc__),
            Command("references", references_cmd, help=references_cmd.__doc__),
            Command("doctor", doctor_cmd, help=doctor_cmd.__doc__, options=(
                Option(("--no-sha",), "Skip re-hashing staged files.", flag=True),)),
            Command("version", version_cmd, help=version_cmd.__doc__)]
