# The Harbor runner: Debian trixie (Python 3.13, which Harbor needs; the project's hosts are
# bookworm with 3.11), Harbor from wheels fetched on the host, and the host's docker CLI and
# Compose plugin. It drives the host's engine through its socket (image/harbor/run.sh).
ARG BASE_IMAGE=biotool-base:trixie
FROM ${BASE_IMAGE}
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends python3 python3-venv git \
 && rm -rf /var/lib/apt/lists/*
COPY wheels/ /tmp/wheels/
RUN python3 -m venv /opt/harbor \
 && /opt/harbor/bin/pip install --no-cache-dir --no-index --find-links /tmp/wheels "harbor==$(cat /tmp/wheels/VERSION)" \
 && rm -rf /tmp/wheels
COPY bin/docker /usr/local/bin/docker
COPY bin/docker-compose /usr/local/lib/docker/cli-plugins/docker-compose
ENV PATH=/opt/harbor/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENTRYPOINT ["harbor"]
