"""Local sequence tools on Biopython: statistics, reverse complement, translation, ORFs,
pairwise alignment, primer Tm and restriction sites. Each takes its validated arguments model
(annotate/arguments.py) and returns a plain dict with `competence` and `provenance`."""

from __future__ import annotations

from biotool.annotate import arguments
from biotool.competence import bounded
from biotool.output import InputError
from biotool.provenance import provenance
from biotool.annotate.sequences import clean, resolve, reverse_complement

AMBIGUOUS_NOTE = "ambiguous IUPAC bases (N, R, Y...) cannot be read exactly"


def _ambiguous(seq: str) -> int:
    """IUPAC ambiguity codes in seq; U is RNA's T, a base read exactly."""
    return sum(1 for ch in seq if ch not in "ACGTU")


def _table(table_id: int) -> object:
    """Biopython's genetic code of an NCBI id; the model bounds it, Biopython knows the gaps."""
    from Bio.Data import CodonTable

    try:
        return CodonTable.unambiguous_dna_by_id[table_id]
    except KeyError:
        ids = ", ".join(str(i) for i in sorted(CodonTable.unambiguous_dna_by_id))
        raise InputError(f"args.table: unknown genetic code {table_id} (NCBI ids: {ids})") \
            from None


def seq_stats(args: arguments.SeqStats) -> dict:
    alphabet = args.alphabet
    seq, used = resolve(args.model_dump(), alphabet)
    out = {"length": len(seq), "alphabet": alphabet}
    counts = {ch: seq.count(ch) for ch in sorted(set(seq))}
    out["composition"] = counts
    spots, confidence, remedy = [], 1.0, ""
    if alphabet == "protein":
        from Bio.SeqUtils.ProtParam import ProteinAnalysis

        standard = "".join(ch for ch in seq if ch in "ACDEFGHIKLMNPQRSTVWY")
        if standard != seq:
            spots.append(f"{len(seq) - len(standard)} non-standard residues left out of mass, "
                         "pI and GRAVY")
            confidence = len(standard) / len(seq)
            remedy = "resolve ambiguous positions first"
        if standard:
            pa = ProteinAnalysis(standard)
            out.update(molecular_weight_da=round(pa.molecular_weight(), 2),
                       isoelectric_point=round(pa.isoelectric_point(), 2),
                       gravy=round(pa.gravy(), 4),
                       aromaticity=round(pa.aromaticity(), 4),
                       instability_index=round(pa.instability_index(), 2))
    else:
        from Bio.SeqUtils import gc_fraction, molecular_weight

        amb = _ambiguous(seq)
        known = len(seq) - amb
        out["ambiguous_bases"] = amb
        out["gc_fraction"] = round(gc_fraction(seq, ambiguous="ignore"), 6) if known else None
        if "U" in seq and "T" not in seq:
            out["alphabet"] = "rna"
        if amb:
            spots.append(f"{amb} {AMBIGUOUS_NOTE}; GC counts only A/C/G/T/U, no mass given")
            confidence = known / len(seq)
            remedy = "resolve ambiguous positions first"
        elif "U" in seq and "T" in seq:
            spots.append("both T and U present: neither DNA nor RNA, no mass given")
        else:
            out["molecular_weight_da"] = round(molecular_weight(
                seq, seq_type="RNA" if out["alphabet"] == "rna" else "DNA",
                double_stranded=args.double_stranded), 2)
        if set(seq) <= set("ACGTN") and len(seq) < 20:
            spots.append("a short sequence of A/C/G/T only could also be a peptide "
                         "(Ala, Cys, Gly, Thr); pass alphabet='protein' if it is one")
    out["competence"] = bounded(confidence, confidence, blind_spots=spots, remedy=remedy)
    out["provenance"] = provenance(*used)
    return out


