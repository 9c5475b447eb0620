"""`biotool breakpoints`: where molecules stop agreeing with the reference, per base.

Convention for every signature: `pos` is the 1-based last reference base covered before the
break (a read whose alignment starts at 1-based base b breaks at pos b-1; one that ends at
base b breaks at pos b). An indel is consistent with a break anywhere in its span, widened
by the repeat it sits in, so it supports every position of that span, not one edge.
"""

from __future__ import annotations

import math
import os
from collections import Counter

from biotool.alignment.reference import Reference
from biotool.alignment.vocabulary import (DELETION, INSERTION, REVERSE, SKIP_FOR_JUNCTIONS,
                                          SOFT_CLIP, SUPPLEMENTARY)
from biotool.arms import Hedges, declared
from biotool.competence import bounded, not_applicable
from biotool.deadline import UNBOUNDED, Deadline
from biotool.output import InputError
from biotool.provenance import provenance
from biotool.reads import bamscan, splitreads
from biotool.reads.bam import open_bam
from biotool.reads.indel import deletion_span, insertion_left, insertion_right
from biotool.reads.inputs import region_not_in_bam
from biotool.reads.job import open_job, with_warnings

CONVENTION = ("pos is the 1-based last reference base covered before the break: a read "
              "whose alignment starts at 1-based base b counts at pos b-1, one that ends at "
              "base b counts at pos b; an indel counts at every pos of its span (a deletion "
              "of bases s..e spans s-1..e, widened across repeats; an insertion after base p "
              "spans p, widened likewise). A blunt cut is named either by the last base "
              "before it or by the next one; this names it by the last base before it")
# The note (the ranking rule), discounted_why and the warnings (what the input checks found)
# say what the answer is, in both arms; a warning's guess at why is marked in its text.
HEDGES = Hedges.of("competence", "consensus[].competence")
MIN_CLIP = 5    # shorter clips are indistinguishable from mismatches at a read end
MIN_AGREE = 2   # reads a signature needs at a position before it counts as agreeing
AGREE_SHARE = 0.1  # ... and this share of the position's support, so stray clips do not count
KINDS = ("starts", "ends", "clips", "indels")
PRIMER_SHARE = 0.5   # share of the reads covering a primer that start (end) within the window
PRIMER_WINDOW = 5    # bases either side over which read edges at one primer spread
PRIMER_MIN_READS = 10  # fewer reads sharing an edge are chance, not a primer
ONE_SIDED = 0.1      # at a real break, reads end on one side as others start on the other


def _span_deletion(seq: str, off: int, r: int, k: int) -> tuple[int, int]:
    """Span (pos convention) of a deletion of 0-based bases r..r+k-1: bases lo+1..lo+k
    (1-based) deleted shifted fully left break at pos lo at the earliest; shifted fully
    right they end at pos hi+k."""
    lo, hi = deletion_span(seq, off, r, k)
    return lo, hi + k


def _span_insertion(seq: str, off: int, r: int, ins: str) -> tuple[int, int]:
    """Span of an insertion before 0-based base r (after 1-based base r), across repeats."""
    lo, _ = insertion_left(seq, off, r, ins)
    return lo, insertion_right(seq, off, r, ins)


