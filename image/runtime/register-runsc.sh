#!/usr/bin/env bash
# Register gVisor's runsc with the Docker engine as the runtime `runsc`, merged into
# /etc/docker/daemon.json (every other setting kept), then reload a running dockerd.
#
# runsc's own network stack (--network=sandbox, its default) tells a container's network
# namespace from the host's by whether /proc/sys/net/core/rmem_default exists there; since
# Linux 6.x that file exists in every namespace, so runsc releases before mid-2024 (Debian 12's
# is 20221219) refuse every container with "cannot run with network enabled in root network
# namespace". Where a fresh namespace shows the file, runsc is registered with
# --network=host: gVisor then passes socket calls to the host kernel inside the container's
# own network namespace (Docker's), so the namespace and its rules still hold; every other
# system call is still gVisor's. docs/rules.md (the runtime layer) says what that costs.
set -euo pipefail

RUNSC="${RUNSC:-$(command -v runsc || true)}"
DAEMON_JSON="${DAEMON_JSON:-/etc/docker/daemon.json}"
[[ -n "$RUNSC" && -x "$RUNSC" ]] || { echo "register-runsc: runsc is not installed (apt-get install runsc)" >&2; exit 1; }

args='[]'
if unshare -n sh -c 'test -e /proc/sys/net/core/rmem_default' 2>/dev/null; then
    args='["--network=host"]'
fi

mkdir -p "$(dirname "$DAEMON_JSON")"
python3 - "$DAEMON_JSON" "$RUNSC" "$args" <<'PY'
import json, os, sys
path, runsc, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
conf = json.load(open(path)) if os.path.exists(path) and os.path.getsize(path) else {}
entry = {"path": runsc, **({"runtimeArgs": args} if args else {})}
if conf.get("runtimes", {}).get("runsc") == entry:
    sys.exit(0)
conf.setdefault("runtimes", {})["runsc"] = entry
tmp = path + ".tmp"
with open(tmp, "w") as f:
    json.dump(conf, f, indent=2)
    f.write("\n")
os.replace(tmp, path)
print(f"register-runsc: runtime runsc = {runsc} {' '.join(args)} in {path}", file=sys.stderr)
PY

# A running engine rereads its runtimes on SIGHUP; one not yet started reads them at start.
if pid=$(pidof dockerd); then
    kill -HUP $pid
    for _ in $(seq 1 20); do
        docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"' && exit 0
        sleep 0.5
    done
    echo "register-runsc: dockerd did not take the runtime (see its log)" >&2
    exit 1
fi
