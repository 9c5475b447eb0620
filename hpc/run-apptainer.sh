#!/bin/bash
# One episode in the SIF as hpc/episodes.sbatch calls it: RUNTIME WORKDIR COMMAND_LINE.
# No network (--net --network none), a clean environment (--containall), the site overlay
# read-only, and /tmp on the episode's node-local scratch (Apptainer's default is a 64 MB
# in-memory session directory, too small for an alignment's temporary files).
set -euo pipefail
work=$1 line=$2
site=()
[[ -n "${BIOTOOL_SITE:-}" ]] && site=(--bind "$BIOTOOL_SITE:/opt/biotool-site:ro")
tmp=()
[[ -n "${BIOTOOL_EPISODE_TMP:-}" ]] && tmp=(--workdir "$BIOTOOL_EPISODE_TMP")
exec apptainer exec --containall --net --network none "${tmp[@]}" "${site[@]}" \
    --bind "$work:/work" --pwd /work "${BIOTOOL_SIF:?set BIOTOOL_SIF to the image}" \
    bash -c "$line"