def tally(path: str, tid: int, start: int, end: int, refseq: str, off: int, min_mapq: int,
          deadline: Deadline, reference: Reference, contig: str, threads: int = 1) -> dict:
    """Per-read extents and indel spans for one region of one BAM (0-based half-open region
    of `contig`, reference number `tid`).

    The command's hot path: the region's alignments come from bamscan as numpy arrays a
    batch at a time, so no Python runs per read; only each distinct indel is widened in
    Python. Unmapped, secondary, QC-failed and duplicate alignments are skipped;
    supplementary ones are kept, since they carry the hard clips that mark the far side of a
    junction. Where a split read's pieces overlap on the read, their edges are refined
    against the `reference` first (see splitreads)."""
    import numpy as np

    spans = Counter()
    soft = {"l": [], "r": []}  # (edge, split, clipped bases) of soft-clipped edges
    parts = {k: [] for k in ("read_lo", "read_hi", "lclipped", "rclipped", "lsplit", "rsplit")}
    n = kept = 0
    truncated = False
    for batch in bamscan.scan(path, tid, start, end, threads):
        n += len(batch.pos)
        use = ((batch.flag & SKIP_FOR_JUNCTIONS) == 0) & (batch.mapq >= min_mapq) & (batch.n_ops > 0)
        kept += int(use.sum())
        lclip, rclip = bamscan.clip_lengths(batch)
        several = use & (batch.n_ops > 1)  # a one-operation CIGAR clips nothing
        lcut, rcut = several & (lclip >= MIN_CLIP), several & (rclip >= MIN_CLIP)
        split = _split(batch, lcut | rcut)
        lo, hi, lgrow, rgrow = _refined_edges(batch, split, reference, contig)
        parts["read_lo"].append(lo[use])
        parts["read_hi"].append(hi[use])
        parts["lclipped"].append(lo[lcut])
        parts["rclipped"].append(hi[rcut])
        parts["lsplit"].append(lo[lcut & split])
        parts["rsplit"].append(hi[rcut & split])
        _soft_clips(batch, lcut, rcut, split, (lo, hi), (lclip + lgrow, rclip + rgrow),
                    (lgrow, rgrow), soft)
        _count_indels(batch, np.flatnonzero(several), refseq, off, start, end, spans)
        if deadline.passed():
            truncated = True
            break
    out = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in parts.items()}
    # A clip too short for the aligner to place that agrees with a split read's clip at the
    # same edge is a piece of the same junction (split, for the primer rule).
    for key, side in (("lsplit", "l"), ("rsplit", "r")):
        more = _agreeing_clips(soft[side], side)
        if more:
            out[key] = np.concatenate([out[key], np.asarray(more, dtype=np.int64)])
    return {**out, "spans": spans, "start": start, "end": end, "reads_seen": n,
            "reads_used": kept, "truncated": truncated}


def _split(batch, clipped):
    """Per row, whether it is one piece of a split read (a supplementary alignment, or one
    carrying an SA tag): its clipped part aligns elsewhere, so its clipped edge is a junction.
    Only the clipped rows' tags are read."""
    import numpy as np

    split = (batch.flag & SUPPLEMENTARY) != 0
    rows = np.flatnonzero(clipped & ~split)
    split[rows] = bamscan.tagged(batch, rows, b"SA")
    return split & clipped


def _refined_edges(batch, split, reference: Reference, contig: str):
    """(left edge, right edge, read bases the left clip grew by, the right one) per row: the
    alignment's own, but for split rows whose pieces overlap on the read, where the overlap
    goes to the other piece (splitreads.refined). Only split rows pay: their SA tags are read
    (a supplementary row's first entry is its primary) and the overlap's few bases compared."""
    import numpy as np

    lo, hi = batch.pos.copy(), batch.end.copy()
    lgrow, rgrow = np.zeros_like(lo), np.zeros_like(lo)
    rows = np.flatnonzero(split)
    if not len(rows):
        return lo, hi, lgrow, rgrow
    contigs = reference.contigs()
    stored = bamscan.query_bases(batch, rows, np.zeros(len(rows), dtype=np.int64),
                                 batch.l_seq[rows].astype(np.int64))
    tags = bamscan.tag_texts(batch, rows, b"SA")
    for row, bases, tag in zip(rows.tolist(), stored, tags):
        first, n = int(batch.first_op[row]), int(batch.n_ops[row])
        own = splitreads.Piece(contig, int(batch.pos[row]), bool(batch.flag[row] & REVERSE),
                               tuple(zip(batch.ops[first:first + n].tolist(),
                                         batch.lens[first:first + n].tolist())))
        others = [p for p in splitreads.sa_pieces(tag) if p.contig in contigs]
        shift = splitreads.refined(own, bases, others, reference.fetch)
        lo[row] += shift.left_ref
        hi[row] -= shift.right_ref
        lgrow[row], rgrow[row] = shift.left_query, shift.right_query
    return lo, hi, lgrow, rgrow


