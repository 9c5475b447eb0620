"""`--region chr:start-end` (1-based, inclusive) checked against the reference's contigs."""

from __future__ import annotations

import re

from biotool.output import InputError

_REGION = re.compile(r"^(?P<contig>.+?)(?::(?P<start>[\d,]+)(?:-(?P<end>[\d,]+))?)?$")


def parse(text: str | None, contigs: dict[str, int]) -> list[tuple[str, int, int]]:
    """[(contig, start0, end0_exclusive)]: the region, or every contig when `text` is None."""
    if not text:
        return [(c, 0, n) for c, n in contigs.items()]
    text = text.strip()
    if text in contigs:  # contig names may contain ':'
        return [(text, 0, contigs[text])]
    m = _REGION.match(text)
    if not m or m.group("contig") not in contigs:
        name = m.group("contig") if m else text
        raise InputError(f"--region {text}: contig {name!r} is not in the reference "
                         f"(contigs: {', '.join(list(contigs)[:10])})")
    contig, length = m.group("contig"), contigs[m.group("contig")]
    start = int(m.group("start").replace(",", "")) if m.group("start") else 1
    end = int(m.group("end").replace(",", "")) if m.group("end") else length
    if start < 1 or start > end or end > length:
        raise InputError(f"--region {text}: outside the contig {contig} (1-{length}); "
                         "use 1-based inclusive chr:start-end")
    return [(contig, start - 1, end)]
