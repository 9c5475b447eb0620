"""Every `BIOTOOL_*` variable biotool reads, declared once (commandline/settings.py): its
name, default, kind and what it does; the modules that read one read it here, and
docs/settings.md is generated from this list.

No project import beyond the command-line layer's two standard-library modules: the egress
image copies this file beside the rules reader (which reads RULES), and the data stage
beside the inventory.
"""

from __future__ import annotations

from pathlib import Path

from commandline.kinds import Number, seconds
from commandline.settings import Setting, declared, flag

# Where things are.
HOME = Setting("BIOTOOL_HOME", Path("/opt/biotool"), Path,
               "where staged items, the manifests and TOOLS.md live")
SITE_DIR = Setting("BIOTOOL_SITE_DIR", None, Path,
                   "a site overlay (staged on the host, mounted read-only) merged into the "
                   "inventory when it holds a staged.json; /opt/biotool-site in the image")
MANIFESTS = Setting("BIOTOOL_MANIFESTS", None, Path,
                    "the manifests folder (default: BIOTOOL_HOME/manifests, else the "
                    "checkout's refs/)")
CACHE = Setting("BIOTOOL_CACHE", None, Path,
                "the cache folder (default: $XDG_CACHE_HOME/biotool, else "
                "$TMPDIR/biotool-cache)")
BUILD_CACHES = Setting("BIOTOOL_BUILD_CACHES", Path("/opt/biotool-caches"), Path,
                       "the library caches computed at image build (numba, matplotlib), "
                       "seeded into the run's caches")
BUILD_INFO = Setting("BIOTOOL_BUILD_INFO", Path("/etc/biotool/build.json"), Path,
                     "the image's build identity that `provenance` reports")
RULES = Setting("BIOTOOL_RULES", None, Path,
                "the rules file (default /etc/biotool/rules.toml, else the checkout's "
                "image/rules.toml); the egress reads the same variable")

# A grader's and the experiment's switches.
REQUIRE_ENFORCED = Setting("BIOTOOL_REQUIRE_ENFORCED", False, flag,
                           "refuse every command (exit 3) when the network is not enforced")
REQUIRE_RUNTIME = Setting("BIOTOOL_REQUIRE_RUNTIME", None, str,
                          "`gvisor`: refuse every command (exit 3) on the host's kernel")
CONFIDENT = Setting("BIOTOOL_CONFIDENT", False, flag,
                    "answer as the experiment's control arm, without the declared hedges")
ARMS = Setting("BIOTOOL_ARMS", None, str,
               "`marked`: both arms at once, the hedges marked (tests only)")
EGRESS_POLICY = Setting("BIOTOOL_EGRESS_POLICY", None, str,
                        "the cluster egress policy a Kubernetes pod runs under (set by "
                        "`biotool-sandbox k8s-values`), tried from inside by `doctor`")
QUIET = Setting("BIOTOOL_QUIET", False, flag,
                "no progress lines on stderr (set by --quiet for the tools it runs)")
ENFORCEMENT_CHECKED = Setting("BIOTOOL_ENFORCEMENT_CHECKED", False, flag,
                              "set by the login shell once it has warned of an open network "
                              "(image/shell/warn.sh)")

# NCBI, remote taxonomy.
NCBI_URL = Setting("BIOTOOL_NCBI_URL", None, str,
                   "the BLAST URL API to search instead of NCBI's (a mock, tests only)")
NCBI_MIN_INTERVAL = Setting("BIOTOOL_NCBI_MIN_INTERVAL", None, Number(float, 0),
                            "seconds between two requests; below NCBI's 10 only for a "
                            "server that is not NCBI's (tests only)")
NCBI_POLL_INTERVAL = Setting("BIOTOOL_NCBI_POLL_INTERVAL", None, Number(float, 0),
                             "seconds between two polls of one RID; below NCBI's 60 only for "
                             "a server that is not NCBI's (tests only)")
NCBI_EMAIL = Setting("BIOTOOL_NCBI_EMAIL", "", str,
                     "the contact address sent to NCBI when --email is not given")
NCBI_PACING_DIR = Setting("BIOTOOL_NCBI_PACING_DIR", None, Path,
                          "the folder of the NCBI schedule every biotool process shares "
                          "(default $TMPDIR/biotool-ncbi-pacing)")

# Image build (arguments of `make image`, read by the staging programs).
STAGE = Setting("BIOTOOL_STAGE", "demo", str,
                "image build argument: the comma-separated sets to stage (demo, production)")
TOFU = Setting("BIOTOOL_TOFU", False, flag,
               "image build argument: stage items the pin lock does not pin yet (trust on "
               "first use)")
SOURCE_MIRROR = Setting("BIOTOOL_SOURCE_MIRROR", None, str,
                        "image build argument: fetch every source through this base URL "
                        "(tests only)")
FETCH_BACKOFF = Setting("BIOTOOL_FETCH_BACKOFF", 2.0, seconds(zero_ok=True),
                        "seconds before the first retry of a failed fetch, doubled each time")

SETTINGS = declared(globals())
