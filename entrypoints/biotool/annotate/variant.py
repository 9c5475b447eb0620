"""Variant annotation on a coding sequence: codon change, HGVS c. and p., and effect.

The CDS comes from the staged gene table (a gene symbol or ID, or a genomic position on a
staged reference) or is given inline. Indels are shifted 3' as HGVS requires before they are
named; a frameshift is read on into the 3' flanking sequence to find the new stop.
"""

from __future__ import annotations

import re

from biotool.annotate import arguments
from biotool.annotate.sequences import reverse_complement
from biotool.competence import bounded, not_applicable
from biotool.output import InputError
from biotool.provenance import provenance, used as used_item

THREE = {"A": "Ala", "R": "Arg", "N": "Asn", "D": "Asp", "C": "Cys", "Q": "Gln", "E": "Glu",
         "G": "Gly", "H": "His", "I": "Ile", "L": "Leu", "K": "Lys", "M": "Met", "F": "Phe",
         "P": "Pro", "S": "Ser", "T": "Thr", "W": "Trp", "Y": "Tyr", "V": "Val", "*": "Ter",
         "X": "Xaa", "U": "Sec", "O": "Pyl"}
SO_TERM = {"synonymous": "synonymous_variant", "missense": "missense_variant",
           "nonsense": "stop_gained", "frameshift": "frameshift_variant",
           "start_lost": "start_lost", "stop_lost": "stop_lost"}
MODEL_BLIND_SPOTS = ("predicted from the coding sequence alone: splicing, RNA structure and "
                     "nonsense-mediated decay are not modelled",)

_HGVS = re.compile(r"^c\.(?P<a>\d+)(?:_(?P<b>\d+))?(?:(?P<ref>[ACGT])>(?P<alt>[ACGT])|"
                   r"(?P<kind>delins|del|ins|dup)(?P<seq>[ACGT]*))$")


def _aa3(protein: str) -> str:
    return "".join(THREE.get(aa, "Xaa") for aa in protein)


def _translate(seq: str, table: int) -> str:
    from Bio.Seq import Seq

    seq = seq[: len(seq) - len(seq) % 3]
    return str(Seq(seq).translate(table=table))


def _to_stop(protein: str) -> str:
    """Protein up to and including the first stop (or all of it when there is none)."""
    k = protein.find("*")
    return protein if k < 0 else protein[: k + 1]


def _bases(value: str, field: str, allow_empty: bool) -> str:
    text = value.strip().upper().replace("U", "T")
    if text in ("-", "."):
        text = ""
    if not text and not allow_empty:
        raise InputError(f"args.{field}: empty")
    bad = [ch for ch in text if ch not in "ACGT"]
    if bad:
        raise InputError(f"args.{field}: invalid base {bad[0]!r} (A, C, G, T only; '-' for "
                         "none)")
    return text


# ------------------------------------------------------------------ locating the CDS

def _minus(row: dict) -> bool:
    return row["strand"] == "-"


def _cds_from_row(row: dict):
    """(CDS, 3' flank, reference) of a gene-table row, its regions read from the staged FASTA.
    A minus-strand row's segments are plus-strand intervals as in GenBank's
    complement(join(s1,s2)): its CDS is the reverse complement of their join, and its 3'
    flank lies below the first segment."""
    from biotool.annotate.sequences import staged_reference

    ref = staged_reference(row["reference"])
    seqid = row["seqid"]
    joined = "".join(ref.fetch(seqid, a - 1, b) for a, b in row["segments"])
    if _minus(row):
        flank = ref.fetch(seqid, 0, row["segments"][0][0] - 1)
        return reverse_complement(joined), reverse_complement(flank), ref
    return joined, ref.fetch(seqid, row["segments"][-1][1]), ref


def _segments_5to3(row: dict):
    return reversed(row["segments"]) if _minus(row) else row["segments"]


