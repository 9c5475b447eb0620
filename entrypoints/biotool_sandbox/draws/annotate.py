"""Annotation draws (`biotool call`): a planted ORF, planted restriction sites, an SNV in a
SARS-CoV-2 CDS. Each truth is computed here from what was planted, with this module's own
genetic code and site table, never through biotool's annotator: the oracle then tests it."""

from __future__ import annotations

import random
from pathlib import Path

from biotool_sandbox.draws import common
from biotool_sandbox.draws.common import (BASES, mutate, reverse_complement, staged_reference,
                                          write_fasta)

# The standard genetic code (NCBI table 1), codons in TCAG order.
_ORDER = "TCAG"
_AMINO = "FFLLSSSSYY**CC*WLLLLPPPPHHQQRRRRIIIMTTTTNNKKSSRRVVVVAAAADDEEGGGG"
CODE = {a + b + c: _AMINO[16 * i + 4 * j + k]
        for i, a in enumerate(_ORDER) for j, b in enumerate(_ORDER) for k, c in enumerate(_ORDER)}
STOPS = frozenset(c for c, aa in CODE.items() if aa == "*")
SENSE = tuple(sorted(c for c, aa in CODE.items() if aa != "*"))
THREE = {"A": "Ala", "R": "Arg", "N": "Asn", "D": "Asp", "C": "Cys", "Q": "Gln", "E": "Glu",
         "G": "Gly", "H": "His", "I": "Ile", "L": "Leu", "K": "Lys", "M": "Met", "F": "Phe",
         "P": "Pro", "S": "Ser", "T": "Thr", "W": "Trp", "Y": "Tyr", "V": "Val", "*": "Ter"}


def translate(seq: str) -> str:
    """The standard-code translation of seq's whole codons ('*' for a stop)."""
    return "".join(CODE[seq[i:i + 3]] for i in range(0, len(seq) - len(seq) % 3, 3))


# ------------------------------------------------------------------ orf-drawn

SEQUENCE_LENGTH = (1500, 3000)
ORF_CODONS = (100, 300)  # sense codons after the ATG, the stop not counted
OTHER_ORF_MAX_AA = 60  # every other ORF stays shorter than this: the planted one is plain
# A/T-rich background (stops TAA/TAG/TGA and their reverse complements are A/T-rich) keeps
# chance ORFs short in all six frames; the repair loop removes what is left.
BACKGROUND_WEIGHTS = {"A": 3, "C": 2, "G": 2, "T": 3}
REPAIRS = 5000


