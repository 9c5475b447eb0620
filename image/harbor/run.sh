#!/usr/bin/env bash
# Run Harbor's CLI from the runner image against this host's engine (docs/harbor.md).
# Usage: image/harbor/run.sh [--bind DIR]... -- HARBOR_ARGS...
# Each DIR (default: the current directory) is bound at the SAME path inside: Harbor passes
# task and trial paths to `docker compose`, and the engine resolves them on the host.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
image="${HARBOR_RUNNER_IMAGE:-biotool-harbor-runner:$(cat "$here/HARBOR_VERSION")}"
binds=()
while [ $# -gt 0 ]; do
    case "$1" in
        --bind) d="$(cd "$2" && pwd)"; binds+=(-v "$d:$d"); shift 2 ;;
        --) shift; break ;;
        *) break ;;
    esac
done
[ ${#binds[@]} -gt 0 ] || binds=(-v "$PWD:$PWD")
sock="${DOCKER_SOCKET:-/var/run/docker.sock}"
[ -S "$sock" ] || { echo "harbor-runner: no engine socket at $sock" >&2; exit 2; }
docker image inspect "$image" >/dev/null 2>&1 || {
    echo "harbor-runner: image $image missing: run image/harbor/build-runner.sh" >&2; exit 2; }
# No network: Harbor reaches the engine through the socket only, and nothing else (LiteLLM
# would fetch a price list at import: it reads its bundled copy instead).
exec docker run --rm --init --network none -e LITELLM_LOCAL_MODEL_COST_MAP=True \
    ${HARBOR_RUNNER_EXTRA:-} -v "$sock:/var/run/docker.sock" "${binds[@]}" -w "$PWD" \
    -e HOME=/tmp -e COLUMNS=120 -e NO_COLOR=1 "$image" "$@"
