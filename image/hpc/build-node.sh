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

if ! docker image inspect "$base" >/dev/null 2>&1; then
    # sid from the mirror that serves this host's bookworm (the same archive).
    . "$repo/image/aptsources.sh"
    DEBIAN_SUITE=sid DEBIAN_MIRROR="${DEBIAN_MIRROR:-$(apt_uri bookworm | sed -n 1p)}" \
        "$repo/image/base/build.sh" "$base"
fi
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
if [ ! -f "$ctx/wheels/.complete-$stamp" ]; then
    rm -rf "$ctx/wheels" && mkdir -p "$ctx/wheels"
    printf '%s\n' "$requirements" > "$ctx/wheels/requirements.txt"
    # Constraints of this host's pip are for its own Python, not the node's.
    PIP_CONSTRAINT= "$python" -m pip download -q --python-version "$pyver" --only-binary=:all: \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux_2_28_x86_64 --platform linux_x86_64 \
        -r "$ctx/wheels/requirements.txt" -d "$ctx/wheels"
    touch "$ctx/wheels/.complete-$stamp"
fi
cp "$here/node-start.sh" "$ctx/node-start.sh"
DOCKER_BUILDKIT=0 docker build -q --build-arg BASE_IMAGE="$base" \
    --build-arg APPTAINER_VERSION="$version" -f "$here/node.Dockerfile" -t "$tag" "$ctx"
echo "hpc-node: built $tag"
