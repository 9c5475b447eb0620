"""`biotool index`: the path of a reference's index for the toolbox's aligners and
quantifiers (bwa, bowtie2, hisat2, minimap2, salmon, kallisto), staged or built on first use."""

from __future__ import annotations

from biotool.alignment import indexes
from biotool.alignment.reference import resolve
from biotool.provenance import provenance, used
from biotool.deadline import UNBOUNDED, Deadline


def index_path(reference: str, kind: str, deadline: Deadline = UNBOUNDED) -> dict:
    """The index `kind` of `reference` (a staged name or a FASTA path): the staged one, else the
    cached one, built first by `deadline` (exit 2 naming --timeout when it cannot be)."""
    indexes.check_kind(kind)
    ref = resolve(reference)
    staged = ref.is_staged(kind)
    path, digest = ref.index_of(kind, deadline)
    return {
        "reference": ref.name,
        "kind": kind,
        "path": str(path),
        "staged": staged,
        "fasta": str(ref.fasta),
        "use": indexes.USE[kind.split(":", 1)[0]].format(p=path),
        "provenance": provenance(used("reference", ref.name, ref.sha256),
                                 used("index", kind, digest, path=str(path))),
    }