def orfs(seq: str) -> list[dict]:
    """Every ORF of seq in find_orfs's convention: in each frame of each strand, from the
    first ATG after a stop (or the frame's start) to the next stop, or to the frame's last
    whole codon when none; start/end 1-based inclusive on the plus strand, stop included;
    `codon` is the ATG's plus-strand 0-based positions."""
    n, out = len(seq), []
    for strand, text in (("+", seq), ("-", reverse_complement(seq))):
        for frame in range(3):
            opened, i = None, frame
            while i + 3 <= n:
                codon = text[i:i + 3]
                if opened is None and codon == "ATG":
                    opened = i
                elif opened is not None and codon in STOPS:
                    out.append(_orf(strand, n, opened, i + 3, (i - opened) // 3, True))
                    opened = None
                i += 3
            if opened is not None:
                out.append(_orf(strand, n, opened, i, (i - opened) // 3, False))
    return out


def _orf(strand: str, n: int, first: int, past: int, aa: int, complete: bool) -> dict:
    if strand == "+":
        start, end, codon = first + 1, past, range(first, first + 3)
    else:
        start, end, codon = n - past + 1, n - first, range(n - first - 3, n - first)
    return {"strand": strand, "start": start, "end": end, "length_aa": aa,
            "complete": complete, "codon": list(codon)}


def _background(rng: random.Random, n: int) -> list[str]:
    return rng.choices(list(BACKGROUND_WEIGHTS), weights=list(BACKGROUND_WEIGHTS.values()), k=n)


def _sense_codon(rng: random.Random) -> str:
    """A sense codon, weighted like the background so the ORF's other frames stay short."""
    weights = [BACKGROUND_WEIGHTS[a] * BACKGROUND_WEIGHTS[b] * BACKGROUND_WEIGHTS[c]
               for a, b, c in SENSE]
    return rng.choices(SENSE, weights=weights)[0]


def _assemble(background: list[str], at: int, codons: list[str], strand: str) -> str:
    orf = "".join(codons)
    if strand == "-":
        orf = reverse_complement(orf)
    return "".join(background[:at]) + orf + "".join(background[at + len(orf):])


def _plant_orf(rng: random.Random, length: int, sense: int, strand: str):
    """(sequence, ORF start 0-based) with one ORF of `sense` codons and every other ORF
    shorter than OTHER_ORF_MAX_AA, else None after REPAIRS repairs. A repair breaks the start
    codon of an offending ORF (a longer one through the planted stop included): a background
    base is changed, or a sense codon of the planted ORF redrawn."""
    codons = ["ATG", *(_sense_codon(rng) for _ in range(sense)), rng.choice(sorted(STOPS))]
    span = 3 * len(codons)
    at = rng.randrange(30, length - span - 30)
    background = _background(rng, length)
    want = (strand, at + 1, at + span, sense + 1, True)  # length_aa counts the Met
    for _ in range(REPAIRS):
        seq = _assemble(background, at, codons, strand)
        found = orfs(seq)
        shape = [(o["strand"], o["start"], o["end"], o["length_aa"], o["complete"]) for o in found]
        offending = [o for o, s in zip(found, shape) if o["length_aa"] >= OTHER_ORF_MAX_AA
                     and s != want]
        if not offending and want in shape:
            return seq, at
        for orf in offending:
            pos = rng.choice([p for p in orf["codon"] if not _fixed(p, at, span, strand)])
            if at <= pos < at + span:
                offset = pos - at if strand == "+" else at + span - 1 - pos
                codons[offset // 3] = _sense_codon(rng)
            else:
                background[pos] = mutate(rng, background[pos])
    return None


def _fixed(pos: int, at: int, span: int, strand: str) -> bool:
    """Whether plus-strand position pos is in the planted ORF's ATG or stop codon."""
    if not at <= pos < at + span:
        return False
    offset = pos - at if strand == "+" else at + span - 1 - pos
    return offset < 3 or offset >= span - 3


def orf_drawn(rng: random.Random, public: Path) -> dict:
    """A random sequence of 1,500-3,000 bp holding one planted ORF (ATG, 100-300 sense codons,
    a stop) on a random strand, every other ORF under 60 codons: /task/sequence.fasta. The
    truth is the ORF in find_orfs's convention and its protein without the stop."""
    for _ in range(100):
        length = rng.randint(*SEQUENCE_LENGTH)
        sense = rng.randint(*ORF_CODONS)
        strand = rng.choice("+-")
        planted = _plant_orf(rng, length, sense, strand)
        if planted:
            break
    else:
        raise RuntimeError("no sequence free of chance ORFs in 100 tries")
    seq, at = planted
    span = 3 * (sense + 2)
    orf = seq[at:at + span]
    if strand == "-":
        orf = reverse_complement(orf)
    write_fasta(public / "sequence.fasta", [("sequence", seq)])
    return {"strand": strand, "start": at + 1, "end": at + span,
            "protein": translate(orf)[:-1]}


# ------------------------------------------------------------------ restriction-drawn

# Palindromic sites only (one strand searched finds both), and where the top strand is cut:
# the number of site bases before the cut (REBASE; Biopython's `fst5`).
ENZYMES = {"EcoRI": ("GAATTC", 1), "BamHI": ("GGATCC", 1), "HindIII": ("AAGCTT", 1),
           "NotI": ("GCGGCCGC", 2), "XhoI": ("CTCGAG", 1), "PstI": ("CTGCAG", 5),
           "SalI": ("GTCGAC", 1), "XbaI": ("TCTAGA", 1), "KpnI": ("GGTACC", 5),
           "SacI": ("GAGCTC", 5), "NcoI": ("CCATGG", 1), "NdeI": ("CATATG", 2),
           "SpeI": ("ACTAGT", 1), "NheI": ("GCTAGC", 1), "EcoRV": ("GATATC", 3),
           "SmaI": ("CCCGGG", 3), "ClaI": ("ATCGAT", 2), "BglII": ("AGATCT", 1),
           "MluI": ("ACGCGT", 1)}
RESTRICTION_LENGTH = (2000, 4000)
ENZYMES_DRAWN = 3  # fixed, so the answer's field names are: enzyme1_cuts..enzyme3_cuts
SITES_EACH = (2, 4)
SITE_GAP = 12  # bases at least between two planted sites and from either end


def occurrences(seq: str, site: str) -> list[int]:
    """0-based starts of every (overlapping) occurrence of site in seq."""
    out, i = [], seq.find(site)
    while i >= 0:
        out.append(i)
        i = seq.find(site, i + 1)
    return out


def _place(rng: random.Random, length: int, sizes: list[int]) -> list[int]:
    """Random 0-based starts for sites of these sizes, SITE_GAP apart and from the ends."""
    for _ in range(1000):
        starts = []
        for size in sizes:
            at = rng.randrange(SITE_GAP, length - size - SITE_GAP)
            if all(at + size + SITE_GAP <= s or s + z + SITE_GAP <= at
                   for s, z in zip(starts, sizes)):
                starts.append(at)
            else:
                break
        if len(starts) == len(sizes):
            return starts
    raise RuntimeError("no room for the planted sites")


def restriction_drawn(rng: random.Random, public: Path) -> dict:
    """A random sequence of 2,000-4,000 bp with 2-4 planted sites of each of three enzymes
    drawn from ENZYMES and no other site of theirs: /task/sequence.fasta, the enzymes in
    /task/enzymes.txt. The truth, enzymeN_cuts, is each one's sorted top-strand cut positions
    as the 1-based position of the first base after the cut."""
    length = rng.randint(*RESTRICTION_LENGTH)
    names = rng.sample(sorted(ENZYMES), ENZYMES_DRAWN)
    planted = [name for name in names for _ in range(rng.randint(*SITES_EACH))]
    rng.shuffle(planted)
    starts = _place(rng, length, [len(ENZYMES[n][0]) for n in planted])
    seq = [rng.choice(BASES) for _ in range(length)]
    locked = set()
    for name, at in zip(planted, starts):
        site = ENZYMES[name][0]
        seq[at:at + len(site)] = site
        locked.update(range(at, at + len(site)))
    wanted = {(ENZYMES[n][0], at) for n, at in zip(planted, starts)}
    for _ in range(10000):
        text = "".join(seq)
        stray = [(ENZYMES[n][0], at) for n in names for at in occurrences(text, ENZYMES[n][0])
                 if (ENZYMES[n][0], at) not in wanted]
        if not stray:
            break
        for site, at in stray:
            free = [p for p in range(at, at + len(site)) if p not in locked]
            pos = rng.choice(free)
            seq[pos] = mutate(rng, seq[pos])
    else:
        raise RuntimeError("stray sites left after 10000 repairs")
    write_fasta(public / "sequence.fasta", [("sequence", "".join(seq))])
    (public / "enzymes.txt").write_text("".join(f"{n}\n" for n in names), encoding="ascii")
    return {f"enzyme{i}_cuts": sorted(at + 1 + ENZYMES[n][1]
                                      for m, at in zip(planted, starts) if m == n)
            for i, n in enumerate(names, 1)}


# ------------------------------------------------------------------ variant-annotate-drawn

VARIANT_REFERENCE = "MN908947.3"


def gene_rows(reference: str = VARIANT_REFERENCE) -> list[dict]:
    """The staged gene table's rows of the variant's reference."""
    return common.gene_rows(reference)


def _cds(row: dict, genome: str) -> str:
    """A single-segment CDS read on its strand."""
    (_, _), = row["segments"]
    return common.cds_sequence(row, genome)


def _cds_index(row: dict, position: int) -> int:
    """0-based CDS index of a 1-based genomic position of a single-segment CDS."""
    (a, b), = row["segments"]
    return b - position if row["strand"] == "-" else position - a


def eligible_positions(rows: list[dict], genome: str) -> list[tuple[int, dict]]:
    """(1-based position, row) of every base in exactly one annotated CDS, that CDS a single
    segment that translates cleanly (ATG, one stop at its end), outside its first and last
    codon (an SNV there is start or stop lost, not the three effects asked)."""
    cover: dict[int, int] = {}
    for row in rows:
        for a, b in row["segments"]:
            for p in range(a, b + 1):
                cover[p] = cover.get(p, 0) + 1
    out = []
    for row in rows:
        if len(row["segments"]) != 1 or row["strand"] not in ("+", "-"):
            continue
        cds = _cds(row, genome)
        if len(cds) % 3 or set(cds) - set(BASES) or not cds.startswith("ATG") \
                or translate(cds).find("*") != len(cds) // 3 - 1:
            continue
        (a, b), = row["segments"]
        out += [(p, row) for p in range(a, b + 1)
                if cover[p] == 1 and 3 <= _cds_index(row, p) < len(cds) - 3]
    return out


def snv_consequence(cds: str, index: int, alt: str) -> dict:
    """hgvs_c, hgvs_p (three-letter; `=` when synonymous, `Ter` for a stop) and effect of the
    CDS base `index` (0-based) changed to `alt`, both read on the CDS's strand."""
    k = index // 3
    ref_codon = cds[3 * k:3 * k + 3]
    alt_codon = ref_codon[:index % 3] + alt + ref_codon[index % 3 + 1:]
    ref_aa, alt_aa = CODE[ref_codon], CODE[alt_codon]
    if alt_aa == ref_aa:
        effect, hgvs_p = "synonymous", f"p.{THREE[ref_aa]}{k + 1}="
    elif alt_aa == "*":
        effect, hgvs_p = "nonsense", f"p.{THREE[ref_aa]}{k + 1}Ter"
    else:
        effect, hgvs_p = "missense", f"p.{THREE[ref_aa]}{k + 1}{THREE[alt_aa]}"
    return {"hgvs_c": f"c.{index + 1}{cds[index]}>{alt}", "hgvs_p": hgvs_p, "effect": effect,
            "codon_change": f"{ref_codon}>{alt_codon}"}


def variant_annotate_drawn(rng: random.Random, public: Path) -> dict:
    """One random SNV at a base of exactly one single-segment SARS-CoV-2 CDS (not its start or
    stop codon): /task/variant.tsv (reference, 1-based position, plus-strand ref and alt).
    The truth is the gene and the HGVS c./p. and effect, from this module's genetic code."""
    seqid, genome = staged_reference(VARIANT_REFERENCE)
    rows = [r for r in gene_rows() if r["seqid"] == seqid]
    position, row = rng.choice(eligible_positions(rows, genome))
    ref = genome[position - 1]
    alt = mutate(rng, ref)
    on_cds = (lambda b: reverse_complement(b)) if row["strand"] == "-" else (lambda b: b)
    change = snv_consequence(_cds(row, genome), _cds_index(row, position), on_cds(alt))
    (public / "variant.tsv").write_text(f"{VARIANT_REFERENCE}\t{position}\t{ref}\t{alt}\n",
                                        encoding="ascii")
    return {"gene": row["symbol"], "hgvs_c": change["hgvs_c"], "hgvs_p": change["hgvs_p"],
            "effect": change["effect"]}