def _genomic_to_cds(row: dict, position: int) -> int | None:
    """0-based CDS index of a 1-based genomic position, or None if it is not in the CDS."""
    offset = 0
    for a, b in _segments_5to3(row):
        if a <= position <= b:
            return offset + (b - position if _minus(row) else position - a)
        offset += b - a + 1
    return None


def _cds_to_genomic(row: dict, index: int) -> int:
    offset = 0
    for a, b in _segments_5to3(row):
        if index < offset + (b - a + 1):
            return b - (index - offset) if _minus(row) else a + index - offset
        offset += b - a + 1
    return row["segments"][0][0] if _minus(row) else row["segments"][-1][1]


def _edit_from_hgvs(text: str, cds: str) -> tuple[int, int, str]:
    m = _HGVS.match(text.strip())
    if not m:
        raise InputError(f"args.hgvs: {text!r} is not a coding HGVS change this tool reads "
                         "(c.123A>G, c.10del, c.10_12del, c.10_11insTT, c.10dup, "
                         "c.10_12delinsAT)")
    if max(len(m["a"]), len(m["b"] or "")) > 9:  # no CDS has a billion bases
        raise InputError(f"args.hgvs: {text[:40]}... is outside the CDS (c.1-c.{len(cds)})")
    a = int(m["a"])
    b = int(m["b"]) if m["b"] else a
    if not 1 <= a <= b <= len(cds):
        raise InputError(f"args.hgvs: {text} is outside the CDS (c.1-c.{len(cds)})")
    if m["ref"]:
        if cds[a - 1] != m["ref"]:
            raise InputError(f"args.hgvs: {text} says {m['ref']} at c.{a}, the CDS has "
                             f"{cds[a - 1]}")
        return a - 1, a, m["alt"]
    kind, seq = m["kind"], m["seq"]
    if kind == "del":
        return a - 1, b, ""
    if kind == "delins":
        if not seq:
            raise InputError("args.hgvs: delins needs the inserted bases")
        return a - 1, b, seq
    if kind == "dup":
        return b, b, cds[a - 1:b]
    if b != a + 1 or not seq:
        raise InputError("args.hgvs: an insertion is written between two adjacent bases with "
                         "its bases, e.g. c.10_11insTT")
    return a, a, seq


def _trim(cds: str, start: int, end: int, alt: str) -> tuple[int, int, str]:
    """Drop bases shared by ref and alt at either end (VCF padding)."""
    ref = cds[start:end]
    while ref and alt and ref[0] == alt[0]:
        ref, alt, start = ref[1:], alt[1:], start + 1
    while ref and alt and ref[-1] == alt[-1]:
        ref, alt, end = ref[:-1], alt[:-1], end - 1
    return start, end, alt


def _shift_3prime(cds: str, start: int, end: int, alt: str) -> tuple[int, int, str]:
    """HGVS 3' rule: move a pure deletion or insertion as far 3' as the sequence allows."""
    if alt == "" and end > start:
        while end < len(cds) and cds[start] == cds[end]:
            start, end = start + 1, end + 1
    elif start == end and alt:
        while start < len(cds) and alt[0] == cds[start]:
            alt = alt[1:] + cds[start]
            start = end = start + 1
    return start, end, alt


def _hgvs_c(cds: str, start: int, end: int, alt: str) -> tuple[str, str]:
    """(HGVS c. string, kind) of the normalised edit cds[start:end] -> alt."""
    ref = cds[start:end]
    if len(ref) == 1 and len(alt) == 1:
        return f"c.{start + 1}{ref}>{alt}", "substitution"
    span = f"{start + 1}" if end - start == 1 else f"{start + 1}_{end}"
    if not alt:
        return f"c.{span}del", "deletion"
    if not ref:
        n = len(alt)
        if start >= n and cds[start - n:start] == alt:
            dup = f"{start}" if n == 1 else f"{start - n + 1}_{start}"
            return f"c.{dup}dup", "duplication"
        return f"c.{start}_{start + 1}ins{alt}", "insertion"
    return f"c.{span}delins{alt}", "delins"


# ------------------------------------------------------------------ protein consequence

