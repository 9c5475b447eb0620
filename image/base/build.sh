#!/usr/bin/env bash
# Build a minimal Debian bookworm root filesystem with debootstrap and import it into the
# local docker engine, for hosts that cannot pull debian:bookworm-slim from a registry.
# Usage: image/base/build.sh [TAG]   (default biotool-base:bookworm; FORCE=1 rebuilds)
set -euo pipefail

tag="${1:-biotool-base:bookworm}"
suite="${DEBIAN_SUITE:-bookworm}"
# The mirrors this host's apt already uses (deb822 or one-line sources), unless overridden.
. "$(dirname "$0")/../aptsources.sh"
mirror="${DEBIAN_MIRROR:-$(apt_uri "$suite" | sed -n 1p)}"
security_mirror="${DEBIAN_SECURITY_MIRROR:-$(apt_uri "$suite-security" | sed -n 1p)}"
# Unstable has no -updates or security suite: listing one would fail every apt-get update.
suites="$suite $suite-updates"
case "$suite" in sid|unstable) suites="$suite" security_mirror="" ;; esac
if [ -z "$mirror" ]; then
    echo "base: no apt source for $suite on this host: set DEBIAN_MIRROR" >&2
    exit 2
fi
workdir="${BASE_WORKDIR:-$(cd "$(dirname "$0")/../.." && pwd)/.base}"

if [[ "${FORCE:-0}" != 1 ]] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "base: $tag already present (FORCE=1 to rebuild)"
    exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
    echo "base: debootstrap needs root (run make base as root)" >&2
    exit 2
fi
command -v debootstrap >/dev/null || { echo "base: debootstrap missing (apt-get install debootstrap)" >&2; exit 2; }

rootfs="$workdir/rootfs-$suite"
tarball="$workdir/$suite-minbase.tar"
mkdir -p "$workdir"
rm -rf "$rootfs"
trap 'rm -rf "$rootfs"' EXIT

# Reproducible (docs/building.md): the same SOURCE_DATE_EPOCH (make exports the commit's) and
# the same mirror state give the same tarball, so the same layer digest. dpkg keeps the
# packages' own file times; useradd/adduser date the accounts by SOURCE_DATE_EPOCH; below, the
# logs and caches that hold the clock are removed, every later time is clamped to it, and tar
# writes names sorted, numeric owners and no access or change times.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || echo 315532800)}"
echo "base: debootstrap --variant=minbase $suite from $mirror (SOURCE_DATE_EPOCH $SOURCE_DATE_EPOCH)"
debootstrap --variant=minbase --include=ca-certificates "$suite" "$rootfs" "$mirror"

# Same apt sources layout as the official image, so apt-get in the Dockerfile sees updates.
rm -f "$rootfs/etc/apt/sources.list"
cat > "$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: $suites
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
if [ -n "$security_mirror" ]; then
    cat >> "$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES

Types: deb
URIs: $security_mirror
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
fi

# The slim image's trims: no docs, man pages or translations, and apt keeps no caches.
cat > "$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
DPKG
cat > "$rootfs/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
echo 'Acquire::Languages "none";' > "$rootfs/etc/apt/apt.conf.d/docker-no-languages"
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
       "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/log/*.log \
       "$rootfs"/var/log/apt/* "$rootfs"/var/cache/ldconfig/aux-cache \
       "$rootfs"/var/cache/debconf/*-old "$rootfs"/tmp/* "$rootfs"/root/.bash_history
: > "$rootfs/etc/machine-id"
echo "debian" > "$rootfs/etc/hostname"
find "$rootfs" -xdev -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

tar --sort=name --numeric-owner --xattrs --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$rootfs" -cf "$tarball.partial" .
mv "$tarball.partial" "$tarball"
docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["bash"]' \
    --message "debootstrap --variant=minbase $suite $mirror" \
    "$tarball" "$tag"
echo "base: imported $tag ($(du -h "$tarball" | cut -f1) rootfs tarball at $tarball)"