def _soft_clips(batch, lcut, rcut, split, edges, clips, grown, soft: dict) -> None:
    """Append (edge, split, clipped bases) of each row's soft clip of MIN_CLIP or more bases
    (a hard clip keeps no bases) to soft["l"] / soft["r"]; a left clip's bases are read so
    that their first is the one next to the junction (reversed), a right clip's as stored.
    `edges` and `clips` are (left, right) per row as refined: a clip `grown` by the read
    bases its row gave to another piece of the read (see splitreads)."""
    import numpy as np

    for side, cut, edge, clip, grow in zip("lr", (lcut, rcut), edges, clips, grown):
        rows = np.flatnonzero(cut & (batch.l_seq > 0))
        op = batch.first_op[rows] + (0 if side == "l" else batch.n_ops[rows] - 1)
        rows = rows[(batch.ops[op] == SOFT_CLIP) & (batch.lens[op] + grow[rows] == clip[rows])]
        if not len(rows):
            continue
        start = np.zeros(len(rows), dtype=np.int64) if side == "l" \
            else batch.l_seq[rows].astype(np.int64) - clip[rows]
        bases = bamscan.query_bases(batch, rows, start, clip[rows].astype(np.int64))
        if side == "l":
            bases = [b[::-1] for b in bases]
        soft[side].extend(zip(edge[rows].tolist(), split[rows].tolist(), bases))


def _agreeing_clips(clips: list, side: str) -> list[int]:
    """Edges of the unsplit soft clips that agree with a split read's clip at the same edge:
    its bases, from the junction out, are the split clip's first ones (a mismatch per 10
    bases allowed for sequencing errors). The aligner places a clipped part only when it is
    long enough (bwa: a 19-base seed, a score of 30), so the shorter clips of a junction's
    reads stay unsplit though they carry the very same junction; an adapter's clips at a
    primer agree with no split read."""
    split = {}
    for edge, is_split, bases in clips:
        if is_split:
            split.setdefault(edge, []).append(bases)
    out = []
    for edge, is_split, bases in clips:
        if is_split or edge not in split:
            continue
        n = len(bases)
        if any(len(s) >= n and sum(a != b for a, b in zip(s, bases)) <= n // 10
               for s in split[edge]):
            out.append(edge)
    return out


def _count_indels(batch, rows, refseq: str, off: int, start: int, end: int,
                  spans: Counter) -> None:
    """Add the span (see the module's convention) of every indel beginning in start..end to
    `spans`, widening each distinct deletion or inserted sequence once."""

    ev = bamscan.indel_events(batch, rows)
    inside = (ev["ref"] >= start) & (ev["ref"] <= end)
    dels = inside & (ev["op"] == DELETION)
    if dels.any():
        for (r, k), c in Counter(zip(ev["ref"][dels].tolist(), ev["len"][dels].tolist())).items():
            spans[_span_deletion(refseq, off, r, k)] += c
    ins = inside & (ev["op"] == INSERTION)
    if ins.any():
        seqs = bamscan.query_bases(batch, ev["row"][ins], ev["query"][ins], ev["len"][ins])
        for key, c in Counter(zip(ev["ref"][ins].tolist(), seqs)).items():
            spans[_span_insertion(refseq, off, key[0], key[1])] += c


def _hist(arr, start: int, end: int):
    """(positions, counts) of the sorted array `arr` within start..end."""
    import numpy as np

    arr = arr[np.searchsorted(arr, start, "left"):np.searchsorted(arr, end, "right")]
    if not len(arr):
        return arr, arr
    first = np.flatnonzero(np.diff(arr)) + 1  # where a new position begins
    first = np.concatenate([[0], first])
    return arr[first], np.diff(np.concatenate([first, [len(arr)]]))


def _distinct(arr):
    """Sorted distinct values (np.unique, without the 17 ms import of numpy.ma it brings)."""
    import numpy as np

    arr = np.sort(arr)
    return arr[np.concatenate([[True], arr[1:] != arr[:-1]])] if len(arr) else arr


