# An HPC node in one container (docs/hpc.md#the-hpc-node-runner): Debian sid's Apptainer (the
# version pinned in APPTAINER_VERSION), squashfuse so a SIF is mounted rather than unpacked at
# every exec, uidmap, and Slurm with munge. Apptainer runs as NODE_USER, a user the sandbox
# image has never seen, on user namespaces: setuid-less, as most sites run it today.
ARG BASE_IMAGE=biotool-base:sid
FROM ${BASE_IMAGE} AS system
ARG APPTAINER_VERSION
ARG NODE_UID=23456
# sid's Release is signed for days only; a mirror that serves an older state (this project's
# hosts) is refused as expired, so its date is not checked (its signature still is).
RUN apt-get -o Acquire::Check-Valid-Until=false update -q \
 && apt-get install -y -q --no-install-recommends "apptainer=${APPTAINER_VERSION}" \
        squashfs-tools squashfuse fuse3 uidmap slurm-wlm munge python3 python3-venv procps \
        ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid "${NODE_UID}" --shell /bin/bash hpcuser \
 && sed -i '/^hpcuser:/d' /etc/subuid /etc/subgid
# Without subordinate ranges Apptainer builds in its root-mapped user namespace: newgidmap
# cannot map a range from inside an engine's container (it fails with EPERM), and a site user
# with no ranges configured is the common case this stands for.

FROM system
COPY wheels/ /tmp/wheels/
RUN python3 -m venv /opt/inspect \
 && /opt/inspect/bin/pip install -q --no-cache-dir --no-index --find-links /tmp/wheels \
        -r /tmp/wheels/requirements.txt \
 && rm -rf /tmp/wheels
COPY node-start.sh /usr/local/sbin/node-start
ENV NODE_USER=hpcuser
ENTRYPOINT ["/usr/local/sbin/node-start"]
