"""The tool policy: which tools may be offered, read from the rules file's [tools] section.

A tool is offered only if the policy permits it (no denied category, no denied name pattern,
listed in `allow` when that list is not empty; deny always wins) AND every network host it
needs is on the egress allowlist. Names are normalised before matching so that an alias cannot
slip through: Unicode NFKC, look-alike letters folded to Latin (Cyrillic, Greek, fullwidth,
Latin small capitals and other variant letters by their Unicode names),
invisible characters dropped, accents stripped, case folded, separators and camelCase split,
digits used as letters ("pubm3d") read both ways.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

# Letters from other scripts that render like Latin ones; NFKC keeps them distinct, so a
# denied name spelt with a Cyrillic "е" would otherwise pass. (Unicode TR39 confusables, the
# subset that occurs in identifiers.)
_CONFUSABLES = {
    # Cyrillic
    "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i",
    "ј": "j", "к": "k", "ӏ": "l", "м": "m", "н": "h", "о": "o", "р": "p", "ԛ": "q", "ѕ": "s",
    "т": "t", "у": "y", "ԝ": "w", "х": "x", "ү": "y", "ɡ": "g", "ց": "g", "ս": "u", "օ": "o",
    "А": "a", "В": "b", "С": "c", "Е": "e", "Н": "h", "І": "i", "Ј": "j", "К": "k", "М": "m",
    "О": "o", "Р": "p", "Ѕ": "s", "Т": "t", "Х": "x", "У": "y", "Ԁ": "d", "Ԍ": "g", "Ү": "y",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w", "μ": "u",
    "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z", "Η": "h", "Ι": "i", "Κ": "k", "Μ": "m", "Ν": "n",
    "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y", "Χ": "x",
    # Latin look-alikes NFKC leaves alone
    "ı": "i", "ȷ": "j", "ł": "l", "ø": "o", "đ": "d", "ħ": "h", "ŀ": "l", "ſ": "s",
}
# Digits read as letters; "1" can be an i or an l, so both readings are tried.
_LEET = [str.maketrans({"0": "o", "3": "e", "4": "a", "5": "s", "7": "t", "1": "i", "$": "s",
                        "@": "a"}),
         str.maketrans({"0": "o", "3": "e", "4": "a", "5": "s", "7": "t", "1": "l", "$": "s",
                        "@": "a"})]

# Words that may surround a short denied pattern inside one token: "geosearch", "getsra",
# "sradb" are refused, while "geometry" or "gsea" (where the rest is not such a word) are not.
AFFIX_WORDS = frozenset("""
search query get fetch find lookup list tool tools api db data download id ids info meta
metadata series sample samples entry entries record records browser explorer client v version
run runs study studies project projects by from all summary summaries link links portal ncbi
ebi nih nlm eutils entrez tu tooluniverse mcp biotool local remote web rest accession
accessions doc docs text full article articles paper papers open annotation mirror file files
browse retrieve scan map mapping convert raw submission submissions
""".split())

_AFFIX_BY_INITIAL: dict[str, tuple[str, ...]] = {}
for _w in sorted(AFFIX_WORDS):
    _AFFIX_BY_INITIAL[_w[0]] = (*_AFFIX_BY_INITIAL.get(_w[0], ()), _w)

# The host entry of a tool whose network use could not be determined; never reachable.
UNKNOWN_HOST = "unknown-network-use"

# Patterns of at least this many characters match wherever a word begins in the joined name
# ("pubmedsearch", "searchpubmed"); shorter ones ("geo", "sra") must stand as a word, alone or
# with AFFIX_WORDS around them.
LONG_PATTERN = 6


@dataclass(frozen=True)
class Decision:
    """Whether a tool may be offered here, and the rule that decided."""

    offered: bool
    permitted: bool  # by the tool policy alone (reachability aside)
    reason: str = ""
    rule: str = ""
    unreachable_hosts: tuple[str, ...] = field(default_factory=tuple)

    def explain(self) -> dict:
        out = {"offered": self.offered}
        if not self.offered:
            out["reason"] = self.reason
            out["rule"] = self.rule
        return out


# Latin letters NFKC leaves alone whose Unicode name says which letter they look like: small
# capitals ("ᴘᴜʙᴍᴇᴅ"), dotless, script, barred or stroked forms ("ƀ", "ɨ").
_LATIN_NAME = re.compile(r"LATIN (?:SMALL |CAPITAL )?LETTER (?:SMALL CAPITAL |DOTLESS |SCRIPT "
                         r"|BARRED |INSULAR |LONG |OPEN |CLOSED |STRETCHED )?([A-Z])(?: WITH .*)?$")


@lru_cache(maxsize=4096)
def _look_alike(ch: str) -> str:
    folded = _CONFUSABLES.get(ch)
    if folded is not None or ch.isascii():
        return folded or ch
    m = _LATIN_NAME.match(unicodedata.name(ch, ""))
    return m.group(1).lower() if m else ch


def fold(text: str) -> str:
    """A name reduced to what it looks like: NFKC, look-alikes folded, no accents or invisibles."""
    text = str(text)
    if text.isascii():  # nothing to fold (ASCII has no look-alikes, marks or invisibles)
        return text
    text = unicodedata.normalize("NFKC", text)
    text = "".join(_look_alike(ch) for ch in text)
    text = unicodedata.normalize("NFKD", text)
    # Mn: combining accents ("pübmed"); Cf: zero-width joiners, soft hyphens, BOM.
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Mn", "Cf"))
    return unicodedata.normalize("NFKC", text)


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])"
                    r"|(?<=[0-9])(?=[A-Za-z])")
_SEP = re.compile(r"[^0-9a-z$@]+")


def tokens(name: str) -> list[list[str]]:
    """Token lists of a folded name: split on separators, and again on camelCase and digits."""
    folded = fold(name)
    plain = [t for t in _SEP.split(folded.casefold()) if t]
    camel = [t for t in _SEP.split(_CAMEL.sub(" ", folded).casefold()) if t]
    return [plain, camel] if camel != plain else [plain]


@lru_cache(maxsize=65536)
def key(name: str) -> str:
    """The lookup key of a name: folded, case-folded, separators removed."""
    return "".join(_SEP.split(fold(name).casefold()))


def _readings(text: str) -> set[str]:
    return {text, *(text.translate(t) for t in _LEET)}


@lru_cache(maxsize=4096)
def _affixes_only(rest: str) -> bool:
    """True if `rest` is empty, digits, or a run of AFFIX_WORDS ("getgeo" -> "get").
    Iterative (from the end) so that no name length can exhaust the stack."""
    if not rest or rest.isdigit():
        return True
    ok = [False] * len(rest) + [True]  # ok[i]: rest[i:] is a run of AFFIX_WORDS
    for i in range(len(rest) - 1, -1, -1):
        ok[i] = any(ok[i + len(w)] for w in _AFFIX_BY_INITIAL.get(rest[i], ())
                    if rest.startswith(w, i))
    return ok[0]


def _short_match(span: str, pattern: str) -> bool:
    start = span.find(pattern)
    while start >= 0:
        if _affixes_only(span[:start]) and _affixes_only(span[start + len(pattern):]):
            return True
        start = span.find(pattern, start + 1)
    return False


@lru_cache(maxsize=65536)
def _prepared(name: str) -> tuple[tuple[tuple[str, ...], frozenset[str]], ...]:
    """Each token list of a name with every reading of its joined form (cached: a listing
    checks thousands of names against every pattern)."""
    return tuple((tuple(toks), frozenset(_readings("".join(toks)))) for toks in tokens(name))


@lru_cache(maxsize=1 << 17)
def pattern_matches(name: str, pattern: str) -> bool:
    """Does a denied name pattern match this name, under every normalisation above?"""
    pat = key(pattern)
    if not pat:
        return False
    for toks, readings in _prepared(name):
        if not any(pat in r for r in readings):
            continue  # no span can hold the pattern if the whole name does not
        if len(pat) >= LONG_PATTERN:
            # Anywhere that begins a word, or follows only API words ("searchpubmed"); not
            # inside another word ("nucleotidesearch" is no "esearch").
            bounds, at = {0}, 0
            for tok in toks:
                at += len(tok)
                bounds.add(at)
            for r in readings:
                start = r.find(pat)
                while start >= 0:
                    if start in bounds or _affixes_only(r[:start]):
                        return True
                    start = r.find(pat, start + 1)
            continue
        # Every contiguous run of tokens, so that "g_e_o" or "ncbi_geo2" are read as words.
        for i in range(len(toks)):
            for j in range(i + 1, len(toks) + 1):
                span = "".join(toks[i:j])
                if any(_short_match(r, pat) for r in _readings(span)):
                    return True
    return False


def check(names: list[str], category: str, rules, labels: tuple[str, ...] = (),
          endpoints: tuple[str, ...] = ()) -> Decision:
    """The policy alone: `names` are the requested name and the tool's own names; `labels` are
    what the tool is (its source collection, implementation); `endpoints` are the host/path of
    every URL it calls, so that a tool with a harmless name and category that queries a
    literature or dataset service ("eutils.ncbi.nlm.nih.gov/entrez", "www.ebi.ac.uk/ena") is
    refused by the policy whatever the egress allowlist says. All are matched by patterns."""
    where = f"{rules.path} [tools]"
    cat = key(category)
    for denied in rules.deny_categories:
        if cat and cat == key(denied):
            return Decision(False, False, f"category '{category}' is denied",
                            f"{where} deny_categories '{denied}'")
    for what, values in (("name", names), ("label", labels), ("endpoint", endpoints)):
        for value in values:
            for pattern in rules.deny_patterns:
                if pattern_matches(value, pattern):
                    return Decision(False, False,
                                    f"{what} '{value}' matches the denied pattern '{pattern}'",
                                    f"{where} deny_patterns '{pattern}'")
    if rules.allow_tools:
        allowed = {key(a) for a in rules.allow_tools}
        if not any(key(n) in allowed for n in names):
            return Decision(False, False, "not listed in the tool allow list",
                            f"{where} allow")
    return Decision(True, True)


def decide(names: list[str], category: str, hosts: tuple[str, ...], rules,
           labels: tuple[str, ...] = (), endpoints: tuple[str, ...] = ()) -> Decision:
    """Policy first (it names the rule), then reachability of every host the tool needs."""
    decision = check(names, category, rules, labels, endpoints)
    if not decision.permitted:
        return decision
    if UNKNOWN_HOST in hosts:
        return Decision(False, True,
                        f"its network use is not known ({UNKNOWN_HOST}): only tools reviewed "
                        "as offline or naming their hosts can be offered",
                        f"{rules.path} [egress] allow", (UNKNOWN_HOST,))
    missing = []
    for host in hosts:
        name, _, port = host.rpartition(":") if ":" in host else (host, "", "443")
        if not port.isdigit() or not rules.egress_allows(name, int(port)):
            missing.append(host)
    if missing:
        return Decision(False, True,
                        f"needs {', '.join(missing)}, not on the egress allowlist",
                        f"{rules.path} [egress] allow", tuple(missing))
    return Decision(True, True)
