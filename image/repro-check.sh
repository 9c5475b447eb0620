#!/usr/bin/env bash
# Rebuild HEAD from a clean clone in a temporary folder (no layer cache, the same build
# arguments and base, other tags) and compare every file of both rebuilt images with the
# images given (biotool-sandbox verify-image --against). Exit 0: the same files; 4: files
# differ (each listed); 2: the checkout is dirty or an image is missing.
# Usage: image/repro-check.sh SANDBOX_IMAGE EGRESS_IMAGE TAG IMAGE_NAME   (make repro-check)
set -euo pipefail
sandbox="$1" egress="$2" tag="$3" name="$4"
repo=$(git rev-parse --show-toplevel)
variant="${TORCH_VARIANT:-cpu}"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    echo "repro-check: $repo has uncommitted changes; the clone builds HEAD: commit first" >&2
    exit 2
fi
for image in "$sandbox" "$egress"; do
    docker image inspect "$image" >/dev/null 2>&1 \
        || { echo "repro-check: $image is not on this engine: run make image first" >&2; exit 2; }
done
base=$(docker run --rm --entrypoint cat "$sandbox" /etc/biotool/build.json \
       | python3 -c 'import json, sys; print(json.load(sys.stdin)["base_image"])')
again_sandbox="${sandbox%%:*}:$tag" again_egress="${egress%%:*}:$tag"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/biotool-repro.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
git clone -q --no-hardlinks "$repo" "$tmp/src"
git -C "$tmp/src" checkout -q --detach "$(git -C "$repo" rev-parse HEAD)"
# The wheelhouse holds the lock's inputs, fetched rather than built from this commit: linked in
# (make builds the project's own wheel in the clone).
mkdir -p "$tmp/src/wheelhouse"
cp -al "$repo/wheelhouse/$variant" "$tmp/src/wheelhouse/"
# A fresh mark, newer than the clone's lock: make takes the linked wheelhouse as current.
rm -f "$tmp/src/wheelhouse/$variant/.complete" && touch "$tmp/src/wheelhouse/$variant/.complete"
t0=$(date +%s)
make -C "$tmp/src" image TORCH_VARIANT="$variant" BASE_IMAGE="$base" IMAGE_NAME="$name" \
    BIOTOOL_IMAGE="$again_sandbox" BIOTOOL_EGRESS_IMAGE="$again_egress" \
    DOCKER_BUILD_FLAGS=--no-cache OUT="$tmp/out"
echo "repro-check: rebuilt in $(( $(date +%s) - t0 )) s from a clone in $tmp/src"
rc=0
for pair in "$sandbox $again_sandbox" "$egress $again_egress"; do
    set -- $pair
    biotool-sandbox verify-image "$1" --against "$2" || rc=$?
done
if [ -z "${REPRO_KEEP:-}" ]; then
    docker rmi "$again_sandbox" "$again_egress" >/dev/null
fi
exit "$rc"