def _start_lost(cds: str, mutated: str) -> bool:
    """The initiation codon changed to anything but ATG: HGVS p.Met1? (an alternative start
    codon such as TTG may or may not be used; the consequence is unknown)."""
    return mutated[:3] != cds[:3] and mutated[:3] != "ATG"


def _protein_change(cds: str, flank: str, start: int, end: int, alt: str, table: int) -> dict:
    ref_prot = _to_stop(_translate(cds, table))
    mutated = cds[:start] + alt + cds[end:]
    delta = len(alt) - (end - start)
    shift = delta % 3
    mut_prot = _to_stop(_translate(mutated + flank, table))
    codon = start // 3  # 0-based codon of the first changed base
    out = {"codon_number": codon + 1}
    # The reference stop codon (0-based first base), whether the edit touches its bases, and
    # where it lands in the mutated protein when an in-frame edit before it leaves it intact:
    # deleting the last sense codon is p.Gly4del, not a nonsense change, and inserting before
    # the stop is p.Gly4_Ter5insLys, not a stop loss.
    ref_stop = 3 * (len(ref_prot) - 1) if ref_prot.endswith("*") else None
    touches_stop = ref_stop is not None and (
        ref_stop < start < ref_stop + 3 if start == end else
        start < ref_stop + 3 and end > ref_stop)
    kept_stop = ((ref_stop + delta) // 3 if ref_stop is not None and not touches_stop
                 and not shift and start <= ref_stop else None)
    if len(alt) == end - start == 1:
        ref_codon = cds[3 * codon:3 * codon + 3]
        alt_codon = mutated[3 * codon:3 * codon + 3]
        out.update(codon_change=f"{ref_codon}>{alt_codon}", position_in_codon=start % 3 + 1)
    i = next((k for k in range(min(len(ref_prot), len(mut_prot)))
              if ref_prot[k] != mut_prot[k]), None)
    if i is None and len(ref_prot) == len(mut_prot):
        aa = ref_prot[codon] if codon < len(ref_prot) else "*"
        if codon == 0 and _start_lost(cds, mutated):
            return {**out, "effect": "start_lost", "hgvs_p": "p.Met1?",
                    "protein_note": "the start codon is lost; where translation starts is "
                    "unknown"}
        if aa == "*" and touches_stop:
            return {**out, "effect": "synonymous", "so_term": "stop_retained_variant",
                    "hgvs_p": f"p.Ter{codon + 1}="}
        return {**out, "effect": "synonymous", "hgvs_p": f"p.{_aa3(aa)}{codon + 1}="}
    if i is None:
        i = min(len(ref_prot), len(mut_prot))
    if start < 3 and _start_lost(cds, mutated):
        return {**out, "effect": "start_lost", "hgvs_p": "p.Met1?",
                "protein_note": "the start codon is lost; where translation starts is unknown"}
    ref_aa = ref_prot[i] if i < len(ref_prot) else "*"
    new_stop = mut_prot.find("*", i)
    if ref_aa == "*" and kept_stop is None:  # the stop codon itself changed to a sense codon
        # extTerN counts codons after the original stop (HGVS "*N"), unlike fsTerN.
        ext = f"Ter{new_stop - i}" if new_stop >= 0 else "Ter?"
        alt_aa = mut_prot[i] if i < len(mut_prot) else "X"
        return {**out, "effect": "stop_lost", "hgvs_p": f"p.Ter{i + 1}{_aa3(alt_aa)}ext{ext}"}
    if shift:
        if i < len(mut_prot) and mut_prot[i] == "*":
            return {**out, "effect": "frameshift", "hgvs_p": f"p.{_aa3(ref_aa)}{i + 1}Ter",
                    "stop_gained": True, "new_stop_found": True}
        alt_aa = mut_prot[i] if i < len(mut_prot) else "X"
        ter = f"Ter{new_stop - i + 1}" if new_stop >= 0 else "Ter?"
        return {**out, "effect": "frameshift",
                "hgvs_p": f"p.{_aa3(ref_aa)}{i + 1}{_aa3(alt_aa)}fs{ter}",
                "new_stop_found": new_stop >= 0}
    # In frame: find what was deleted and inserted between the common prefix and suffix.
    if i < len(mut_prot) and mut_prot[i] == "*" and i != kept_stop:
        return {**out, "effect": "nonsense", "hgvs_p": f"p.{_aa3(ref_aa)}{i + 1}Ter"}
    j = 0
    while (j < len(ref_prot) - i and j < len(mut_prot) - i
           and ref_prot[-1 - j] == mut_prot[-1 - j]):
        j += 1
    deleted = ref_prot[i:len(ref_prot) - j]
    inserted = mut_prot[i:len(mut_prot) - j]
    first = f"{_aa3(ref_prot[i])}{i + 1}"
    last = f"{_aa3(deleted[-1])}{i + len(deleted)}" if deleted else ""
    span = first if len(deleted) <= 1 else f"{first}_{last}"
    if len(deleted) == len(inserted) == 1:
        return {**out, "effect": "missense",
                "hgvs_p": f"p.{first}{_aa3(inserted)}"}
    if not inserted:
        return {**out, "effect": "inframe_indel", "so_term": "inframe_deletion",
                "hgvs_p": f"p.{span}del"}
    if not deleted:
        n = len(inserted)
        if i >= n and ref_prot[i - n:i] == inserted:
            dup = (f"{_aa3(inserted)}{i}" if n == 1 else
                   f"{_aa3(inserted[0])}{i - n + 1}_{_aa3(inserted[-1])}{i}")
            return {**out, "effect": "inframe_indel", "so_term": "inframe_insertion",
                    "hgvs_p": f"p.{dup}dup"}
        return {**out, "effect": "inframe_indel", "so_term": "inframe_insertion",
                "hgvs_p": f"p.{_aa3(ref_prot[i - 1])}{i}_{_aa3(ref_prot[i])}{i + 1}"
                          f"ins{_aa3(inserted)}"}
    effect = "missense" if len(alt) == end - start else "inframe_indel"
    return {**out, "effect": effect,
            "so_term": "missense_variant" if effect == "missense" else "delins",
            "hgvs_p": f"p.{span}delins{_aa3(inserted)}"}