def _table(t: dict, contig_length: int) -> dict:
    """Candidate positions with each signature's reads, the reads spanning them intact, and
    the read edges discounted as contig ends or amplicon primers (not breaks)."""
    import numpy as np

    span_items = list(t["spans"].items())
    lo = np.array([s[0] for s, _ in span_items], dtype=np.int64)
    hi = np.array([s[1] for s, _ in span_items], dtype=np.int64)
    w = np.array([c for _, c in span_items], dtype=np.int64)
    # Stable sorts: BAM order makes starts sorted and ends nearly so, which timsort exploits.
    rlo, rhi, lcl, rcl, lsp, rsp = (np.sort(np.asarray(t[k], dtype=np.int64), kind="stable")
                                    for k in ("read_lo", "read_hi", "lclipped", "rclipped",
                                              "lsplit", "rsplit"))
    edges = {k: _hist(arr, t["start"], t["end"]) for k, arr in
             (("lo", rlo), ("hi", rhi), ("lclip", lcl), ("rclip", rcl), ("lsplit", lsp),
              ("rsplit", rsp))}
    pos = _distinct(np.concatenate([edges["lo"][0], edges["hi"][0], lo]))

    def col(k):
        out = np.zeros(len(pos), dtype=np.int64)
        out[np.searchsorted(pos, edges[k][0])] = edges[k][1]
        return out

    left, right, lclips, rclips = col("lo"), col("hi"), col("lclip"), col("rclip")
    lsplits, rsplits = col("lsplit"), col("rsplit")
    # Indel reads at p: spans with lo <= p minus spans with hi < p.
    order_lo, order_hi = np.argsort(lo, kind="stable"), np.argsort(hi, kind="stable")
    cum_lo = np.concatenate([[0], np.cumsum(w[order_lo])])
    cum_hi = np.concatenate([[0], np.cumsum(w[order_hi])])
    indels = (cum_lo[np.searchsorted(lo[order_lo], pos, "right")]
              - cum_hi[np.searchsorted(hi[order_hi], pos, "left")])
    # Reads crossing the boundary after pos: start < pos and end > pos.
    crossing = np.searchsorted(rlo, pos, "left") - np.searchsorted(rhi, pos, "right")
    # Contig ends: no read can run past them, so edges there are no junction.
    edge = (pos == 0) | (pos == contig_length)
    # Amplicon primers: a few bases where most reads covering them start (or end) while no
    # molecule breaks on the other side, as reads meeting at a real break would. A window,
    # because stagger bases and adapters matching by chance shift read edges by a few bases.
    # Only reads that stop there count towards that pile: a split read's clipped part aligns
    # elsewhere, so its edge is a junction (a deletion longer than the reads leaves its edges
    # as one-sided as a primer's, but split), never a primer.
    def near(counts):
        cum = np.concatenate([[0], np.cumsum(counts)])
        return (cum[np.searchsorted(pos, pos + PRIMER_WINDOW, "right")]
                - cum[np.searchsorted(pos, pos - PRIMER_WINDOW, "left")])

    left_near, right_near = near(left), near(right)
    stop_l, stop_r = near(left - lsplits), near(right - rsplits)
    after, before = pos + PRIMER_WINDOW, pos - PRIMER_WINDOW
    # Reads covering the base after the window (start <= after < end), and the window's
    # first base (start < before <= end): every read with an edge in the window, and more.
    cover_after = np.searchsorted(rlo, after, "right") - np.searchsorted(rhi, after, "right")
    cover_before = np.searchsorted(rlo, before, "left") - np.searchsorted(rhi, before, "left")
    primer_l = (left > 0) & (stop_l >= PRIMER_MIN_READS) \
        & (stop_l >= PRIMER_SHARE * cover_after) & (right_near < ONE_SIDED * left_near)
    primer_r = (right > 0) & (stop_r >= PRIMER_MIN_READS) \
        & (stop_r >= PRIMER_SHARE * cover_before) & (left_near < ONE_SIDED * right_near)
    primer_l &= ~edge
    primer_r &= ~edge
    drop_l, drop_r = edge | primer_l, edge | primer_r
    discounted = []
    for j in np.nonzero(drop_l | drop_r)[0].tolist():
        reads = int(left[j] * drop_l[j] + right[j] * drop_r[j])
        if not reads:
            continue
        if edge[j]:
            why = "contig's first base" if pos[j] == 0 else "contig's last base"
            share = None
        else:
            side = "start" if primer_l[j] else "end"
            share = (stop_l[j] / max(1, cover_after[j]) if primer_l[j]
                     else stop_r[j] / max(1, cover_before[j]))
            why = f"primer (reads {side})"
        discounted.append({"pos": int(pos[j]), "reads": reads, "why": why,
                           **({"share": round(float(share), 3)} if share is not None else {})})
    cols = {"starts": np.where(drop_l, 0, left - lclips),
            "ends": np.where(drop_r, 0, right - rclips),
            "clips": np.where(drop_l, 0, lclips) + np.where(drop_r, 0, rclips),
            "indels": indels}
    return {"pos": pos, "cols": cols, "crossing": crossing, "discounted": discounted}