def reverse_complement_tool(args: arguments.ReverseComplement) -> dict:
    seq, used = resolve(args.model_dump())
    rna = "U" in seq and "T" not in seq
    rc = reverse_complement(seq.replace("U", "T"))
    if rna:
        rc = rc.replace("T", "U")
    amb = _ambiguous(seq)
    return {"length": len(seq), "reverse_complement": rc,
            "competence": bounded(1.0, 1.0, blind_spots=[
                f"{amb} ambiguous bases complemented by IUPAC rules"] if amb else []),
            "provenance": provenance(*used)}


def _in_frame(seq: str, frame: int) -> str:
    strand = seq if frame > 0 else reverse_complement(seq)
    sub = strand[abs(frame) - 1:]
    return sub[: len(sub) - len(sub) % 3]


def translate(args: arguments.Translate) -> dict:
    from Bio.Seq import Seq

    seq, used = resolve(args.model_dump())
    seq = seq.replace("U", "T")
    table = _table(args.table)
    frames = ([1, 2, 3, -1, -2, -3] if args.frame == "all" else
              [args.frame] if isinstance(args.frame, int) else args.frame)
    rows, spots = [], []
    for frame in frames:
        codons = _in_frame(seq, frame)
        protein = str(Seq(codons).translate(table=table.id, to_stop=args.to_stop))
        stops = [i + 1 for i, aa in enumerate(protein) if aa == "*"]
        rows.append({"frame": frame, "protein": protein, "length_aa": len(protein),
                     "stop_positions": stops,
                     "starts_with_start_codon": codons[:3] in table.start_codons,
                     "unknown_residues": protein.count("X")})
    unknown = sum(r["unknown_residues"] for r in rows)
    if unknown:
        spots.append(f"{unknown} codons with ambiguous bases translated as X")
    if (len(seq) - (abs(frames[0]) - 1)) % 3:
        spots.append("trailing bases that do not fill a codon are not translated")
    return {"table": {"id": table.id, "names": table.names}, "frames": rows,
            "competence": bounded(1.0 if not unknown else 0.8, 1.0, blind_spots=spots),
            "provenance": provenance(*used)}


def find_orfs(args: arguments.FindOrfs) -> dict:
    from Bio.Seq import Seq

    seq, used = resolve(args.model_dump())
    seq = seq.replace("U", "T")
    table = _table(args.table)
    min_aa = args.min_protein_length
    starts = {"ATG"} if args.start_codons == "ATG" else set(table.start_codons)
    n = len(seq)
    orfs = []
    for frame in (1, 2, 3, -1, -2, -3):
        codons = _in_frame(seq, frame)
        protein = str(Seq(codons).translate(table=table.id))
        i = 0
        while i < len(protein):
            if codons[3 * i:3 * i + 3] in starts:
                stop = protein.find("*", i)
                complete = stop >= 0
                end = stop if complete else len(protein)
                if (end - i) >= min_aa and (complete or not args.require_stop):
                    nt_from = abs(frame) - 1 + 3 * i  # 0-based on the strand read
                    nt_to = abs(frame) - 1 + 3 * (end + (1 if complete else 0))  # exclusive
                    if frame > 0:
                        start_1, end_1 = nt_from + 1, nt_to
                    else:
                        start_1, end_1 = n - nt_to + 1, n - nt_from
                    orfs.append({"strand": "+" if frame > 0 else "-", "frame": frame,
                                 "start": start_1, "end": end_1,
                                 "length_nt": nt_to - nt_from, "length_aa": end - i,
                                 "complete": complete, "protein": protein[i:end]})
                i = end + 1  # nested ATGs in the same ORF are not separate ORFs
            else:
                i += 1
    orfs.sort(key=lambda o: (-o["length_aa"], o["start"]))
    limit = args.max_orfs
    spots = ["no splicing, ribosomal frameshifts or readthrough are modelled",
             "ORFs are found on both strands independently; overlapping ones are all listed"]
    if any(not o["complete"] for o in orfs):
        spots.append("ORFs running off the end of the sequence are marked complete=false")
    top = orfs[0]["length_aa"] if orfs else 0
    second = orfs[1]["length_aa"] if len(orfs) > 1 else 0
    return {"table": table.id, "min_protein_length": min_aa, "count": len(orfs),
            "orfs": orfs[:limit], "truncated": len(orfs) > limit,
            "competence": bounded(1.0 if orfs else 0.5,
                                  (top - second) / top if top else 0.0,
                                  alternatives=max(0, len(orfs) - 1),
                                  ties=sum(1 for o in orfs[1:] if o["length_aa"] == top),
                                  blind_spots=spots,
                                  remedy="" if orfs else "lower min_protein_length or check "
                                  "the genetic code"),
            "provenance": provenance(*used)}


