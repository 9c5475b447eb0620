#!/bin/bash
# The docker run shape of hpc/run-apptainer.sh (tests/biotool_testing/images.py's APPTAINER_SHAPE):
# no network, an arbitrary UID with no passwd entry, a read-only root, a private /tmp, a HOME
# it cannot write, the site overlay read-only. For tests and docker-only nodes.
set -euo pipefail
work=$1 line=$2
site=()
[[ -n "${BIOTOOL_SITE:-}" ]] && site=(-v "$BIOTOOL_SITE:/opt/biotool-site:ro")
# Apptainer runs as the caller, who owns /work; an arbitrary UID needs the folder opened up.
chmod 0777 "$work"
# dockerd, not Slurm, owns the container's cgroup, so the job's allocation is passed on.
exec docker run --rm --network none --user "${BIOTOOL_DOCKER_USER:-12345:12345}" \
    --read-only --tmpfs /tmp:size=2g -e HOME=/home/agent \
    --cpus "${SLURM_CPUS_PER_TASK:-1}" --memory "${SLURM_MEM_PER_NODE:-8192}m" \
    --label "biotool-hpc-episode=${SLURM_JOB_ID:-none}" "${site[@]}" \
    -v "$work:/work" -w /work "${BIOTOOL_IMAGE:-biotool-sandbox:latest}" bash -c "$line"
