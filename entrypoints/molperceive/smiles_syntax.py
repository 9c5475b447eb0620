"""An independent SMILES syntax checker (OpenSMILES grammar), with no RDKit involved.

Syntax reasons must be established by pure string checks so that they do not depend on one
toolkit's parser; RDKit only decides chemistry (valence, kekulization). The tokenizer is also
what `corrupt` uses to find atoms, branches and ring bonds in a SMILES string.
"""

from __future__ import annotations

import re
from typing import NamedTuple

ELEMENTS = frozenset("""
H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br
Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho
Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es
Fm Md No Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og
""".split())
ORGANIC = ("Cl", "Br", "B", "C", "N", "O", "P", "S", "F", "I")   # two-letter ones first
AROMATIC_ORGANIC = ("b", "c", "n", "o", "p", "s")
_ORGANIC_TWO = frozenset(o for o in ORGANIC if len(o) == 2)
_ORGANIC_ONE = frozenset(o for o in ORGANIC if len(o) == 1)
AROMATIC_BRACKET = frozenset({"b", "c", "n", "o", "p", "s", "se", "as", "te", "si"})
BONDS = "-=#$:/\\"

# Inside brackets: isotope, symbol, chirality, hydrogens, charge, atom class.
_BRACKET = re.compile(
    r"^(?P<iso>\d*)(?P<sym>[A-Z][a-z]?|[a-z]{1,2}|\*)"
    r"(?P<chiral>@(?:@|TH[12]|AL[12]|SP[1-3]|TB\d{1,2}|OH\d{1,2})?)?"
    r"(?P<h>H\d*)?(?P<charge>[+-]{1,2}\d*)?(?::\d+)?$")

# Longer than any molecule in scope (70 heavy atoms) by a wide margin; refused before parsing,
# because a multi-megabyte line would otherwise take the tokenizer and RDKit many seconds.
MAX_SMILES_CHARS = 4096
# Numbers inside brackets, as OpenSMILES bounds them (isotope 3 digits, hydrogen count one
# digit, charge two, atom class five here): RDKit fails in C++ pre-conditions beyond them.


_BRACKET_DIGITS = re.compile(r"\[[^\]]*?[0-9]{2}")


def unbounded(smiles: str) -> str | None:
    """Why this string is refused as input before any parsing, or None: too long, or a bracket
    number outside the grammar's bounds (a usage error, not an invalid structure)."""
    if len(smiles) > MAX_SMILES_CHARS:
        return f"SMILES of {len(smiles):,} characters is over the limit of {MAX_SMILES_CHARS:,}"
    if "[" not in smiles or not _BRACKET_DIGITS.search(smiles):
        return None   # every bound below needs two digits in a row inside a bracket
    for body in re.findall(r"\[([^\]]*)\]", smiles):
        m = re.match(r"(\d*)", body)
        if len(m.group(1)) > 3:
            return f"isotope {m.group(1)[:12]} in [{body[:24]}] has more than 3 digits"
        h = re.search(r"H(\d+)", body)
        if h and len(h.group(1)) > 1:
            return f"hydrogen count {h.group(1)[:12]} in [{body[:24]}] has more than one digit"
        q = re.search(r"[+-](\d+)", body)
        if q and len(q.group(1)) > 2:
            return f"charge {q.group(1)[:12]} in [{body[:24]}] has more than 2 digits"
        c = re.search(r":(\d+)$", body)
        if c and len(c.group(1)) > 5:
            return f"atom class {c.group(1)[:12]} in [{body[:24]}] has more than 5 digits"
    return None


class Token(NamedTuple):
    # A named tuple: the tokenizer makes one per character, and tuples are cheap to make.
    kind: str        # atom, bond, open, close, ring, dot
    text: str
    start: int
    symbol: str = ""  # element symbol of an atom token (as written, aromatic lower case)
    ring: str = ""    # ring-bond label ("1", "%12") of a ring token


class SyntaxProblem(Exception):
    """The first problem found: `reason` is a contract reason code or None (another problem)."""

    def __init__(self, reason: str | None, detail: str, position: int):
        super().__init__(detail)
        self.reason, self.detail, self.position = reason, detail, position


def _bracket_symbol(body: str, start: int) -> str:
    m = _BRACKET.match(body)
    if not m:
        # Tell an unknown symbol apart from other malformed bracket contents.
        lead = re.match(r"\d*([A-Z][a-z]?|[a-z]{1,2})", body)
        if lead and lead.group(1) not in ELEMENTS | AROMATIC_BRACKET:
            raise SyntaxProblem("unknown_element", f"unknown element in [{body}]", start)
        raise SyntaxProblem(None, f"malformed bracket atom [{body}]", start)
    sym = m.group("sym")
    if sym == "*" or sym in ELEMENTS or sym in AROMATIC_BRACKET:
        return sym
    # "[Xx]" or "[Ch3]"-like: a letter pair that is no element, even split as symbol + H.
    raise SyntaxProblem("unknown_element", f"unknown element {sym!r} in [{body}]", start)


