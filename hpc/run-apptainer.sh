#!/bin/bash
# One episode in the SIF as hpc/episodes.sbatch calls it: RUNTIME WORKDIR COMMAND_LINE.
# No network (--net --network none), a clean environment (--containall), the site overlay
# read-only, and /tmp on the episode's node-local scratch (Apptainer's default is a 64 MB
# in-memory session directory, too small for an alignment's temporary files).
# With BIOTOOL_NCBI_RELAY set (and BIOTOOL_NCBI_RELAY_TLS, BIOTOOL_EGRESS_SIF), the episode
# gets its own egress gate, its only way out, which sends only to the site's relay
# (hpc/episode-gate.sh); the gate's audit goes to $BIOTOOL_EPISODE_DIR/audit.json.
set -euo pipefail
work=$1 line=$2
here=$(cd "$(dirname "$0")" && pwd)
site=()
[[ -n "${BIOTOOL_SITE:-}" ]] && site=(--bind "$BIOTOOL_SITE:/opt/biotool-site:ro")
tmp=()
[[ -n "${BIOTOOL_EPISODE_TMP:-}" ]] && tmp=(--workdir "$BIOTOOL_EPISODE_TMP")
sif=${BIOTOOL_SIF:?set BIOTOOL_SIF to the image}
if [[ -z "${BIOTOOL_NCBI_RELAY:-}" ]]; then
    exec apptainer exec --containall --net --network none "${tmp[@]}" "${site[@]}" \
        --bind "$work:/work" --pwd /work "$sif" bash -c "$line"
fi
source "$here/episode-gate.sh"
trap gate_down EXIT
trap 'exit 143' TERM INT  # the template's timeout: the gate still goes down (the EXIT trap)
gate_up
apptainer exec --containall --net --network none "${tmp[@]}" "${site[@]}" "${episode_gate[@]}" \
    --bind "$work:/work" --pwd /work "$sif" /usr/bin/env "${episode_env[@]}" \
    bash -c "$episode_pipe; $line"
