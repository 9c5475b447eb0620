"""What of a BLAST hit an agent may see, written once: identifiers out, types checked.

A hit's title and organism name are reduced to what taxonomy reads (organism and product
words, an influenza subtype such as "(H1N1)", "segment 4"): accession-, GI- and
version-shaped tokens, numbers of three digits or more, strain and isolate designations
("A/Puerto Rico/8/1934", "SARS-CoV-2/human/USA/CA-CDC-QDX.../2021", the word after
"isolate", "strain", "str." ...) and anything outside plain ASCII words are removed, since
any of them can name the source dataset's record. A word of letters and digits ("RaTG13",
"H37Rv", "PAO1", "K-12") is such a designation too, wherever it stands, unless its place says
it is taxonomy's or a product's: an influenza subtype, a numbered virus abbreviation
("HIV-1", "SARS-CoV-2"), a label after "segment", "type", "chromosome" ..., a virus's code
after a "...virus" word ("Enterovirus A71", "coronavirus OC43"), a phage's name after
"phage" ("phiX174"), a plasmid's after "plasmid" ("pPCP1"), or a gene's beside a product word
("ORF1ab polyprotein", "(PB2) gene", "protein p53"). Every other kept value must be of its
type (a number is a number, a strand is Plus or Minus), else it is dropped.

Used by biotool's own output (taxonomy/identify.public_hit) and by the egress gate's report
filter (image/egress/blastreply.py). No imports outside the standard library: the Dockerfile
copies this file into the egress image too (/usr/local/lib/egress/biotool/hittext.py).
"""

from __future__ import annotations

import math
import re

MAX_TEXT = 200   # characters of a reduced title or name
MAX_WORDS = 40   # words of one
MAX_WORD = 32    # longer "words" are codes, not words
# Words after which the next word is a designation of one sample, never taxonomy.
DESIGNATORS = frozenset({"isolate", "strain", "str.", "substr.", "clone", "voucher", "specimen",
                         "culture", "cultivar", "cv.", "breed", "ecotype", "bioproject", "biosample",
                         "accession", "gi", "ref", "gb", "emb", "dbj"})
_SUBTYPE = re.compile(r"\(H\d{1,2}(?:N\d{1,2})?\)", re.I)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+\-]*\.?")  # letters, digits, ' + - and a final '.'
_LONG_NUMBER = re.compile(r"\d{5,}")   # accession and GI shapes carry five digits or more
_BARE = re.compile(r"\d{3,}\.?")        # a bare number of three digits or more
_EDGE = "()[],;:"
_NUMBERED = ("segment", "chromosome", "type", "serotype", "subtype", "genotype", "biovar", "group",
             "serogroup")
STRANDS = ("Plus", "Minus")
# A word of letters and digits is a designation unless one of these says what it names.
_MIXED = re.compile(r"(?=.*[A-Za-z])(?=.*\d)")
_BARE_SUBTYPE = re.compile(r"H\d{1,2}N\d{1,2}", re.I)                # "H5N1" without parentheses
_LABEL = re.compile(r"\d{1,2}[A-Za-z]{0,2}|[A-Za-z]{1,2}\d{1,2}[A-Za-z]?")  # "1b", "19F", "2L", "O1"
# The code of a virus species: a type ("A71", "D68", "6B") or a human coronavirus's name.
_VIRUS_CODE = r"[A-Z]\d{1,2}|\d{1,2}[A-Z]|229E|OC43|NL63|HKU\d{1,2}|phi[A-Z]?\d{1,3}"
_VIRUS_AFTER = re.compile(_VIRUS_CODE)
# A virus's abbreviation with its number ("HIV-1", "SARS-CoV-2", "EV-A71", "HCoV-OC43"); the
# abbreviations are listed, since a code such as "WIV1" or "PA-14" has the same shape.
_VIRUS_ABBREVIATION = re.compile(r"(?:HIV|SIV|HTLV|HSV|HHV|HPV|HCoV|SARS-CoV|EV|CV|HRV|HPIV|"
                                 r"HAdV|DENV|PRRSV)-(?:\d{1,2}|" + _VIRUS_CODE + ")")
_PHAGE_NAME = re.compile(r"[A-Za-z]{1,4}\d{1,3}[A-Za-z]?")  # "phiX174", "T4", "MS2", "phi29"
_PLASMID_NAME = re.compile(r"p[A-Z][A-Za-z]{0,4}\d{1,2}")   # "pPCP1", "pMT1", "pUC19"
# Words beside which a word of letters and digits names a gene or its product.
_PRODUCTS = frozenset({"gene", "genes", "protein", "proteins", "polyprotein", "glycoprotein",
                       "polymerase", "mrna", "rrna", "trna", "ribosomal", "pseudogene"})