def tokenize(smiles: str) -> list[Token]:
    """Tokens of a SMILES string; raises SyntaxProblem at the first lexical problem."""
    out: list[Token] = []
    pos, n = 0, len(smiles)
    while pos < n:
        ch = smiles[pos]
        if ch == "[":
            end = smiles.find("]", pos)
            if end < 0:
                raise SyntaxProblem(None, f"unclosed bracket atom at position {pos}", pos)
            body = smiles[pos + 1:end]
            out.append(Token("atom", smiles[pos:end + 1], pos, symbol=_bracket_symbol(body, pos)))
            pos = end + 1
        elif ch == "*":
            out.append(Token("atom", ch, pos, symbol="*"))
            pos += 1
        elif ch.isalpha():
            two = smiles[pos:pos + 2]
            # ORGANIC's order: the two-letter symbols first.
            sym = two if two in _ORGANIC_TWO else ch if ch in _ORGANIC_ONE or ch in AROMATIC_ORGANIC \
                else None
            if sym is None:
                raise SyntaxProblem("unknown_element",
                                    f"unknown element {ch!r} at position {pos}", pos)
            out.append(Token("atom", sym, pos, symbol=sym))
            pos += len(sym)
        elif ch.isdigit():
            out.append(Token("ring", ch, pos, ring=ch))
            pos += 1
        elif ch == "%":
            m = re.match(r"%(\d{2})|%\((\d{1,5})\)", smiles[pos:])
            if not m:
                raise SyntaxProblem(None, f"malformed ring-bond label at position {pos}", pos)
            out.append(Token("ring", m.group(0), pos, ring=m.group(1) or m.group(2)))
            pos += len(m.group(0))
        elif ch in BONDS:
            out.append(Token("bond", ch, pos))
            pos += 1
        elif ch == "(":
            out.append(Token("open", ch, pos))
            pos += 1
        elif ch == ")":
            out.append(Token("close", ch, pos))
            pos += 1
        elif ch == ".":
            out.append(Token("dot", ch, pos))
            pos += 1
        else:
            raise SyntaxProblem(None, f"unexpected character {ch!r} at position {pos}", pos)
    return out


# One match per token of a lexically clean SMILES: organic atom, ring label, bond, branch,
# dot, bracket atom. A string with anything else takes tokenize() and its exact error.
_LEX = re.compile(r"(Cl|Br|[BCNOPSFIbcnops*])|([0-9]|%[0-9]{2}|%\([0-9]{1,5}\))|([-=#$:/\\])"
                  r"|(\()|(\))|(\.)|\[([^\]]*)\]")
_KIND = (None, "atom", "ring", "bond", "open", "close", "dot", "atom")


def _lex(smiles: str) -> list[tuple[str, int, str, str]] | None:
    """(kind, start, ring label, text) per token, or None when the string is not lexically clean."""
    out = []
    pos = 0
    for m in _LEX.finditer(smiles):
        start = m.start()
        if start != pos:
            return None
        kind = _KIND[m.lastindex]
        if m.lastindex == 7:
            try:
                _bracket_symbol(m.group(7), start)
            except SyntaxProblem:
                return None
        ring = ""
        if kind == "ring":
            text = m.group(2)
            ring = text if text[0] != "%" else text[2:-1] if text[1] == "(" else text[1:]
        out.append((kind, start, ring, m.group(0)))
        pos = m.end()
    return out if pos == len(smiles) else None


_CLEAN = re.compile(r"(?:Cl|Br|[BCNOPSFIbcnops*0-9=#$:/\\().-]|%[0-9]{2}|%\([0-9]{1,5}\)|\[[^\]]*\])*")


# Token kinds as one character each, for the common case decided by string operations in C:
# A atom, R ring-bond digit, b bond, o "(", c ")", d "."; the second letters of Cl and Br go.
_KINDS = str.maketrans({**{ch: "A" for ch in "BCNOPSFIbcnops*"}, **{ch: "R" for ch in "0123456789"},
                        **{ch: "b" for ch in "-=#$:/\\"}, "(": "o", ")": "c", ".": "d",
                        "l": None, "r": None})
_PARENS = str.maketrans({ch: None for ch in "ARbd"})
_BRACKETS = re.compile(r"\[([^\]]*)\]")
# A kind after one it may not follow (the rules of _well_formed_tokens), or a bad start or end.
_MISPLACED = re.compile(r"^[^A]|[ocd]R|[bd]b|[bod]o|[ob]c|[bod]d|[bo]$")


