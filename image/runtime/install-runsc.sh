#!/usr/bin/env bash
# Install gVisor's runsc from Debian's bookworm-backports (through the mirror this host's apt
# already uses) and register it with the Docker engine (register-runsc.sh). Run as root.
#
# Why backports: bookworm's own runsc (0.0~20221219) refuses statx(2) with AT_NO_AUTOMOUNT,
# which coreutils 9 passes, so `ls -l` and `stat` fail with "Invalid argument" on every file
# inside the sandbox; the backports build (0.0~20240729) answers it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../aptsources.sh"
suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
[[ "$suite" == bookworm ]] || { echo "install-runsc: this is $suite, not Debian 12: install runsc 20240729 or newer yourself, then run register-runsc.sh" >&2; exit 2; }
want=20240729
have=$(runsc --version 2>/dev/null | sed -n 's/^runsc version [0-9.]*~\{0,1\}\([0-9]\{8\}\).*/\1/p' || true)
if [[ -z "$have" || "$have" < "$want" ]]; then
    mirror="${DEBIAN_MIRROR:-$(apt_uri "$suite" | sed -n 1p)}"
    [[ -n "$mirror" ]] || { echo "install-runsc: no apt source for $suite on this host: set DEBIAN_MIRROR" >&2; exit 2; }
    list=/etc/apt/sources.list.d/biotool-backports.list
    # Backports are pinned at priority 100 by their Release file: nothing else is upgraded.
    echo "deb $mirror $suite-backports main" > "$list"
    apt-get update -q -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -t "$suite-backports" runsc
fi
# sed reads every line: head would leave runsc writing into a closed pipe (SIGPIPE, 141 under pipefail).
runsc --version | sed -n 1p >&2
"$here/register-runsc.sh"
