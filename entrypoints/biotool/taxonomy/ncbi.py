"""NCBI BLAST through its URL API, within NCBI's published rules.

Protocol (https://blast.ncbi.nlm.nih.gov/doc/blast-help/developerinfo.html): `CMD=Put` by
POST returns a page whose QBlastInfo comment holds `RID = ` and `RTOE = ` (seconds until the
result is expected); after RTOE, `CMD=Get&FORMAT_OBJECT=SearchInfo` answers `Status=WAITING`,
`READY`, `FAILED` or `UNKNOWN`; when READY, `CMD=Get&FORMAT_TYPE=JSON2_S` returns the report.
Pacing (NCBI's rule, biotool/ncbirule.py: one contact every 10 s, one poll per RID per
minute) is kept politely by `Pacer` and enforced host-wide by the egress gate, whose 429 (X-Biotool-Egress: paced) is
waited out, not failed.
Lessons kept: at most 40 queries per submission (large ones are silently capped), POST not
GET (HTTP 414), few hits per query (huge replies arrive cut off), truncated JSON halves the
batch, an empty report is a failed search, and an HTML page instead of JSON is named.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlencode, urlsplit

from biotool import ncbirule, settings
from biotool.deadline import Deadline
from biotool.output import InputError, ToolFailure
from biotool.taxonomy.pacing import Pacer, PastDeadline, pacing_dir
from biotool.taxonomy.searched import SearchResult

NCBI_URL = f"https://{ncbirule.HOST}/blast/Blast.cgi"
SAFETY_MARGIN = 1.0        # seconds added to both intervals when talking to NCBI itself
MAX_BATCH = 40             # queries per submission; larger ones are silently capped
MAX_INFLIGHT = 3           # submissions waiting at once
TOOL = "biotool"

_QBLAST = re.compile(r"QBlastInfoBegin(.*?)QBlastInfoEnd", re.S)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.S | re.I)
_RATE = re.compile(r"too many requests|rate limit|usage limit|exceeded|overload", re.I)


class Truncated(Exception):
    """A report that cannot be complete: cut-off JSON, or fewer query reports than queries."""


@dataclass
class Settings:
    url: str = NCBI_URL
    min_interval: float = ncbirule.MIN_INTERVAL_S
    poll_interval: float = ncbirule.POLL_INTERVAL_S
    hitlist_size: int = 5
    email: str = ""
    database: str = "nt"
    program: str = "blastn"

    @classmethod
    def from_env(cls, **kw) -> "Settings":
        """Settings with test overrides from the environment, never below NCBI's own rules.

        BIOTOOL_NCBI_URL points at another server (a mock); the interval overrides
        BIOTOOL_NCBI_MIN_INTERVAL / BIOTOOL_NCBI_POLL_INTERVAL may shorten the waits only for
        a server that is not NCBI's, so an agent cannot talk itself out of the rules.
        """
        s = cls(**kw)
        s.url = settings.NCBI_URL.get() or s.url
        is_ncbi = is_ncbi_url(s.url)
        for attr, setting in (("min_interval", settings.NCBI_MIN_INTERVAL),
                              ("poll_interval", settings.NCBI_POLL_INTERVAL)):
            try:
                value = setting.get()
            except ValueError as exc:
                raise InputError(str(exc)) from None
            if value is not None:
                floor = getattr(cls, attr) if is_ncbi else 0.0
                setattr(s, attr, max(floor, value))
        if not s.email:
            s.email = settings.NCBI_EMAIL.get()
        return s


def is_ncbi_url(url: str) -> bool:
    """Whether `url` names NCBI's own server, however the host is spelled (case, final dot)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return host.lower().rstrip(".") == ncbirule.HOST


def qblast_info(text: str) -> dict:
    """Key/value pairs of every QBlastInfo block of a page ("RID", "RTOE", "Status", ...)."""
    out = {}
    for block in _QBLAST.findall(text):
        for line in block.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip():
                out[key.strip()] = value.strip()
    return out


def describe_page(body: str) -> str:
    """A short name for an unexpected page: its HTML title, or its first words."""
    m = _TITLE.search(body)
    if m:
        return f"an HTML page titled {' '.join(m.group(1).split())[:80]!r}"
    words = " ".join(re.sub(r"<[^>]+>", " ", body).split())[:80]
    return f"an HTML page ({words!r})" if body.lstrip().startswith("<") else f"{words!r}"


