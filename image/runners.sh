# Sourced by the scripts that build a runner image beside the project's own (the Harbor runner,
# the HPC node): a Debian base made with debootstrap, and wheels fetched by this host's pip for
# the runner's Python (pip inside a build cannot check certificates on this project's hosts).

debian_base() {  # debian_base TAG SUITE: debootstrap SUITE as the image TAG unless it exists
    local tag="$1" suite="$2" root
    docker image inspect "$tag" >/dev/null 2>&1 && return 0
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    # From the mirror that serves this host's bookworm (the same archive).
    . "$root/image/aptsources.sh"
    DEBIAN_SUITE="$suite" DEBIAN_MIRROR="${DEBIAN_MIRROR:-$(apt_uri bookworm | sed -n 1p)}" \
        DEBIAN_SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-$(apt_uri bookworm-security | sed -n 1p)}" \
        "$root/image/base/build.sh" "$tag"
}

fetch_wheels() {  # fetch_wheels DIR PYVER STAMP PIP-ARGS...: wheels into DIR, once per STAMP
    local dir="$1" pyver="$2" stamp="$3"
    shift 3
    [ -f "$dir/.complete-$stamp" ] && return 0
    rm -rf "$dir" && mkdir -p "$dir"
    # Constraints of this host's pip are for its own Python, not the runner's.
    PIP_CONSTRAINT= "${PYTHON:-python3}" -m pip download -q --python-version "$pyver" \
        --only-binary=:all: --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux_2_28_x86_64 --platform linux_x86_64 -d "$dir" "$@"
    touch "$dir/.complete-$stamp"
}