def align_pairwise(args: arguments.AlignPairwise) -> dict:
    from Bio import Align
    from Bio.Align import substitution_matrices

    molecule = args.molecule
    a = clean(args.seq_a, "seq_a", molecule)
    b = clean(args.seq_b, "seq_b", molecule)
    aligner = Align.PairwiseAligner()
    aligner.mode = args.mode
    if molecule == "protein":
        aligner.substitution_matrix = substitution_matrices.load("BLOSUM62")
        aligner.open_gap_score, aligner.extend_gap_score = -11, -1
    else:
        aligner.match_score, aligner.mismatch_score = args.match, args.mismatch
        aligner.open_gap_score, aligner.extend_gap_score = args.gap_open, args.gap_extend
    if len(a) * len(b) > 25_000_000:
        raise InputError("args.seq_b: sequences too long for an exact pairwise alignment here "
                         f"({len(a)} x {len(b)}); use `biotool` read mapping or BLAST")
    alignments = aligner.align(a, b)
    best = alignments[0]
    # Count co-optimal alignments up to a cap: several equally good ones mean the gap
    # placement shown is one choice among many.
    co_optimal = 0
    for _ in alignments:
        co_optimal += 1
        if co_optimal >= 100:
            break
    counts = best.counts()
    aligned = counts.identities + counts.mismatches
    length = aligned + counts.gaps
    text = str(best)
    max_text = 4000
    return {"mode": aligner.mode, "molecule": molecule, "score": best.score,
            "identities": counts.identities, "mismatches": counts.mismatches,
            "gaps": counts.gaps, "alignment_length": length,
            "identity": round(counts.identities / length, 6) if length else 0.0,
            "coordinates": best.coordinates.tolist(),
            "alignment": text[:max_text], "alignment_truncated": len(text) > max_text,
            "co_optimal_alignments": co_optimal if co_optimal < 100 else ">=100",
            "competence": bounded(1.0 / co_optimal, 1.0 if co_optimal == 1 else 0.0,
                                  ties=co_optimal - 1,
                                  blind_spots=["gap placement is one of several equally "
                                               "scoring choices"] if co_optimal > 1 else [],
                                  remedy="report positions from `coordinates` with that caveat"
                                  if co_optimal > 1 else ""),
            "provenance": provenance()}