def looks_rate_limited(status: int, body: str) -> bool:
    return status == 429 or bool(_RATE.search(re.sub(r"<[^>]+>", " ", body)))


def parse_report(body: bytes, rid: str, query_ids: list[str], top: int) -> dict[str, list]:
    """Hits per query id from a JSON2_S report; only taxonomic and alignment fields are kept."""
    text = body.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
    if not text:
        raise ToolFailure(f"NCBI BLAST RID {rid}: empty report; the search failed "
                          f"(this is not 'nothing found')")
    if text.startswith("<"):
        raise ToolFailure(f"NCBI BLAST RID {rid}: got {describe_page(text)} instead of the "
                          f"JSON report")
    try:
        doc = json.loads(text)
    except ValueError:
        if text.startswith("{"):
            raise Truncated(f"RID {rid}: JSON report cut off after {len(text)} bytes") from None
        raise ToolFailure(f"NCBI BLAST RID {rid}: reply is not JSON: "
                          f"{describe_page(text)}") from None
    reports = doc.get("BlastOutput2") if isinstance(doc, dict) else None
    if isinstance(reports, dict):
        reports = [reports]
    if not reports:
        raise ToolFailure(f"NCBI BLAST RID {rid}: empty report (no BlastOutput2 entries); the "
                          f"search failed (this is not 'nothing found')")
    if len(reports) < len(query_ids):
        raise Truncated(f"RID {rid}: {len(reports)} query reports for {len(query_ids)} queries")
    out: dict[str, list] = {}
    for i, entry in enumerate(reports[:len(query_ids)]):
        search = (((entry or {}).get("report") or {}).get("results") or {}).get("search")
        if not isinstance(search, dict):
            raise ToolFailure(f"NCBI BLAST RID {rid}: report {i + 1} has no results.search")
        title = str(search.get("query_title", "")).split(" ")[0]
        qid = title if title in query_ids and title not in out else query_ids[i]
        try:
            out[qid] = [h for h in (_hit(x, search.get("query_len"))
                                    for x in (search.get("hits") or [])[:top]) if h]
        except (AttributeError, TypeError, ValueError, ZeroDivisionError):
            raise ToolFailure(f"NCBI BLAST RID {rid}: report {i + 1} has malformed hits "
                              f"(not the JSON2_S layout)") from None
    return out


def _hit(hit: dict, query_len) -> dict | None:
    descs, hsps = hit.get("description") or [{}], hit.get("hsps") or []
    if not hsps:
        return None
    d, h = descs[0], max(hsps, key=lambda x: x.get("bit_score", 0))
    align = h.get("align_len") or 0
    return {
        "accession": d.get("accession") or d.get("id"),
        "title": d.get("title", ""),
        "taxid": d.get("taxid"),
        "sciname": d.get("sciname") or "",
        "bit_score": h.get("bit_score"),
        "evalue": h.get("evalue"),
        "pident": round(100.0 * h.get("identity", 0) / align, 2) if align else None,
        "align_len": align,
        "query_len": query_len,
        "query_from": h.get("query_from"),
        "query_to": h.get("query_to"),
        "hit_from": h.get("hit_from"),
        "hit_to": h.get("hit_to"),
    }


@dataclass
class _Job:
    batch: list
    rid: str = ""
    not_before: float = 0.0
    polls: int = 0
    status: str = ""