def _indel_plateau(t: dict) -> dict | None:
    """The positions covered by the most indel spans (where all indel evidence agrees)."""
    if not t["spans"]:
        return None
    events = Counter()
    for (lo, hi), c in t["spans"].items():
        events[lo] += c
        events[hi + 1] -= c
    points = sorted(events)
    best, span, cur = 0, None, 0
    for j, p in enumerate(points[:-1]):
        cur += events[p]
        seg = [p, points[j + 1] - 1]  # positions carrying the running count `cur`
        if cur > best:
            best, span = cur, seg
        elif cur == best and span and span[1] + 1 == p:
            span[1] = seg[1]  # the same maximum continues
    return {"pos": span[0], "span": span, "reads": best}


def breakpoints(reference: str, fastq: list[str] | None = None, bam: list[str] | None = None,
                region: str | None = None, top: int = 10, min_mapq: int = 20, threads: int = 2,
                deadline: Deadline = UNBOUNDED, preset: str = "auto") -> dict:
    if bam and len(bam) > 1:
        raise InputError(f"--bam {' '.join(bam)}: breakpoints counts one library; give one BAM "
                         "(biotool variants pools several)")
    job = open_job(reference, [fastq] if fastq else [], bam or [], region, preset, threads,
                   deadline)
    ref, contigs, lib = job.reference, job.contigs, job.libraries[0]
    parts = []
    handle = open_bam(lib.bam)
    try:
        tids = {name: i for i, name in enumerate(handle.references)}
    finally:
        handle.close()
    workers = max(1, min(int(threads), os.cpu_count() or 1))
    for contig, s, e in job.regions:
        if contig not in tids:
            continue
        seq, off = job.window(contig, s, e)
        parts.append(tally(lib.bam, tids[contig], s, e, seq, off, min_mapq, job.deadline, ref,
                           contig, workers))
        parts[-1]["contig"] = contig
        if parts[-1]["truncated"]:
            break
    if not parts:
        raise region_not_in_bam(lib.bam, job.regions)
    import numpy as np

    tables, discounted = [], []
    by_signature = {}
    for part in parts:
        contig = part["contig"]
        if not part["reads_used"]:
            continue
        table = _table(part, contigs[contig])
        pos, cols = table["pos"], table["cols"]
        tables.append((contig, pos, cols, table["crossing"]))
        discounted += [{"contig": contig, **d} for d in table["discounted"]]
        for kind in ("starts", "ends", "clips"):
            if len(pos) and cols[kind].max() > by_signature.get(kind, {}).get("reads", 0):
                j = int(np.argmax(cols[kind]))  # the first maximum: the leftmost position
                by_signature[kind] = {"contig": contig, "pos": int(pos[j]),
                                      "reads": int(cols[kind][j])}
        plateau = _indel_plateau(part)
        if plateau and plateau["reads"] > by_signature.get("indels", {}).get("reads", 0):
            by_signature["indels"] = {"contig": contig, **plateau}
    rows, scores = _ranked_rows(tables, top)
    used_reads = sum(p["reads_used"] for p in parts)
    truncated = any(p["truncated"] for p in parts) or job.truncated
    result = {
        "reference": ref.name,
        "convention": CONVENTION,
        "region": region or "all contigs",
        "bam": lib.bam,
        "preset": lib.preset,
        "reads_used": used_reads,
        "min_mapq": min_mapq,
        "min_clip": MIN_CLIP,
        "truncated": truncated,
        "consensus": [],
        "by_signature": by_signature,
        "discounted": sorted(discounted, key=lambda d: -d["reads"])[:top],
        "discounted_total": len(discounted),
        "discounted_why": {k: v for k, v in DISCOUNT_WHY.items()
                           if any(d["why"] == k for d in discounted)},
        "note": (f"consensus ranks positions by support (reads) times the number of "
                 f"signatures that agree there (a signature agrees with at least {MIN_AGREE} "
                 f"reads and {AGREE_SHARE:.0%} of the support); clips shorter than {MIN_CLIP} bases "
                 "count as starts/ends; supplementary alignments count (their hard clips mark "
                 "junctions), so a chimeric read counts once per aligned piece; reads with "
                 "mapping quality below min_mapq, secondary, duplicate and QC-failed alignments "
                 "are ignored; read edges at a contig's first or last base, and at amplicon "
                 "primers (a position where most reads covering it start, or end, and none "
                 "break on the other side), are not breaks and are not counted: `discounted` "
                 "lists them with why; a split read's edge (its clipped part aligned elsewhere: "
                 "supplementary or SA-tagged) is a junction and never counts towards a primer"),
    }
    if truncated:
        result["note"] += "; the time budget ran out, so counts cover only part of the reads"
    if not rows:
        result["competence"] = not_applicable(
            f"no alignments with mapping quality >= {min_mapq} in the region",
            "check --reference and --region, or lower --min-mapq")
    else:
        result["consensus"] = [_with_competence(r, scores, i, truncated)
                               for i, r in enumerate(rows)]
        result["competence"] = result["consensus"][0]["competence"]
    if discounted and result["consensus"]:
        spot = [f"read edges at {len(discounted)} position(s) were not counted as breaks "
                "(contig ends or amplicon primers, see discounted): a break exactly there "
                "would be missed"]
        for row in result["consensus"]:
            row["competence"] = with_warnings(row["competence"], spot)
        result["competence"] = result["consensus"][0]["competence"]
    if job.warnings:
        result["warnings"] = job.warnings
        for row in result["consensus"]:
            row["competence"] = with_warnings(row["competence"], result["warnings"])
        result["competence"] = with_warnings(result["competence"], result["warnings"]) \
            if not result["consensus"] else result["consensus"][0]["competence"]
    _share_common_hedges(result)
    result["provenance"] = provenance(*ref.provenance(), *job.index_provenance)
    return declared(result, HEDGES)