def annotate_on_cds(cds: str, flank: str, start: int, end: int, alt: str, table: int = 1,
                    gene: str | None = None) -> dict:
    """Annotate the edit cds[start:end] -> alt (0-based, half-open) on one CDS."""
    start, end, alt = _trim(cds, start, end, alt)
    if start == end and not alt:
        raise InputError("args.alt: the same as the reference; nothing changes")
    start, end, alt = _shift_3prime(cds, start, end, alt)
    hgvs_c, kind = _hgvs_c(cds, start, end, alt)
    change = _protein_change(cds, flank, start, end, alt, table)
    change.setdefault("so_term", SO_TERM.get(change["effect"], change["effect"]))
    ref = cds[start:end]
    prefix = f"{gene}:" if gene else ""
    out = {"hgvs_c": hgvs_c, "hgvs_p": change.pop("hgvs_p"), "effect": change.pop("effect"),
           "kind": kind, "cds_start": start + 1, "cds_end": max(start + 1, end),
           "ref": ref or "-", "alt": alt or "-", **change}
    out["hgvs"] = f"{prefix}{out['hgvs_c']} ({out['hgvs_p']})"
    out["hgvs_p_short"] = _short_p(out["hgvs_p"])
    out["in_frame"] = (len(alt) - len(ref)) % 3 == 0
    return out


_THREE_TO_ONE = {v: k for k, v in THREE.items()}


def _short_p(p: str) -> str:
    out = p
    for three, one in sorted(_THREE_TO_ONE.items(), key=lambda kv: -len(kv[0])):
        out = out.replace(three, one)
    return out


# ------------------------------------------------------------------ the tool

