"""Reading a sequence argument: given inline (plain or FASTA) or cut from a staged reference.

Every tool that takes a sequence goes through `resolve`, so invalid characters, unknown
references and out-of-range regions fail the same way: exit 2 naming the field.
"""

from __future__ import annotations

import re

from biotool.output import InputError

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


def reference_record(name: str, field: str = "reference") -> dict:
    from biotool import staging

    rec = staging.find("reference", name)
    if rec is None or rec.get("error") or not rec.get("files"):
        names = sorted(i["name"] for i in staging.staged_items("reference") if i.get("files"))
        raise InputError(f"args.{field}: no staged reference {name!r} (staged: "
                         f"{', '.join(names) or 'none'}; see `biotool references`)")
    return rec


def reference_sequences(rec: dict) -> dict[str, str]:
    """Every sequence of a staged reference FASTA, keyed by its id (first word of the header)."""
    from biotool import staging

    return _read_fasta(str(staging.path_of(rec)))


_FASTA_CACHE: dict[str, dict[str, str]] = {}


def _read_fasta(path: str) -> dict[str, str]:
    if path not in _FASTA_CACHE:
        seqs, name, parts = {}, None, []
        with open(path) as fh:
            for line in fh:
                if line.startswith(">"):
                    if name is not None:
                        seqs[name] = "".join(parts).upper()
                    name, parts = line[1:].split()[0], []
                else:
                    parts.append(line.strip())
        if name is not None:
            seqs[name] = "".join(parts).upper()
        _FASTA_CACHE[path] = seqs
    return _FASTA_CACHE[path]


def resolve(args: dict, alphabet: str = "dna", field: str = "sequence") -> tuple[str, list[dict]]:
    """(sequence, provenance items) from args: `sequence`, or `reference` [+ seqid, start, end,
    strand]. Coordinates are 1-based inclusive, like samtools regions."""
    from biotool.provenance import used

    if args.get(field) is not None:
        if args.get("reference"):
            raise InputError(f"args.reference: give either {field} or reference, not both")
        return clean(args[field], field, alphabet), []
    if not args.get("reference"):
        raise InputError(f"args.{field}: required (or give reference, with seqid/start/end)")
    rec = reference_record(args["reference"])
    seqs = reference_sequences(rec)
    seqid = args.get("seqid")
    if seqid is None:
        if len(seqs) > 1:
            raise InputError(f"args.seqid: reference {rec['name']} has {len(seqs)} sequences; "
                             f"name one of {', '.join(seqs)}")
        seqid = next(iter(seqs))
    if seqid not in seqs:
        raise InputError(f"args.seqid: {seqid!r} is not in reference {rec['name']} "
                         f"(has {', '.join(seqs)})")
    seq = seqs[seqid]
    start = args.get("start") or 1
    end = args.get("end") or len(seq)
    if not 1 <= start <= end <= len(seq):
        raise InputError(f"args.start/end: region {start}-{end} is outside {seqid} "
                         f"(1-{len(seq)})")
    out = seq[start - 1:end]
    if args.get("strand") == "-":
        out = reverse_complement(out)
    return out, [used("reference", rec["name"], rec["sha256"], seqid=seqid,
                      region=f"{start}-{end}")]


_COMP = str.maketrans("ACGTURYSWKMBDHVN", "TGCAAYRSWMKVHDBN")


def reverse_complement(seq: str) -> str:
    return seq.translate(_COMP)[::-1]