# Why a read edge is not a break, said once per output (`discounted_why`) for the rows' codes.
DISCOUNT_WHY = {
    "contig's first base": "reads start here because the sequence does, not at a break",
    "contig's last base": "reads end (or are clipped) here because the sequence does, not at a "
                          "break",
    "primer (reads start)": f"most reads covering these bases (share) start within "
                            f"{PRIMER_WINDOW} bases, not split there, and almost none end "
                            "there: a primer or the sequenced edge (at a break reads end on "
                            "one side as others start on the other, or split across it)",
    "primer (reads end)": f"most reads covering these bases (share) end within {PRIMER_WINDOW} "
                          "bases, not split there, and almost none start there: a primer or the "
                          "sequenced edge",
}


def _share_common_hedges(result: dict) -> None:
    """Blind spots and remedy that every consensus row repeats are said once, in the top-level
    competence (and the first row's); the other rows keep what is theirs (the output is read
    into an agent's context, so it stays small)."""
    rows = result["consensus"]
    if len(rows) < 2:
        return
    comps = [r["competence"] for r in rows]
    common = set(comps[0].explain()["blind_spots"] if hasattr(comps[0], "explain")
                 else comps[0]["blind_spots"])
    for c in comps[1:]:
        common &= set(c.explain()["blind_spots"] if hasattr(c, "explain") else c["blind_spots"])
    for row in rows[1:]:
        c = row["competence"]
        c = c.explain() if hasattr(c, "explain") else dict(c)
        c["blind_spots"] = [b for b in c["blind_spots"] if b not in common]
        if c.get("remedy") == (comps[0].explain() if hasattr(comps[0], "explain")
                               else comps[0]).get("remedy"):
            c["remedy"] = "as the first row's"
        row["competence"] = c


