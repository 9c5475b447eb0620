"""The egress audit's wire format, written once: what Squid, a run's gate and the site's relay
write (image/egress/) and what the store, the launcher's `audit` and Harbor's verifier read.

A neutral module of its own, neither the launcher's nor the egress's, standard library only:
the project's wheel installs it for the launcher and the sandbox image (Harbor's verifier),
and the Dockerfile copies it into the egress image (/usr/local/lib/egress/auditwire.py), so
every side reads these very names.
"""

import hashlib

SQUID_PREFIX = "BIOTOOL_EGRESS"  # one Squid access-log line per attempt Squid ends itself
GATE_PREFIX = "BIOTOOL_GATE"     # a run's gate (gatekeeper.py): `PREFIX {json}`, the run's audit
RELAY_PREFIX = "BIOTOOL_RELAY"   # the site's NCBI relay (relay.py)
STORE_HEADER = "BIOTOOL_STORE"   # the store's first line: `PREFIX {"holds": [...]}`
# Squid's fields after the prefix, in order (render.py gives each its format code).
SQUID_FIELDS = ("time", "client", "method", "url", "host", "port", "status", "http_status",
                "error", "bytes_sent", "bytes_received")

# The error code of the record squidlog.py writes for each connection Squid closed at accept
# because its client already held client_ip_max_connections (Squid logs those in cache.log
# only, never in its access log).
CONNECTION_CAP = "ERR_CONNECTION_CAP"

# The line a gate writes to its log when it refuses to start (a declared BLAST run past what
# the host's NCBI schedule sustains); the launcher's `up` reports what follows it.
GATE_REFUSED = "egress gate: refused: "

# The gate's bounded audit store on the egress-only state volume (compose's egress-state, the
# egress pod's state emptyDir); entrypoint.sh names the same file.
RUN_STATE = "/var/lib/biotool-egress-run"
# The host-wide NCBI schedule's volume in every egress (compose's ncbi-schedule).
SCHEDULE_DIR = "/var/lib/biotool-egress"
STORE = f"{RUN_STATE}/audit.jsonl"

# Gate records' events. The last three are not attempts: the launcher counts them apart.
REQUEST, DECIDED, TUNNEL, OPEN, TLS, CLOSE = "request", "decided", "tunnel", "open", "tls", "close"
GATE_RESTART, AUDIT_FULL, SUPPRESSED = "gate_restart", "audit_full", "suppressed"
# Not a record of its own either: destinations a counted flood of Squid's lines reached, listed
# for the `suppressed` record with the same `slot` (auditstore.py).
DESTINATIONS = "destinations"

# An allowed Put's record lists a short digest of each query record's sequence (its first
# QUERY_SEQS_LISTED records, comma-joined in `query_seqs`): enough for a verifier to tell which
# reads of a staged sample were searched, without keeping the query.
QUERY_SEQS_LISTED = 40  # biotool's client sends at most 40 records per Put
QUERY_SEQ_DIGEST_HEX = 8
_NOT_LETTERS = bytes(b for b in range(256) if not (65 <= b <= 90 or 97 <= b <= 122))


def query_seq_digest(seq: str) -> str:
    """One query record's digest: its letters only, upper-cased (a FASTA's line breaks, spaces
    and case do not change which sequence was searched), sha256, the first hex digits."""
    letters = seq.encode("ascii", "ignore").translate(None, _NOT_LETTERS).upper()
    return hashlib.sha256(letters).hexdigest()[:QUERY_SEQ_DIGEST_HEX]