def _well_formed(smiles: str) -> bool:
    """True only for a lexically clean, well-formed SMILES: the common case, decided without
    positions; anything else goes through check()'s token walk for the exact first problem.

    The same judgement as _well_formed_tokens, with the token walk done by translate and a
    regex over one character per token (a Python loop per token was most of its cost).
    """
    if not smiles or not _CLEAN.fullmatch(smiles):
        return False
    if "%" in smiles:
        return _well_formed_tokens(smiles)   # two-digit ring labels: rare, walked
    body = smiles
    if "[" in smiles:
        for inner in _BRACKETS.findall(smiles):
            try:
                _bracket_symbol(inner, 0)
            except SyntaxProblem:
                return False
        body = _BRACKETS.sub("A", smiles)
    kinds = body.translate(_KINDS)
    if _MISPLACED.search(kinds):
        return False
    parens = kinds.translate(_PARENS)
    while "oc" in parens:
        parens = parens.replace("oc", "")
    if parens:
        return False
    # Every ring-bond label opened is closed: each digit left outside brackets comes in pairs.
    return all(body.count(d) % 2 == 0 for d in "0123456789" if d in body)


def _well_formed_tokens(smiles: str) -> bool:
    """_well_formed by walking the tokens (any SMILES, two-digit ring labels included)."""
    if not smiles or not _CLEAN.fullmatch(smiles):
        return False
    depth = 0
    open_rings: set[str] = set()
    prev = None
    for atom, ring, bond, opened, closed, dot, body in _LEX.findall(smiles):
        if atom:
            kind = "atom"
        elif ring:
            kind = "ring"
            label = ring if ring[0] != "%" else ring[2:-1] if ring[1] == "(" else ring[1:]
            if prev not in ("atom", "ring", "bond"):
                return False
            open_rings ^= {label}
        elif bond:
            kind = "bond"
            if prev is None or prev in ("bond", "dot"):
                return False
        elif opened:
            kind = "open"
            if prev not in ("atom", "ring", "close"):
                return False
            depth += 1
        elif closed:
            kind = "close"
            if depth == 0 or prev in ("open", "bond"):
                return False
            depth -= 1
        elif dot:
            kind = "dot"
            if prev not in ("atom", "ring", "close"):
                return False
        else:
            kind = "atom"
            try:
                _bracket_symbol(body, 0)
            except SyntaxProblem:
                return False
        prev = kind
    return not depth and not open_rings and prev not in (None, "bond", "open")


def check(smiles: str) -> None:
    """Raise SyntaxProblem for the first syntax problem of `smiles`; return None if it has none."""
    if _well_formed(smiles):
        return
    if not smiles or smiles != smiles.strip():
        raise SyntaxProblem(None, "empty SMILES or surrounding whitespace", 0)
    toks = _lex(smiles)
    if toks is None:
        toks = [(t.kind, t.start, t.ring, t.text) for t in tokenize(smiles)]
    depth = 0
    open_rings: dict[str, int] = {}
    prev = None
    for kind, start, ring, text in toks:
        if kind == "open":
            if prev is None or prev not in ("atom", "ring", "close"):
                raise SyntaxProblem(None, f"branch opened without an atom at {start}", start)
            depth += 1
        elif kind == "close":
            if depth == 0:
                raise SyntaxProblem("unbalanced_parenthesis",
                                    f"')' at position {start} closes no branch", start)
            if prev is not None and prev in ("open", "bond"):
                raise SyntaxProblem(None, f"empty branch or dangling bond at {start}", start)
            depth -= 1
        elif kind == "ring":
            if prev is None or prev not in ("atom", "ring", "bond"):
                raise SyntaxProblem(None, f"ring-bond label {text} follows no atom", start)
            if ring in open_rings:
                del open_rings[ring]
            else:
                open_rings[ring] = start
        elif kind == "bond":
            if prev is None or prev in ("bond", "dot"):
                raise SyntaxProblem(None, f"bond {text!r} at {start} joins nothing", start)
        elif kind == "dot":
            if prev is None or prev not in ("atom", "ring", "close"):
                raise SyntaxProblem(None, f"'.' at {start} separates nothing", start)
        prev = kind
    if depth:
        raise SyntaxProblem("unbalanced_parenthesis", f"{depth} branch(es) never closed",
                            len(smiles))
    if open_rings:
        label, where = next(iter(open_rings.items()))
        raise SyntaxProblem("unclosed_ring_bond",
                            f"ring bond {label} opened at position {where} is never closed", where)
    if prev is None or prev in ("bond", "open"):
        raise SyntaxProblem(None, "SMILES ends in a bond or an open branch", len(smiles))


def first_problem(smiles: str) -> dict | None:
    """{reason, detail, position} of the first syntax problem, or None for a well-formed SMILES."""
    try:
        check(smiles)
    except SyntaxProblem as exc:
        return {"reason": exc.reason, "detail": exc.detail, "position": exc.position}
    return None
