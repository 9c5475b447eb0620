"""`--region chr:start-end` (1-based, inclusive) checked against the reference's contigs.

Like samtools: `chr` is the whole contig, `chr:start` and `chr:start-` run to its end, commas
in numbers are ignored, and `{name}:start-end` quotes a contig name that itself ends in what
looks like coordinates. A name containing ':' or '|' works as is.
"""

from __future__ import annotations

import re

from biotool.output import InputError

_COORDS = re.compile(r"^(?P<start>[\d,]+)(?:-(?P<end>[\d,]*))?$")
SYNTAX = "use chr:start-end, 1-based inclusive (e.g. chr1:1,000-2,000), or a whole contig name"


def parse(text: str | None, contigs: dict[str, int]) -> list[tuple[str, int, int]]:
    """[(contig, start0, end0_exclusive)]: the region, or every contig when `text` is None."""
    if text is None:
        return [(c, 0, n) for c, n in contigs.items()]
    raw, text = text, text.strip()
    if not text:
        raise InputError(f"--region {raw!r}: empty; {SYNTAX}")
    if text in contigs:  # contig names may contain ':'
        return [(text, 0, contigs[text])]
    contig, coords = _split(text, contigs)
    length = contigs[contig]
    m = _COORDS.match(coords)
    if not m:
        raise InputError(f"--region {text}: cannot read coordinates {coords!r} on contig "
                         f"{contig}; {SYNTAX}")
    start = int(m.group("start").replace(",", "") or 0)
    end_text = (m.group("end") or "").replace(",", "")
    end = int(end_text) if end_text else length
    if start < 1 or start > end or end > length:
        raise InputError(f"--region {text}: outside the contig {contig} (1-{length}): "
                         f"start must be 1..end and end at most {length}; {SYNTAX}")
    return [(contig, start - 1, end)]


def _split(text: str, contigs: dict[str, int]) -> tuple[str, str]:
    """(contig, coordinates text): the contig is the longest known name before a ':'."""
    if text.startswith("{") and "}" in text:
        name, _, rest = text[1:].partition("}")
        if name in contigs and rest.startswith(":"):
            return name, rest[1:]
    cut = text.rfind(":")
    while cut > 0:
        if text[:cut] in contigs:
            return text[:cut], text[cut + 1:]
        cut = text.rfind(":", 0, cut)
    raise InputError(f"--region {text}: no contig of that name in the reference "
                     f"(contigs: {', '.join(list(contigs)[:10])}); {SYNTAX}")
