#!/usr/bin/env bash
# Build the HPC node image (image/hpc/node.Dockerfile): Debian sid debootstrapped like the
# project's own base (image/base/build.sh), then Apptainer at the version pinned in
# APPTAINER_VERSION, squashfuse, uidmap and Slurm with munge from sid's archive, and a Python
# environment with what `pip install '.[host]'` brings for the Inspect provider, from wheels
# fetched here by the host's pip (pip inside a build cannot check certificates here).
# Usage: image/hpc/build-node.sh [TAG]  (default biotool-hpc-node:APPTAINER_VERSION)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
version="$(cat "$here/APPTAINER_VERSION")"
tag="${1:-biotool-hpc-node:$version}"
base="${HPC_NODE_BASE:-biotool-base:sid}"
python="${PYTHON:-python3}"
ctx="$repo/out/hpc-node"

. "$repo/image/runners.sh"
debian_base "$base" sid
# The provider's Python side for sid's Python: the project's own dependencies and its host
# extra's Inspect, pinned as pyproject.toml pins them; the project itself is bound in at run time.
requirements=$("$python" - "$repo/pyproject.toml" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
host = [r for r in project["optional-dependencies"]["host"] if r.startswith("inspect-ai")]
print("\n".join([*project["dependencies"], *host, "pytest>=8"]))
PY
)
# The system stage first: its Python's version is the one the wheels are fetched for.
DOCKER_BUILDKIT=0 docker build -q --target system --build-arg BASE_IMAGE="$base" \
    --build-arg APPTAINER_VERSION="$version" -f "$here/node.Dockerfile" -t "$tag-system" "$here" >/dev/null
pyver=$(docker run --rm --entrypoint python3 "$tag-system" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
stamp=$(printf '%s\n' "$pyver" "$requirements" | sha256sum | cut -c1-16)
mkdir -p "$ctx"
printf '%s\n' "$requirements" > "$ctx/requirements.txt"
fetch_wheels "$ctx/wheels" "$pyver" "$stamp" -r "$ctx/requirements.txt"
cp "$ctx/requirements.txt" "$ctx/wheels/requirements.txt"
cp "$here/node-start.sh" "$ctx/node-start.sh"
DOCKER_BUILDKIT=0 docker build -q --build-arg BASE_IMAGE="$base" \
    --build-arg APPTAINER_VERSION="$version" -f "$here/node.Dockerfile" -t "$tag" "$ctx"
echo "hpc-node: built $tag"
