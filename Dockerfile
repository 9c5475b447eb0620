# biotool sandbox: one multi-stage build with two targets.
#   --target egress   the Squid egress proxy (biotool-egress:latest)
#   --target sandbox  the agent's image (biotool-sandbox:latest)
# Written for the classic builder (docker 20.10): no RUN --mount, no heredocs. The classic
# builder builds every stage up to the target, so the small egress stage comes first.
# Build through `make image`, which prepares the wheelhouse and picks the base.

ARG BASE_IMAGE=debian:bookworm-slim

# ---- egress stage (owned by enforcement)
# Squid with squid.conf rendered at start from the rules file by the same rules.py biotool
# uses, and the gate (gatekeeper.py: ends TLS for the allowlisted hosts with a per-run CA,
# paces NCBI host-wide); runs unprivileged. State: /run/egress (tmpfs), /run/egress-ca (the
# run's CA certificate for the sandbox), /var/lib/biotool-egress (host-wide schedule volume).
FROM ${BASE_IMAGE} AS egress
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update \
 && apt-get install -y --no-install-recommends squid-openssl python3 ca-certificates openssl \
 && rm -rf /var/lib/apt/lists/*
COPY image/egress/ /usr/local/lib/egress/
COPY entrypoints/biotool/rules.py /usr/local/lib/egress/rules.py
COPY image/rules.toml /etc/biotool/rules.toml
RUN install -d -o proxy -g proxy -m 0700 /run/egress /var/lib/biotool-egress \
 && install -d -o proxy -g proxy -m 0755 /run/egress-ca \
 && chmod 0755 /usr/local/lib/egress/entrypoint.sh
USER proxy
ENV EGRESS_RUN_DIR=/run/egress
EXPOSE 3128
ENTRYPOINT ["/usr/local/lib/egress/entrypoint.sh"]
# ---- end egress stage

# ---- os: Debian's tools and Python, shared by the wheels stage and the runtime
FROM ${BASE_IMAGE} AS os
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3 ca-certificates curl procps \
      minimap2 bwa samtools bcftools tabix ncbi-blast+ \
 && rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log

# ---- wheels: the pinned dependencies installed into /opt/venv from the wheelhouse only
FROM os AS wheels
ARG TORCH_VARIANT=cpu
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv \
 && rm -rf /var/lib/apt/lists/*
# The wheelhouse holds the lock's pins (requirements.lock) beside their wheels.
COPY wheelhouse/${TORCH_VARIANT}/ /tmp/wheelhouse/
# --no-index: nothing is downloaded here (an offline build is what HPC sites and graders
# need, and pip inside the build fails certificate checks behind intercepting proxies).
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --no-index --find-links /tmp/wheelhouse \
      --require-virtualenv -r /tmp/wheelhouse/requirements.lock \
 && rm -rf /tmp/wheelhouse

# ---- sandbox: the agent's image
FROM os AS sandbox

# Caches point under /tmp (a tmpfs in the enforced stack) so an arbitrary UID with an
# unwritable HOME and a read-only root filesystem works, as Apptainer runs images.
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    VIRTUAL_ENV=/opt/venv \
    BIOTOOL_HOME=/opt/biotool \
    BIOTOOL_CACHE=/tmp/biotool-cache \
    XDG_CACHE_HOME=/tmp/.cache \
    MPLCONFIGDIR=/tmp/.cache/matplotlib \
    NUMBA_CACHE_DIR=/tmp/.cache/numba \
    HF_HOME=/tmp/.cache/huggingface \
    CELLTYPIST_FOLDER=/tmp/.cache/celltypist \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

RUN useradd --uid 1000 --user-group --create-home --home-dir /home/agent --shell /bin/bash agent \
 && install -d -m 1777 /work \
 && install -d -m 0755 /etc/biotool
# tini as PID 1 under any runner (plain `docker run` has no --init): signals reach the command.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log

COPY --from=wheels /opt/venv /opt/venv
# The project last: a code change rebuilds only the layers below, not the dependencies.
COPY wheelhouse/project/ /tmp/project/
RUN /opt/venv/bin/pip install --no-cache-dir --no-index --no-deps /tmp/project/*.whl \
 && rm -rf /tmp/project

COPY image/rules.toml /etc/biotool/rules.toml
COPY refs/ /src/refs/
# A site overlay (references kept outside the image, staged on the host with the same
# command's --dest) is mounted read-only here and merged into the inventory.
ENV BIOTOOL_SITE_DIR=/opt/biotool-site
# Every RUN after an ARG sees it, and a changed value misses the cache there: each ARG is
# declared just before the step that needs it, so the dependency layers stay cached.
ARG BIOTOOL_STAGE=demo
# BIOTOOL_TOFU=1: stage production items refs/pins.lock.toml does not pin yet (trust on first
# use; their lock lines are printed and kept in /opt/biotool/pins.tofu.toml).
# BIOTOOL_SOURCE_MIRROR: TEST ONLY, fetch every source through this base URL (the image
# tests' local fake source server); the manifests and the lock keep the real URLs.
ARG BIOTOOL_TOFU=
ARG BIOTOOL_SOURCE_MIRROR=
# Stage references, indexes, databases and models from the manifests, every byte checked
# against its pin, then make /opt/biotool root-owned and read-only to everyone else.
RUN python -m biotool.staging --refs /src/refs --dest /opt/biotool --sets "${BIOTOOL_STAGE}" \
 && rm -rf /src /tmp/* /tmp/.[!.]* \
 && chown -R root:root /opt/biotool \
 && chmod -R u+rwX,go+rX,go-w /opt/biotool

ARG TORCH_VARIANT=cpu
ARG BASE_IMAGE=debian:bookworm-slim
ARG REVISION=unknown
ARG IMAGE_NAME=biotool-sandbox:latest
# The build identity (`biotool version` shows it).
RUN python -c 'import json, sys, datetime; a = sys.argv; json.dump({"image": a[1], "revision": a[2], "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "torch_variant": a[3], "base_image": a[4], "stage_sets": a[5].split(",")}, open("/etc/biotool/build.json", "w"), indent=1)' \
      "${IMAGE_NAME}" "${REVISION}" "${TORCH_VARIANT}" "${BASE_IMAGE}" "${BIOTOOL_STAGE}" \
 && chmod 0644 /etc/biotool/build.json /etc/biotool/rules.toml

# Every shell finds the tools: login shells (Debian's /etc/profile resets PATH) through
# /etc/profile.d, shells with no PATH at all through links in /usr/local/bin; interactive
# shells say once when the network is not enforced. Then no setuid/setgid binary is left,
# and /var/tmp is sticky world-writable (an exec tmpfs there holds harnesses' injected tools).
COPY image/shell/ /usr/local/lib/biotool-shell/
RUN sh /usr/local/lib/biotool-shell/install.sh \
      PATH VIRTUAL_ENV BIOTOOL_HOME BIOTOOL_CACHE XDG_CACHE_HOME MPLCONFIGDIR NUMBA_CACHE_DIR \
      HF_HOME CELLTYPIST_FOLDER HF_HUB_OFFLINE TRANSFORMERS_OFFLINE HF_HUB_DISABLE_TELEMETRY \
      PYTHONDONTWRITEBYTECODE PYTHONUNBUFFERED \
 && find / -xdev -perm /6000 -type f -exec chmod a-s {} + \
 && chmod 1777 /var/tmp

LABEL org.opencontainers.image.title="biotool sandbox" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.description="Shell-only AI agents doing biology and chemistry with staged references and enforced egress rules"

USER agent
WORKDIR /work
# -g: a signal goes to the command's whole process group (a `bash -c` and its children);
# -s: a subreaper too, so it stays quiet under compose's own init.
ENTRYPOINT ["/usr/bin/tini", "-g", "-s", "--"]
CMD ["bash"]