def _edit_from_args(args: arguments.VariantAnnotate, cds: str,
                    row: dict | None) -> tuple[int, int, str]:
    given = [k for k in ("hgvs", "cds_position", "position") if getattr(args, k) is not None]
    if len(given) != 1:
        raise InputError("args.hgvs: give exactly one of hgvs, cds_position (+ ref/alt) or "
                         "position (genomic, + ref/alt)")
    if given[0] == "hgvs":
        return _edit_from_hgvs(args.hgvs, cds)
    if args.alt is None:
        raise InputError("args.alt: required with cds_position or position")
    alt = _bases(args.alt, "alt", allow_empty=True)
    ref = _bases(args.ref, "ref", allow_empty=True) if args.ref is not None else None
    if given[0] == "position" and _genomic_to_cds(row, args.position) is None:
        span = ", ".join(f"{a}-{b}" for a, b in row["segments"])
        raise InputError(f"args.position: {args.position} is outside the CDS of "
                         f"{row['symbol']} ({row['seqid']}:{span}); give a position inside "
                         "it, or reference + position without gene")
    if given[0] == "cds_position":
        pos = args.cds_position
        if not 1 <= pos <= len(cds):
            raise InputError(f"args.cds_position: {pos} is outside the CDS (1-{len(cds)})")
        start = pos - 1
    elif _minus(row):
        # ref and alt are on the reference's plus strand (as in a VCF): on a minus-strand CDS
        # the edit covers genomic position..position+len(ref)-1 read backwards.
        pos = args.position
        if ref is None:
            ref = reverse_complement(cds[_genomic_to_cds(row, pos)]) if alt and len(alt) == 1 else ""
            if not alt:
                raise InputError("args.ref: a deletion needs the deleted bases in ref")
        alt = reverse_complement(alt)
        if ref == "":  # an insertion after `position`: before its base in CDS order
            at = _genomic_to_cds(row, pos)
            return at, at, alt
        start = _genomic_to_cds(row, pos + len(ref) - 1)
        if start is None or cds[start:start + len(ref)] != reverse_complement(ref):
            raise InputError(f"args.ref: {ref} does not match the reference at position "
                             f"{pos} of the minus-strand CDS {row['symbol']}")
        return start, start + len(ref), alt
    else:
        start = _genomic_to_cds(row, args.position)
    if ref is None:
        ref = cds[start] if alt and len(alt) == 1 else ""
        if not alt:
            raise InputError("args.ref: a deletion needs the deleted bases in ref")
    if ref == "":  # an insertion after this position
        return start + 1, start + 1, alt
    if cds[start:start + len(ref)] != ref:
        where = (f"c.{start + 1}" if given[0] == "cds_position" else
                 f"position {args.position}")
        raise InputError(f"args.ref: {ref} does not match the reference "
                         f"{cds[start:start + len(ref)] or '(end of CDS)'} at {where}")
    return start, start + len(ref), alt


