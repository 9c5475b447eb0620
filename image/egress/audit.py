"""The records the gate and the relay write: one `PREFIX {json}` line each, on stdout (the
container log) and, for a run's gate, in the run's bounded audit store (auditstore.py).

String fields are cut before escaping and the JSON is ASCII only, so nothing an agent sends
can make a record longer than its caps or forge a second line. Standard library only.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import auditwire

GATE = auditwire.GATE_PREFIX    # a run's gate (gatekeeper.py): the run's audit
RELAY = auditwire.RELAY_PREFIX  # the site's NCBI relay (relay.py)
FIELD_CAP = 200           # characters of any string field, cut before escaping
URL_CAP = 600             # characters of a record's url
# Fields cut at URL_CAP rather than FIELD_CAP: the url, and a Put's per-record sequence digests
# (auditwire.QUERY_SEQS_LISTED of them, 359 characters).
LONG_FIELDS = ("url", "query_seqs")


def cap(value, limit: int = FIELD_CAP):
    """A string field cut to `limit` characters before it is escaped (JSON, ASCII only)."""
    if value is None or isinstance(value, (int, float, bool)):
        return value
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


def line(prefix: str, rec: dict) -> str:
    return f"{prefix} {json.dumps(rec, ensure_ascii=True, separators=(',', ':'))}\n"


class Records:
    """One process's record writer; `store` (an auditstore.Store) keeps a run's records."""

    def __init__(self, prefix: str, store=None):
        self.prefix, self.store = prefix, store
        self.lock = threading.Lock()

    def write(self, rec: dict, how: str = "flood", echo: bool = True) -> str:
        """Timestamp, cut and write `rec`: "kept", "counted" (a flood past its burst, see
        auditstore.Store.write for `how`), or "" when the store is full and did not keep it.
        echo=False: to the store alone, not stdout, for a record written while a request
        holds its NCBI slot (a container log the engine drains slowly can block a write);
        without a store it goes to stdout all the same."""
        rec = {"time": round(time.time(), 3),
               **{k: cap(v, URL_CAP if k in LONG_FIELDS else FIELD_CAP) for k, v in rec.items()}}
        if echo or self.store is None:
            text = line(self.prefix, rec)
            with self.lock:
                sys.stdout.write(text)
                sys.stdout.flush()
        return self.store.write(rec, how) if self.store is not None else "kept"

    @property
    def full(self) -> bool:
        return self.store is not None and self.store.full
