"""What one taxonomy search found, local blastn or NCBI BLAST alike: the one shape `identify`
reads to build its answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class SearchResult:
    """`hits`: each searched query's hits, best first, as BLAST gave them (identify keeps only
    their public fields); `searched`: the queries searched, in query order; `truncated`:
    --timeout ran out before every query was; `where`: the answer's `search` block (where and
    how it searched); `used`: its provenance record; `database`: the staged database searched
    (None: NCBI)."""

    hits: Mapping[str, list[dict]]
    searched: tuple[str, ...]
    truncated: bool
    where: Mapping[str, Any]
    used: Mapping[str, Any]
    database: str | None = None