def _without_designations(text: str) -> str:
    """`text` with every parenthesised group that holds a '/' (a strain designation such as
    "(A/Puerto Rico/8/1934(H1N1))") replaced by the influenza subtype it names, if any."""
    out, i = [], 0
    while i < len(text):
        if text[i] != "(":
            out.append(text[i])
            i += 1
            continue
        depth, j = 0, i
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        group = text[i:j + 1]
        if "/" in group:
            sub = _SUBTYPE.findall(group)
            out.append(f" {sub[-1].upper()} " if sub else " ")
        else:
            out.append(group)
        i = j + 1
    return "".join(out)


def _keeps(core: str, previous: str, following: str) -> bool:
    if len(core) > MAX_WORD or not _WORD.fullmatch(core):
        return False  # '/', '|', '_', '=', non-ASCII, or a '.' inside (a version): not a word
    if core.lower() in DESIGNATORS or previous.lower() in DESIGNATORS:
        return False
    if _LONG_NUMBER.search(core) or _BARE.fullmatch(core):
        return False
    if core.rstrip(".").isdigit():
        # A small bare number is kept only where it names a segment, a type or a virus
        # ("segment 4", "coronavirus 2", "type 1"); elsewhere it counts or labels something.
        before = previous.lower()
        return before in _NUMBERED or before.endswith("virus")
    if _MIXED.match(core):
        return _names_taxon_or_product(core.rstrip("."), previous.lower(), following.lower())
    return True


def _names_taxon_or_product(word: str, before: str, after: str) -> bool:
    """Whether a word of letters and digits is taxonomy's or a product's by its place; if not,
    it is a designation of one sample ("RaTG13", "H37Rv", "PAO1", "K-12", "CO92")."""
    if _BARE_SUBTYPE.fullmatch(word) or _VIRUS_ABBREVIATION.fullmatch(word):
        return True
    if before in _NUMBERED:
        return bool(_LABEL.fullmatch(word))
    if before.endswith("phage"):
        return bool(_PHAGE_NAME.fullmatch(word))
    if before.endswith("virus"):
        return bool(_VIRUS_AFTER.fullmatch(word))
    if before == "plasmid":
        return bool(_PLASMID_NAME.fullmatch(word))
    return before in _PRODUCTS or after in _PRODUCTS


def public_text(value) -> str | None:
    """A title or organism name reduced to taxonomy's words; None when `value` is no string."""
    if not isinstance(value, str):
        return None
    text = _without_designations(value[:20 * MAX_TEXT])
    kept: list[str] = []
    previous = ""
    tokens = text.split()
    for i, token in enumerate(tokens):
        core = token.strip(_EDGE)
        following = tokens[i + 1].strip(_EDGE) if i + 1 < len(tokens) else ""
        if not (core and _keeps(core, previous, following)):
            sub = _SUBTYPE.search(token)  # "A/California/07/2009(H1N1)" keeps its subtype
            if sub:
                kept.append(sub.group(0).upper())
        else:
            lead = token[:len(token) - len(token.lstrip(_EDGE))]
            tail = token[len(token.rstrip(_EDGE)):]
            if _SUBTYPE.fullmatch(token):
                kept.append(token.upper())
            else:
                kept.append(lead.replace("[", "") + core + tail.replace("]", ""))
        previous = core
        if len(kept) >= MAX_WORDS:
            break
    out = " ".join(kept)
    if len(out) > MAX_TEXT:
        out = out[:MAX_TEXT].rsplit(" ", 1)[0]
    return _balanced(out)


def _balanced(text: str) -> str:
    """Parentheses left unmatched by a removed word are removed too."""
    depth, out = 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                continue
            depth -= 1
        out.append(ch)
    text = "".join(out)
    while depth:
        i = text.rfind("(")
        text = text[:i] + text[i + 1:]
        depth -= 1
    # A removed last word leaves the comma that followed the word before it.
    return " ".join(text.split()).rstrip(",;:")


def integer(value, low: int = 0, high: int = 1 << 40) -> int | None:
    """`value` when it is a whole number (not a bool) within [low, high], else None."""
    return value if type(value) is int and low <= value <= high else None


def number(value) -> float | int | None:
    """`value` when it is a finite number (not a bool), else None."""
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return value
    return None


def strand(value) -> str | None:
    return value if value in STRANDS else None


def taxid(value) -> int | None:
    return integer(value, 1, (1 << 31) - 1)