def primer_tm(args: arguments.PrimerTm) -> dict:
    from Bio.SeqUtils import MeltingTemp as mt, gc_fraction

    seq = clean(args.sequence, "sequence")
    amb = _ambiguous(seq)
    if amb:
        raise InputError(f"args.sequence: {amb} ambiguous bases; nearest-neighbour Tm needs "
                         "A/C/G/T only (resolve them or give one primer per variant)")
    if "U" in seq:
        raise InputError("args.sequence: holds U; the nearest-neighbour tables here are for DNA "
                         "primers (A/C/G/T only)")
    na, mg, dntps, nm = args.na_mM, args.mg_mM, args.dntps_mM, args.primer_nM
    tm_nn = mt.Tm_NN(seq, Na=na, Mg=mg, dNTPs=dntps, dnac1=nm, dnac2=0)
    tm_gc = mt.Tm_GC(seq, Na=na, Mg=mg, dNTPs=dntps)
    tm_wallace = mt.Tm_Wallace(seq)
    spots = ["secondary structure, self-dimers and mismatched templates are not modelled"]
    if len(seq) > 60:
        spots.append("nearest-neighbour tables are calibrated on oligos up to ~60 nt")
    if len(seq) < 12:
        spots.append("very short oligos: Tm is an extrapolation")
    spread = max(tm_nn, tm_gc, tm_wallace) - min(tm_nn, tm_gc, tm_wallace)
    return {"length": len(seq), "gc_fraction": round(gc_fraction(seq), 4),
            "tm_nearest_neighbor_c": round(tm_nn, 2), "tm_gc_c": round(tm_gc, 2),
            "tm_wallace_c": round(tm_wallace, 2),
            "conditions": {"na_mM": na, "mg_mM": mg, "dntps_mM": dntps, "primer_nM": nm,
                           "table": "DNA_NN3 (Allawi & SantaLucia 1997)"},
            "competence": bounded(0.9 if 12 <= len(seq) <= 60 else 0.6,
                                  max(0.0, 1 - spread / 20), blind_spots=spots,
                                  remedy="trust tm_nearest_neighbor_c; the other two show "
                                  "the spread between methods"),
            "provenance": provenance()}


COMMON_ENZYMES = ["EcoRI", "BamHI", "HindIII", "NotI", "XhoI", "PstI", "SalI", "XbaI", "NcoI",
                  "NdeI", "KpnI", "SacI", "SmaI", "EcoRV", "BglII", "SpeI", "NheI", "ApaI",
                  "ClaI", "MluI", "AgeI", "AvrII", "BsaI", "BsmBI", "DpnI", "MspI", "HaeIII",
                  "AluI", "TaqI", "Sau3AI"]


def restriction_sites(args: arguments.RestrictionSites) -> dict:
    from Bio import Restriction
    from Bio.Seq import Seq

    seq, used = resolve(args.model_dump())
    wanted = args.enzymes
    if wanted == "commercial":
        batch = Restriction.RestrictionBatch(Restriction.CommOnly)
    elif wanted == "all":
        batch = Restriction.RestrictionBatch(Restriction.AllEnzymes)
    else:
        names = COMMON_ENZYMES if wanted == "common" else wanted
        batch = Restriction.RestrictionBatch()
        for i, name in enumerate(names):
            try:
                batch.add(name)
            except ValueError:
                raise InputError(f"args.enzymes[{i}]: unknown enzyme {name!r} (REBASE names, "
                                 "e.g. EcoRI, BsaI)") from None
    linear = args.linear
    hits = batch.search(Seq(seq.replace("U", "T")), linear=linear)
    enzymes = []
    for enz in sorted(hits, key=str):
        cuts = sorted(hits[enz])
        enzymes.append({"enzyme": str(enz), "site": enz.elucidate(), "cuts": cuts,
                        "count": len(cuts)})
    cutters = [e for e in enzymes if e["count"]]
    amb = _ambiguous(seq)
    spots = ["DNA methylation (Dam/Dcm/CpG) blocking a site is not modelled",
             "star activity and partial digestion are not modelled"]
    if amb:
        spots.append(f"{amb} {AMBIGUOUS_NOTE}: a site spanning them is neither found nor "
                     "ruled out")
    return {"linear": linear, "length": len(seq), "enzymes_searched": len(enzymes),
            "cutters": cutters,
            "non_cutters": [e["enzyme"] for e in enzymes if not e["count"]],
            "cut_position_convention": "1-based position of the first base after the cut on "
                                       "the top strand",
            "competence": bounded(1.0 if not amb else max(0.0, 1 - amb / len(seq)), 1.0,
                                  blind_spots=spots),
            "provenance": provenance(*used)}
