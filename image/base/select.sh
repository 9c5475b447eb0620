#!/usr/bin/env bash
# Print the base image the build should use: the local debootstrap base if present, else
# debian:bookworm-slim when it is local or can be pulled, else build the local base now.
set -euo pipefail
tag="${BASE_TAG:-biotool-base:bookworm}"
upstream="${UPSTREAM_BASE:-debian:bookworm-slim}"
if docker image inspect "$tag" >/dev/null 2>&1; then echo "$tag"; exit 0; fi
if docker image inspect "$upstream" >/dev/null 2>&1; then echo "$upstream"; exit 0; fi
if timeout 120 docker pull -q "$upstream" >/dev/null 2>&1; then echo "$upstream"; exit 0; fi
echo "base: $upstream cannot be pulled; building $tag with debootstrap" >&2
"$(dirname "$0")/build.sh" "$tag" >&2
echo "$tag"
