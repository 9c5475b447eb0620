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
