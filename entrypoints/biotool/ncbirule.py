"""NCBI's usage rule for the BLAST URL API, written once.

NCBI asks every client address to send at most one request every 10 seconds and to poll one
RID at most once a minute. biotool's client keeps the rule politely (taxonomy/ncbi.py and
taxonomy/pacing.py); the egress gate and the site's NCBI relay (image/egress/) enforce it.
No imports: the Dockerfile copies this file into the egress image too
(/usr/local/lib/egress/biotool/ncbirule.py), so both images read these very numbers.
"""

HOST = "blast.ncbi.nlm.nih.gov"
MIN_INTERVAL_S = 10.0   # seconds between any two requests from one address
POLL_INTERVAL_S = 60.0  # seconds between two polls of one RID
RULE = (f"NCBI allows one request every {MIN_INTERVAL_S:.0f} s per address and one poll "
        f"per RID every {POLL_INTERVAL_S:.0f} s")

# How long the egress holds one request waiting for its fair turn at NCBI's slot before a 429
# (the client then waits and asks again): a per-run setting (image/egress/settings.py), bounded
# by biotool's own longest request (taxonomy/ncbi.py reads for at most 300 s: past that its
# client has left).
DEFAULT_HOLD_S = 30.0
MIN_HOLD_S, MAX_HOLD_S = 1.0, 240.0


def hold_from(text: str | None, name: str) -> float:
    """The hold a run's egress was given (by `name`), DEFAULT_HOLD_S when unset; ValueError
    naming the value when it is not a number of seconds within the bounds."""
    if text is None or not text.strip():
        return DEFAULT_HOLD_S
    try:
        hold = float(text)
    except ValueError:
        hold = float("nan")
    if not MIN_HOLD_S <= hold <= MAX_HOLD_S:  # NaN fails both
        raise ValueError(f"{name}={text.strip()[:40]!r} is not a number of seconds from "
                         f"{MIN_HOLD_S:.0f} to {MAX_HOLD_S:.0f}")
    return hold


# A run that declares it will search (an egress started with BIOTOOL_EGRESS_BLAST=1,
# image/egress/settings.py: `up --blast`, a Harbor task that searches) is counted at its start against what the host's schedule
# sustains: one contact every SLOT_S (the gates' interval, NCBI's plus JITTER_S), each waiting
# run served once a round, so a round of n declared runs must fit within the shortest hold
# among them.
JITTER_S = 0.5  # what the gates add to NCBI's intervals for network jitter
SLOT_S = MIN_INTERVAL_S + JITTER_S


def sustained(holds) -> int:
    """How many declared runs the schedule serves, each within every one's hold."""
    return int(min(holds) // SLOT_S)
