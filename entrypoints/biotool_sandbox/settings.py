"""Every `BIOTOOL_*` variable the launcher reads on the host, or sets in a run's containers,
declared once (commandline/settings.py); docs/settings.md is generated from this list.

A variable compose.yaml interpolates (`${VAR:-default}`) keeps its default there, the one
declaration compose and the launcher's checks both read (engine.variables.compose_defaults):
those are listed in COMPOSE, and only the images, which also start what compose does not
(Harbor tasks, the Inspect providers' image check), declare one here too, held equal to
compose.yaml's by tests/unit/test_settings.py.
"""

from __future__ import annotations

from pathlib import Path

from commandline.kinds import Number, Size, count, existing_file, existing_folder
from commandline.settings import Setting, declared

# Images and limits, as compose.yaml reads them.
IMAGE = Setting("BIOTOOL_IMAGE", "biotool-sandbox:latest", str,
                "the sandbox image (--image)")
EGRESS_IMAGE = Setting("BIOTOOL_EGRESS_IMAGE", "biotool-egress:latest", str,
                       "the egress proxy image (--egress-image)")
CUDA_IMAGE = Setting("BIOTOOL_CUDA_IMAGE", "biotool-sandbox:cuda", str,
                     "the sandbox image of --mode gpu")
RUNTIME = Setting("BIOTOOL_RUNTIME", None, str,
                  "the sandbox's OCI runtime, e.g. runsc for gVisor (--runtime; default the "
                  "engine's)")
CPUS = Setting("BIOTOOL_CPUS", None, Number(float, 0.01), "the sandbox's CPU limit (--cpus)")
MEM_LIMIT = Setting("BIOTOOL_MEM_LIMIT", None, Size(), "the sandbox's memory limit (--memory)")
WORK_SIZE = Setting("BIOTOOL_WORK_SIZE", None, Size(),
                    "the size of the sandbox's /work tmpfs (--work-size)")
TMP_SIZE = Setting("BIOTOOL_TMP_SIZE", None, Size(), "the size of the sandbox's /tmp tmpfs")
VARTMP_SIZE = Setting("BIOTOOL_VARTMP_SIZE", None, Size(),
                      "the size of the sandbox's /var/tmp tmpfs")
PIDS_LIMIT = Setting("BIOTOOL_PIDS_LIMIT", None, count(),
                     "the most processes the sandbox may hold")

HOST_MEMORY_SHARE = Setting("BIOTOOL_HOST_MEMORY_SHARE", 0.9, Number(float, 0, 4, min_open=True),
                            "the share of the host's memory all runs' limits may reserve")
COMPOSE_FILE = Setting("BIOTOOL_COMPOSE_FILE", None, existing_file(),
                       "the compose file of the stack (--compose-file; default the checkout's)")
NCBI_RELAY = Setting("BIOTOOL_NCBI_RELAY", None, str,
                     "https://HOST:PORT of the site's NCBI relay every run's egress sends NCBI "
                     "requests to (--ncbi-relay); passed on to the egress")
NCBI_RELAY_TLS = Setting("BIOTOOL_NCBI_RELAY_TLS", None, existing_folder(),
                         "the folder of the relay's site-ca.pem, client.pem and client.key "
                         "(--ncbi-relay-tls); passed on to the egress")

# The Apptainer provider (biotool-apptainer), each overridden by its ApptainerConfig field.
APPTAINER = Setting("BIOTOOL_APPTAINER", None, str,
                    "the apptainer executable (default the one on PATH)")
SIF = Setting("BIOTOOL_SIF", None, existing_file(), "the sandbox's SIF image (`make sif`)")
SITE = Setting("BIOTOOL_SITE", None, existing_folder(),
               "a site overlay mounted read-only at the image's BIOTOOL_SITE_DIR")
SCRATCH = Setting("BIOTOOL_SCRATCH", None, existing_folder(),
                  "where each instance's writable folders live (default $TMPDIR, else /tmp)")

# Set by the launcher in a run's containers, read there.
EGRESS_EXTRA_CA = Setting("BIOTOOL_EGRESS_EXTRA_CA", None, Path,
                          "set in the egress by --extra-ca: a CA it trusts upstream (tests: a "
                          "mock NCBI)")
EGRESS_HOLD_S = Setting("BIOTOOL_EGRESS_HOLD_S", None, str,
                        "passed on to the egress (a Harbor task sets its own): seconds a request "
                        "waits for NCBI's slot before a 429")
EGRESS_BLAST = Setting("BIOTOOL_EGRESS_BLAST", None, str,
                       "set in the egress by `up --blast` (a Harbor task that searches): the "
                       "run declares BLAST")
HARBOR_EGRESS_CONTROL = Setting("BIOTOOL_HARBOR_EGRESS_CONTROL", None, str,
                                "set in a Harbor task's `main`: Harbor's egress sidecar mode, "
                                "which its healthcheck refuses")

COMPOSE = (IMAGE, EGRESS_IMAGE, CUDA_IMAGE, RUNTIME, CPUS, MEM_LIMIT, WORK_SIZE, TMP_SIZE,
           VARTMP_SIZE, PIDS_LIMIT, EGRESS_HOLD_S, EGRESS_BLAST)

# Host setup.
PODMAN_USER = Setting("BIOTOOL_PODMAN_USER", "biotool-podman", str,
                      "the user image/runtime/podman-user.sh makes for rootless Podman")

SETTINGS = declared(globals())
