#!/usr/bin/env bash
# Build the SIF of the sandbox image with real Apptainer, as a non-root user, inside the HPC node
# image (image/hpc/build-node.sh) when this host has no Apptainer of its own: the image goes in
# as a `docker save` archive, the SIF comes out with a record of what it was built from.
# Usage: image/hpc/build-sif.sh [IMAGE] [SIF] [RECIPE]
#   (defaults biotool-sandbox:latest, out/biotool-sandbox.sif, image/apptainer.def; FORCE=1
#   rebuilds; `make egress-sif` passes the egress image and image/hpc/egress.def)
# Writes SIF.json beside the SIF: the image's id, the SIF's sha256 and size, Apptainer's version,
# the seconds taken. A SIF whose record names the image's current id is not built again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
image="${1:-biotool-sandbox:latest}"
sif="$(realpath -m "${2:-$repo/out/biotool-sandbox.sif}")"
record="$sif.json"
recipe="$(realpath "${3:-$repo/image/apptainer.def}")"
node="${HPC_NODE_IMAGE:-biotool-hpc-node:$(cat "$here/APPTAINER_VERSION")}"
# zstd: the same size as mksquashfs's default gzip at about a twentieth of the time (measured in
# bench/apptainer.md); every Apptainer and squashfuse of the last years reads it.
compression="${SIF_COMPRESSION:--comp zstd -Xcompression-level 3}"

image_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null) \
    || { echo "sif: image $image is not in the engine: run make image first" >&2; exit 2; }
if [[ "${FORCE:-0}" != 1 && -f "$sif" && -f "$record" ]] \
   && python3 - "$record" "$image_id" "$sif" <<'PY'
import json, os, sys
rec = json.load(open(sys.argv[1]))
sys.exit(not (rec.get("image_id") == sys.argv[2] and rec.get("size") == os.path.getsize(sys.argv[3])))
PY
then
    echo "sif: $sif is already built from $image ($image_id; FORCE=1 rebuilds)"
    exit 0
fi
docker image inspect "$node" >/dev/null 2>&1 || "$here/build-node.sh" "$node"

dir=$(dirname "$sif")
mkdir -p "$dir"
work=$(mktemp -d "$dir/.sif-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
uid=$(docker run --rm --entrypoint id "$node" -u hpcuser)
t0=$SECONDS
docker save "$image" -o "$work/image.tar"
saved=$SECONDS
mkdir "$work/tmp"
cp "$recipe" "$work/apptainer.def"
chown -R "$uid" "$work"
# The node's user, no added capability: Apptainer builds in a user namespace, as a site's user would.
docker run --rm --user hpcuser --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    --security-opt systempaths=unconfined -e APPTAINER_TMPDIR=/build/tmp -v "$work:/build" \
    --entrypoint apptainer "$node" build --build-arg BOOTSTRAP=docker-archive \
    --build-arg FROM=/build/image.tar --mksquashfs-args "$compression" \
    /build/out.sif /build/apptainer.def
built=$SECONDS
version=$(docker run --rm --entrypoint apptainer "$node" version)
sha=$(sha256sum "$work/out.sif" | cut -d' ' -f1)
size=$(stat -c %s "$work/out.sif")
image_size=$(docker image inspect -f '{{.Size}}' "$image")
# The manifest the image's build wrote, read without running the image: verify-sif checks the
# SIF's files against the same text.
cid=$(docker create "$image" true)
manifest_sha=$(docker cp "$cid:/etc/biotool/files.tsv" - | tar -xO | sha256sum | cut -d' ' -f1)
docker rm "$cid" >/dev/null
mv -f "$work/out.sif" "$sif"
python3 - "$record" <<PY
import json, sys
json.dump({"image": "$image", "image_id": "$image_id", "image_size": $image_size,
           "manifest_sha256": "$manifest_sha", "sif": "$(basename "$sif")", "sha256": "$sha", "size": $size,
           "apptainer": "$version", "node_image": "$node", "mksquashfs_args": "$compression",
           "save_seconds": $((saved - t0)), "build_seconds": $((built - saved))},
          open(sys.argv[1], "w"), indent=2)
PY
echo "sif: built $sif ($size bytes, sha256 $sha) from $image in $((built - t0)) s"
