#!/usr/bin/env bash
# A non-root user with its own rootless Podman store (make test-podman): subordinate UIDs and
# GIDs for the image's users, and the kernel's native overlay (no fuse-overlayfs, no vfs copy
# of every layer). Idempotent; run as root.
set -euo pipefail
user="${1:-${BIOTOOL_PODMAN_USER:-biotool-podman}}"
command -v podman >/dev/null || { echo "podman-user: podman is not installed (apt-get install podman uidmap catatonit)" >&2; exit 1; }
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
# useradd gives a new user 65,536 subordinate IDs; a user made otherwise may have none.
grep -q "^$user:" /etc/subuid || usermod --add-subuids 200000-265535 "$user"
grep -q "^$user:" /etc/subgid || usermod --add-subgids 200000-265535 "$user"
su - "$user" -c 'mkdir -p ~/.config/containers
    printf "[storage]\ndriver = \"overlay\"\n" > ~/.config/containers/storage.conf'
# Rootless networks (slirp4netns) open /dev/net/tun as the user: udev's default is 0666, a
# host made without udev (a VM image, a container) may have it 0600.
[[ -c /dev/net/tun ]] && chmod 0666 /dev/net/tun
# Podman's API service (tests/image/test_podman_engine.py) keeps its rootless network state in
# XDG_RUNTIME_DIR, which su gives no user where no login manager made /run/user/UID.
uid=$(id -u "$user")
install -d -o "$user" -g "$(id -g "$user")" -m 0700 "/run/user/$uid"
echo "podman-user: $user ($(su - "$user" -c 'podman info --format "{{.Store.GraphDriverName}}, rootless {{.Host.Security.Rootless}}"' 2>/dev/null))" >&2