@dataclass
class BlastClient:
    settings: Settings
    pacer: Pacer
    clock: Callable[[], float] = time.time
    log: Callable[[str], None] = lambda msg: None
    contacts: int = 0  # requests sent, for the result's record
    paced: int = 0     # 429s from the egress gate (NCBI's host-wide slot was taken)

    def _http(self, method: str, params: dict, deadline: float) -> "object":
        """One request; while the egress gate answers 429 (paced: another run holds NCBI's
        host-wide slot), wait its Retry-After and ask again, until the deadline."""
        while True:
            resp = self._http_once(method, params, deadline)
            if resp.status != 429 or resp.headers.get("x-biotool-egress") != "paced":
                return resp
            try:
                # The gate's longest wait is a poll of one RID; more is no wait it meant.
                wait = min(ncbirule.POLL_INTERVAL_S,
                           max(1.0, float(resp.headers.get("retry-after"))))
            except (TypeError, ValueError):  # no usable Retry-After: one NCBI interval
                wait = ncbirule.MIN_INTERVAL_S
            self.paced += 1
            if self.clock() + wait > deadline:
                raise PastDeadline(self.clock() + wait)
            self.log(f"NCBI BLAST: the egress paced this request ({resp.text.strip()[:160]}); "
                     f"retrying in {wait:.0f} s")
            self.pacer.sleep(wait)

    def _http_once(self, method: str, params: dict, deadline: float) -> "object":
        from biotool import net

        params = {**params, "tool": TOOL, **({"email": self.settings.email}
                                             if self.settings.email else {})}
        budget = max(5.0, min(300.0, deadline - self.clock()))
        if method == "POST":
            return net.request("POST", self.settings.url, body=urlencode(params).encode(),
                               headers={"Content-Type": "application/x-www-form-urlencoded"},
                               timeout=budget)
        return net.request("GET", f"{self.settings.url}?{urlencode(params)}", timeout=budget)

    def _contact(self, deadline: float, rid: str | None = None, not_before: float = 0.0) -> float:
        slot = self.pacer.wait_turn(rid=rid, not_before=not_before, deadline=deadline)
        self.contacts += 1
        return slot

    def put(self, batch: list, deadline: float) -> tuple[str, float, float]:
        from biotool.taxonomy.sequences import to_fasta

        s = self.settings
        slot = self._contact(deadline)
        resp = self._http("POST", {"CMD": "Put", "PROGRAM": s.program, "DATABASE": s.database,
                                   "QUERY": to_fasta(batch), "HITLIST_SIZE": str(s.hitlist_size),
                                   "FORMAT_TYPE": "JSON2_S"}, deadline)
        text = resp.text
        if resp.status != 200 or looks_rate_limited(resp.status, text) and "RID" not in qblast_info(text):
            if looks_rate_limited(resp.status, text):
                raise ToolFailure(f"NCBI BLAST ({urlsplit(s.url).hostname}) refused the submission "
                                  f"with a rate-limit page (HTTP {resp.status}, "
                                  f"{describe_page(text)}); wait and retry later")
            raise ToolFailure(f"NCBI BLAST ({urlsplit(s.url).hostname}) answered the submission "
                              f"with HTTP {resp.status}: {describe_page(text)}")
        info = qblast_info(text)
        rid = info.get("RID", "")
        if not rid:
            raise ToolFailure(f"NCBI BLAST gave no RID for the submission of {len(batch)} "
                              f"queries: got {describe_page(text)}")
        try:
            rtoe = float(info.get("RTOE", "0") or 0)
        except ValueError:
            rtoe = 0.0
        self.log(f"NCBI BLAST: submitted {len(batch)} queries as RID {rid} (RTOE {rtoe:.0f} s)")
        # RTOE counts from NCBI's answer, not from our reservation of the slot.
        return rid, rtoe, max(slot, self.clock())

    def poll(self, job: _Job, deadline: float) -> str:
        slot = self._contact(deadline, rid=job.rid, not_before=job.not_before)
        resp = self._http("GET", {"CMD": "Get", "FORMAT_OBJECT": "SearchInfo", "RID": job.rid},
                          deadline)
        job.polls += 1
        status = qblast_info(resp.text).get("Status", "")
        if resp.status != 200 or not status:
            if looks_rate_limited(resp.status, resp.text):
                raise ToolFailure(f"NCBI BLAST RID {job.rid}: rate-limit page while polling "
                                  f"(HTTP {resp.status}, {describe_page(resp.text)})")
            raise ToolFailure(f"NCBI BLAST RID {job.rid}: no Status in the SearchInfo reply "
                              f"(HTTP {resp.status}, {describe_page(resp.text)})")
        job.status = status
        job.not_before = slot + self.settings.poll_interval
        return status

    def fetch(self, job: _Job, deadline: float, top: int) -> dict[str, list]:
        self._contact(deadline)
        resp = self._http("GET", {"CMD": "Get", "FORMAT_TYPE": "JSON2_S", "RID": job.rid},
                          deadline)
        if resp.status != 200:
            kind = "rate-limit page" if looks_rate_limited(resp.status, resp.text) else "error"
            raise ToolFailure(f"NCBI BLAST RID {job.rid}: HTTP {resp.status} {kind} fetching the "
                              f"report ({describe_page(resp.text)})")
        return parse_report(resp.body, job.rid, [q for q, _ in job.batch], top)

    def search(self, queries: list, top: int, budget: Deadline) -> SearchResult:
        """Every query searched in batches of at most 40, merged; partial when time runs out."""
        # NCBI's pacing is held on the wall clock across processes: the budget left, on it.
        deadline = self.clock() + budget.left()
        queue = [queries[i:i + MAX_BATCH] for i in range(0, len(queries), MAX_BATCH)]
        inflight: list[_Job] = []
        hits: dict[str, list] = {}
        rids, halvings = [], 0
        try:
            while queue or inflight:
                if queue and len(inflight) < MAX_INFLIGHT:
                    batch = queue.pop(0)
                    rid, rtoe, slot = self.put(batch, deadline)
                    rids.append(rid)
                    inflight.append(_Job(batch, rid, not_before=slot + rtoe))
                    continue
                job = min(inflight, key=lambda j: j.not_before)
                status = self.poll(job, deadline)
                if status == "WAITING":
                    continue
                inflight.remove(job)
                if status == "FAILED":
                    raise ToolFailure(f"NCBI BLAST RID {job.rid}: Status=FAILED; the search "
                                      f"failed at NCBI (not 'nothing found')")
                if status == "UNKNOWN":
                    raise ToolFailure(f"NCBI BLAST RID {job.rid}: Status=UNKNOWN; NCBI does not "
                                      f"know this RID (expired or never accepted)")
                if status != "READY":
                    raise ToolFailure(f"NCBI BLAST RID {job.rid}: unexpected Status={status}")
                try:
                    hits.update(self.fetch(job, deadline, top))
                except Truncated as exc:
                    if len(job.batch) == 1:
                        raise ToolFailure(f"NCBI BLAST {exc}; query {job.batch[0][0]} alone "
                                          f"still gives a truncated reply") from None
                    half = len(job.batch) // 2
                    halvings += 1
                    self.log(f"NCBI BLAST: {exc}; retrying as two batches of "
                             f"{half} and {len(job.batch) - half}")
                    queue[:0] = [job.batch[:half], job.batch[half:]]
        except PastDeadline:
            if not hits:
                what = (f"RID {inflight[0].rid} still {inflight[0].status or 'not polled'} after "
                        f"{inflight[0].polls} polls") if inflight else "no search finished"
                raise ToolFailure(f"NCBI BLAST did not finish within --timeout {budget.seconds:.0f} s "
                                  f"({what})") from None
        from biotool.provenance import used

        done = tuple(q for q, _ in queries if q in hits)
        server, database = urlsplit(self.settings.url).hostname, self.settings.database
        return SearchResult(hits, done, len(done) < len(queries), where={
            "server": server, "database": database, "rids": rids, "halvings": halvings,
            "contacts": self.contacts,
            "pacing": {"min_interval_s": self.settings.min_interval,
                       "poll_interval_s": self.settings.poll_interval,
                       "max_queries_per_submission": MAX_BATCH}},
            used=used("service", f"NCBI BLAST {database}", None, server=server, rids=rids))


def remote_search(queries: list, top: int, deadline: Deadline, database: str, email: str,
                  clock: Callable[[], float] = time.time,
                  sleep: Callable[[float], None] = time.sleep,
                  log=lambda m: None) -> SearchResult:
    """Search `queries` [(id, seq)] at NCBI (or BIOTOOL_NCBI_URL) with pacing held on disk."""
    settings = Settings.from_env(hitlist_size=max(1, min(top, 10)), email=email,
                                 database=database)
    # A second of margin at NCBI: a slot is reserved just before its request is sent, so
    # network jitter could otherwise bring two requests a few milliseconds under the rule.
    margin = SAFETY_MARGIN if is_ncbi_url(settings.url) else 0.0
    pacer = Pacer(pacing_dir(), settings.min_interval + margin,
                  settings.poll_interval + margin, clock, sleep)
    client = BlastClient(settings, pacer, clock=clock, log=log)
    return client.search(queries, top, deadline)