def _score(row: dict) -> tuple[int, int]:
    """Reads times the number of signatures that agree: a break seen by starts, ends, clips
    and indels alike outranks a pile of one signature (amplicon ends, indel noise)."""
    return row["support"] * len(row["agreeing"]), row["support"]


def _ranked_rows(tables, top: int):
    """The `top` positions by score as dicts, and every position's score (sorted, descending)."""
    import numpy as np

    all_scores, picked = [], []
    for contig, pos, cols, crossing in tables:
        support = cols["starts"] + cols["ends"] + cols["clips"] + cols["indels"]
        need = np.maximum(MIN_AGREE, AGREE_SHARE * support)
        n_agree = sum((cols[k] >= need).astype(np.int64) for k in KINDS)
        score = support * n_agree
        all_scores.append(np.stack([score, support], axis=1))
        # Sort by score, then support, both descending; keep the best `top` of this contig.
        order = np.lexsort((-support, -score))[:top]
        for j in order[support[order] > 0].tolist():  # discounted edges leave nothing
            counts = {k: int(cols[k][j]) for k in KINDS}
            s = int(support[j])
            need_j = max(MIN_AGREE, AGREE_SHARE * s)
            picked.append({"contig": contig, "pos": int(pos[j]), **counts, "support": s,
                           "agreeing": [k for k in KINDS if counts[k] >= need_j],
                           "intact": max(0, int(crossing[j]) - counts["indels"])})
    picked.sort(key=_score, reverse=True)
    scores = np.concatenate(all_scores) if all_scores else np.zeros((0, 2), dtype=np.int64)
    scores = scores[np.lexsort((-scores[:, 1], -scores[:, 0]))]
    return picked[:top], scores


def _with_competence(row: dict, scores, i: int, truncated: bool) -> dict:
    """Competence for the i-th ranked row; `scores` holds every position's (score, support)."""
    import numpy as np

    key = _score(row)
    top_score = int(scores[0, 0])
    runner_score = int(scores[1, 0]) if i == 0 and len(scores) > 1 else top_score
    same = int(np.sum((scores[:, 0] == key[0]) & (scores[:, 1] == key[1])))
    ties = max(0, same - 1)
    alternatives = max(0, int(np.sum(scores[:, 0] >= 0.5 * key[0])) - 1) if key[0] else 0
    depth = row["support"] + row["intact"]
    spots = []
    if depth:
        spots.append(f"depth {depth} here: a break carried by fewer than ~{max(1, math.ceil(300 / depth))}% "
                     f"of molecules would show fewer than {MIN_AGREE + 1} reads")
    if row["agreeing"] and not row["indels"]:
        spots.append("only read edges (starts, ends, clips) mark this position: amplicon or "
                     "fragment ends and adapters left on reads look the same as a break")
    if row["indels"] and not (row["starts"] or row["ends"] or row["clips"]):
        spots.append("only indels support this position: the break may lie anywhere in their span")
    spots.append("rearrangements longer than the reads show only as clips (no mate/supplementary "
                 "partner is followed)")
    if truncated:
        spots.append("time budget ran out: only part of the reads were counted")
    agree = len(row["agreeing"])
    # Saturating in reads, rising with agreeing signatures, shared with the runner-up.
    rival = runner_score if i == 0 else top_score
    conf = (1 - math.exp(-row["support"] / 5)) * (0.4 + 0.15 * agree) * (
        key[0] / (key[0] + rival) if key[0] + rival else 0.0)
    margin = 1 - runner_score / key[0] if i == 0 and key[0] else 0.0
    return {**row, "depth": depth,
            "broken_fraction": round(row["support"] / depth, 4) if depth else None,
            "competence": bounded(conf, margin, alternatives=alternatives, ties=ties,
                                  blind_spots=spots,
                                  remedy="more reads over the site, or --region to focus; check "
                                         "by_signature for the position each signature alone gives")}
