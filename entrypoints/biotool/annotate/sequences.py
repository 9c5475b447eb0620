"""Reading a sequence argument: given inline (plain or FASTA) or cut from a staged reference.

Every tool that takes a sequence goes through `resolve`, so invalid characters, unknown
references and out-of-range regions fail the same way: exit 2 naming the field.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from biotool.nucleotides import reverse_complement
from biotool.output import InputError

if TYPE_CHECKING:
    from biotool.alignment.reference import Reference

IUPAC_DNA = set("ACGTURYSWKMBDHVN")
PROTEIN = set("ACDEFGHIKLMNPQRSTVWYBZXJUO*")
_SPACE = re.compile(r"[\s0-9]+")


def clean(text: str, field: str = "sequence", alphabet: str = "dna") -> str:
    """Upper-case sequence letters from plain text or FASTA; bad characters name the field."""
    if not isinstance(text, str):
        raise InputError(f"args.{field}: expected a string")
    lines = [ln for ln in text.strip().splitlines() if not ln.startswith(">")]
    seq = _SPACE.sub("", "".join(lines)).upper()
    allowed = IUPAC_DNA | {"-"} if alphabet == "dna" else PROTEIN | {"-"}
    for i, ch in enumerate(seq):
        if ch not in allowed:
            what = ("DNA/RNA allows A C G T U, IUPAC codes R Y S W K M B D H V N and '-'"
                    if alphabet == "dna" else "protein allows the 20 amino acids, B Z X J U O "
                    "and '*'")
            raise InputError(f"args.{field}: invalid character {ch!r} at position {i + 1} "
                             f"({what})")
    seq = seq.replace("-", "")
    if not seq:
        raise InputError(f"args.{field}: empty sequence")
    return seq


def staged_reference(name: str, field: str = "reference") -> Reference:
    """The staged reference of that name or alias (alignment.reference, the one resolver)."""
    from biotool.alignment.reference import required

    return required(name, f"args.{field}")


def resolve(args: dict, alphabet: str = "dna", field: str = "sequence") -> tuple[str, list[dict]]:
    """(sequence, provenance items) from args: `sequence`, or `reference` [+ seqid, start, end,
    strand]. Coordinates are 1-based inclusive, like samtools regions; only the region is read
    from the staged FASTA (through its faidx)."""
    from biotool.provenance import used

    if args.get(field) is not None:
        if args.get("reference"):
            raise InputError(f"args.reference: give either {field} or reference, not both")
        return clean(args[field], field, alphabet), []
    if not args.get("reference"):
        raise InputError(f"args.{field}: required (or give reference, with seqid/start/end)")
    ref = staged_reference(args["reference"])
    contigs = ref.contigs()
    seqid = args.get("seqid")
    if seqid is None:
        if len(contigs) > 1:
            raise InputError(f"args.seqid: reference {ref.name} has {len(contigs)} sequences; "
                             f"name one of {', '.join(contigs)}")
        seqid = next(iter(contigs))
    if seqid not in contigs:
        raise InputError(f"args.seqid: {seqid!r} is not in reference {ref.name} "
                         f"(has {', '.join(contigs)})")
    length = contigs[seqid]
    start = args.get("start") or 1
    end = args.get("end") or length
    if not 1 <= start <= end <= length:
        raise InputError(f"args.start/end: region {start}-{end} is outside {seqid} "
                         f"(1-{length})")
    out = ref.fetch(seqid, start - 1, end)
    if args.get("strand") == "-":
        out = reverse_complement(out)
    return out, [used("reference", ref.name, ref.sha256, seqid=seqid, region=f"{start}-{end}")]
