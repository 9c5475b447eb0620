#!/bin/bash
# One episode as an enforced run, as hpc/episodes.sbatch calls it: RUNTIME WORKDIR COMMAND_LINE.
# For docker nodes and the episodes that need remote BLAST: `biotool-sandbox up` starts the
# sandbox and its egress gate (with BIOTOOL_NCBI_RELAY and BIOTOOL_NCBI_RELAY_TLS in the job's
# environment the gate sends only to the site's relay, which fails closed), the line runs as
# the agent, and the run is brought down whatever happens. The line's stdout and stderr come
# out as the other runtimes' do, with its exit code; the run's egress audit goes to
# $BIOTOOL_EPISODE_DIR/audit.json (the episode's results folder) when the template sets it.
# The audit is read before anything is removed, from the store's volume if the egress died;
# one that cannot be read fails the episode (exit 4, no audit.json) and the run is brought
# down with its store kept (`biotool-sandbox audit RUN` reads it later, `down RUN` ends it).
set -euo pipefail
work=$1 line=$2
launcher=${BIOTOOL_SANDBOX:-biotool-sandbox}
up=()
# dockerd, not Slurm, owns the run's cgroups, so the job's allocation is passed on when set.
[[ -n "${SLURM_CPUS_PER_TASK:-}" ]] && up+=(--cpus "$SLURM_CPUS_PER_TASK")
[[ -n "${SLURM_MEM_PER_NODE:-}" ]] && up+=(--memory "${SLURM_MEM_PER_NODE}m")
[[ -n "${BIOTOOL_SITE:-}" ]] && up+=(--site "$BIOTOOL_SITE")
field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

run=$("$launcher" up "${up[@]}" | field run)
down() {
    local status=$? keep=()
    if [[ -n "${BIOTOOL_EPISODE_DIR:-}" ]]; then
        local out="$BIOTOOL_EPISODE_DIR/audit.json"
        if "$launcher" audit "$run" > "$out.part"; then
            mv -- "$out.part" "$out"
        else
            rm -f -- "$out.part"
            echo "run-enforced: the egress audit of $run could not be read; its store is kept" \
                 "(biotool-sandbox audit $run, then biotool-sandbox down $run)" >&2
            keep=(--keep-audit) status=4
        fi
    fi
    "$launcher" down "${keep[@]}" "$run" > /dev/null || echo "run-enforced: $run was not brought down" >&2
    exit "$status"
}
trap down EXIT
trap 'exit 143' TERM INT  # the template's timeout: still down the run (the EXIT trap)
# The command's own bound leaves the template's timeout time to bring the run down.
budget=$(( ${BIOTOOL_EPISODE_TIMEOUT:-1200} - 120 ))
(( budget < 60 )) && budget=60
"$launcher" exec --timeout "$budget" "$run" -- bash -c "$line" > "$work/exec.json"
python3 - "$work/exec.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1], encoding="utf-8"))
sys.stdout.write(result["stdout"])
sys.stderr.write(result["stderr"])
sys.exit(result["exit_code"])
PY
