#!/usr/bin/env bash
# Copy an image's own description beside it: its file manifest (/etc/biotool/files.tsv), and
# for the sandbox its SBOM and build identity, into OUTDIR/<image name>/, with its image ID.
# Usage: image/describe.sh IMAGE OUTDIR   (make image runs it for both images)
set -euo pipefail
image="$1"
dir="$2/$(printf '%s' "$image" | tr '/:@' '___')"
mkdir -p "$dir"
cid=$(docker create "$image")
trap 'docker rm -f "$cid" >/dev/null' EXIT
docker cp "$cid:/etc/biotool/files.tsv" "$dir/files.tsv"
for f in sbom.cdx.json build.json; do  # the egress image has neither
    docker cp "$cid:/etc/biotool/$f" "$dir/$f" 2>/dev/null || rm -f "$dir/$f"
done
docker image inspect -f '{{.Id}}' "$image" > "$dir/image-id"
echo "describe: $image -> $dir ($(grep -vc '^#' "$dir/files.tsv") paths)"
