"""Every `BIOTOOL_*` variable the egress image reads, declared once (commandline/settings.py);
docs/settings.md is generated from this list. The rules file's path (BIOTOOL_RULES) is
biotool's setting, read by the rules reader both images share (biotool/settings.py).

Each is set by whoever starts the egress: the launcher's compose overrides, a Harbor task,
the Kubernetes values (biotool_sandbox/settings.py declares what it sets).
"""

from __future__ import annotations

from pathlib import Path

from biotool import ncbirule  # copied beside it in the image
from commandline.kinds import Number  # copied beside it in the image
from commandline.settings import Setting, declared, flag  # copied beside it in the image

NCBI_RELAY = Setting("BIOTOOL_NCBI_RELAY", None, str,
                     "https://HOST:PORT of the site's NCBI relay: the gate sends NCBI requests "
                     "there only (gatekeeper --relay)")
NCBI_RELAY_TLS = Setting("BIOTOOL_NCBI_RELAY_TLS", None, Path,
                         "the folder of the gate's site-ca.pem, client.pem and client.key for "
                         "the relay (gatekeeper --relay-tls)")
HOLD = Setting("BIOTOOL_EGRESS_HOLD_S", ncbirule.DEFAULT_HOLD_S,
               Number(float, ncbirule.MIN_HOLD_S, ncbirule.MAX_HOLD_S),
               "seconds a request waits for its turn at NCBI's slot before a 429 "
               "(gatekeeper --hold)")
BLAST = Setting("BIOTOOL_EGRESS_BLAST", False, flag,
                "this run declares BLAST: counted at its start against what the host's NCBI "
                "schedule sustains, refused past it (gatekeeper --blast)")
EXTRA_CA = Setting("BIOTOOL_EGRESS_EXTRA_CA", None, Path,
                   "a CA the gate and Squid trust upstream (tests: a mock NCBI); read by "
                   "entrypoint.sh")

SETTINGS = declared(globals())
