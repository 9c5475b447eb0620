"""The `kraken2-tar` preparer: a prebuilt Kraken 2 database tarball unpacked, and loaded and
run once by this kraken2."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from biotool.output import ToolFailure
from biotool.procs import capture
from biotool.staging import StagingError
from biotool.stagebuild.tools import Prepared, run_tool, safe_extract

KRAKEN2_FILES = ("hash.k2d", "opts.k2d", "taxo.k2d")


def prepare(entry: Mapping[str, Any], fetched: list[Path], item_dir: Path) -> Prepared:
    """A prebuilt Kraken 2 database tarball unpacked, and loaded and run once by this
    kraken2 (a database another version cannot read fails the build, not a first use)."""
    if len(fetched) != 1:
        raise StagingError("a kraken2-tar item needs one source, the database tarball")
    into = item_dir / "kraken2"
    into.mkdir()
    archive = fetched[0].name
    safe_extract(fetched[0], into)
    found = [p.parent for p in into.rglob("hash.k2d")
             if all((p.parent / f).is_file() for f in KRAKEN2_FILES)]
    if len(found) != 1:
        raise StagingError(f"{archive}: holds no Kraken 2 database ({', '.join(KRAKEN2_FILES)} "
                           "in one folder)")
    db = found[0]
    header = run_tool(["kraken2-inspect", "--db", str(db), "--skip-counts"])
    facts = dict(line[2:].split(": ", 1) for line in header.splitlines()
                 if line.startswith("# ") and ": " in line)
    probe = item_dir / "probe.fa"
    probe.write_text(">probe\n" + "ACGT" * 50 + "\n")
    try:
        said = capture(["kraken2", "--db", str(db), "--threads", "1", str(probe)], None)
    except ToolFailure as exc:
        raise StagingError(f"kraken2 does not run on {archive}: {exc}") from None
    finally:
        probe.unlink()
    if said.rc != 0 or "1 sequences" not in said.err:
        raise StagingError(f"kraken2 does not run on {archive}: {said.err.strip()[-300:]}")
    return Prepared({"main": db}, {
        "kraken2": {"options": facts.get("Database options", ""),
                    "taxonomy_nodes": int(facts.get("Total taxonomy nodes", "0") or 0)},
        "use": "kraken2 --db {main} reads.fq"})