def variant_annotate(args: arguments.VariantAnnotate) -> dict:
    from biotool.annotate import genes
    from biotool.annotate.sequences import clean

    table = args.table
    used = []
    spots = list(MODEL_BLIND_SPOTS)
    if args.cds_sequence is not None:
        if args.gene or args.position is not None:
            raise InputError("args.cds_sequence: give either cds_sequence or gene/position, "
                             "not both")
        cds = clean(args.cds_sequence, "cds_sequence").replace("U", "T")
        if set(cds) - set("ACGT"):
            raise InputError("args.cds_sequence: ambiguous bases; the CDS must be A/C/G/T")
        flank = clean(args.flank_3prime, "flank_3prime") if args.flank_3prime else ""
        if len(cds) % 3:
            spots.append(f"the given CDS length {len(cds)} is not a multiple of 3")
        start, end, alt = _edit_from_args(args, cds, None)
        ann = annotate_on_cds(cds, flank, start, end, alt, table)
        if ann["effect"] == "frameshift" and not ann.get("new_stop_found"):
            spots.append("no new stop codon within the given CDS and 3' flank: fsTer?")
        result = {"source": "given cds_sequence", "annotations": [ann]}
        result["competence"] = bounded(0.95, 1.0, blind_spots=spots)
        result["provenance"] = provenance()
        return result

    rows_all, prov = genes.rows()
    used.append(prov)
    if args.gene:
        hits, how, _, _ = genes.find(args.gene, args.reference)
        if not hits:
            raise InputError(f"args.gene: no gene {args.gene!r} in the staged gene table "
                             "(try gene_lookup)")
        if len(hits) > 1:
            where = ", ".join(f"{h['reference']}:{h['seqid']}" for h in hits)
            raise InputError(f"args.gene: {args.gene!r} is ambiguous ({len(hits)} records: "
                             f"{where}); add reference or use a gene ID")
        candidates = hits
    elif args.position is not None:
        if not args.reference:
            raise InputError("args.reference: required with a genomic position")
        from biotool.annotate.sequences import staged_reference

        ref = staged_reference(args.reference)
        contigs = ref.contigs()
        seqid = args.seqid or (next(iter(contigs)) if len(contigs) == 1 else None)
        if seqid not in contigs:
            raise InputError(f"args.seqid: name one of {', '.join(contigs)} of {ref.name}")
        if not 1 <= args.position <= contigs[seqid]:
            raise InputError(f"args.position: {args.position} is outside {seqid} "
                             f"(1-{contigs[seqid]})")
        candidates = [r for r in rows_all if r["reference"] == ref.name
                      and r["seqid"] == seqid and _genomic_to_cds(r, args.position) is not None]
        if not candidates:
            ref_base = ref.fetch(seqid, args.position - 1, args.position)
            return {"source": f"{ref.name}:{seqid}", "position": args.position,
                    "ref_base": ref_base, "effect": "non_coding", "annotations": [],
                    "competence": not_applicable(
                        f"position {args.position} of {seqid} is outside every annotated "
                        "CDS (UTR, intergenic, or a gene the table does not hold)",
                        remedy="no protein consequence to predict; check gene_lookup for the "
                        "genes of this reference"),
                    "provenance": provenance(prov, used_item("reference", ref.name,
                                                             ref.sha256))}
    else:
        raise InputError("args.gene: give gene (symbol or ID), or reference + position, or "
                         "cds_sequence")

    annotations, ref_used = [], {}
    for row in candidates:
        if row["strand"] not in ("+", "-"):
            spots.append(f"{row['symbol']}: strand {row['strand']!r} unknown; not annotated")
            continue
        cds, flank, ref = _cds_from_row(row)
        ref_used[ref.name] = ref
        start, end, alt = _edit_from_args(args, cds, row)
        ann = annotate_on_cds(cds, flank, start, end, alt, table, gene=row["symbol"])
        ann.update(gene=row["symbol"], gene_id=row["gene_id"] or None,
                   protein_id=row["protein_id"] or None, reference=row["reference"],
                   seqid=row["seqid"], strand=row["strand"],
                   genomic_position=_cds_to_genomic(row, ann["cds_start"] - 1))
        if len(row["segments"]) > 1:
            spots.append(f"{row['symbol']}: CDS of {len(row['segments'])} segments "
                         "(splicing or ribosomal frameshift) taken as annotated")
        if ann["effect"] == "frameshift" and not ann.get("new_stop_found"):
            spots.append(f"{row['symbol']}: no new stop before the end of {row['seqid']}")
        annotations.append(ann)
    used += [used_item("reference", r.name, r.sha256) for r in ref_used.values()]
    n = len(annotations)
    if n > 1:
        spots.append(f"the position lies in {n} overlapping CDS; each is annotated")
    return {"source": ", ".join(sorted(ref_used)) or "gene table",
            "annotations": annotations, "count": n,
            "competence": bounded(0.95 if n else 0.0, 1.0 if n <= 1 else 0.5,
                                  alternatives=max(0, n - 1), blind_spots=spots,
                                  applicable=bool(n)),
            "provenance": provenance(*used)}
