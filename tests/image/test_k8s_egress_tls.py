"""The egress image in its Kubernetes pod's shape: it takes the namespace's certificate
(k8s/tls.sh's Secret, at EGRESS_TLS_DIR) instead of minting one, so a sandbox that trusts
only the ConfigMap's CA ends TLS with the gate; without the whole set it does not start.

The pod's shape as k8s/values.yaml gives it: uid 13, read-only root, no capabilities,
no-new-privileges, its emptyDirs as tmpfs, the Secret read-only. No cluster: docker runs it.
"""

from __future__ import annotations

import base64
import subprocess
import uuid

import pytest
import yaml

from biotool_testing import polling
from biotool_testing.images import EGRESS_IMAGE, TEST_LABEL
from biotool_testing.paths import REPO

HOST = "blast.ncbi.nlm.nih.gov"
# CONNECT through Squid to the gate, then TLS trusting only the given CA: the peer's DER out.
CLIENT = f"""
import socket, ssl, sys
s = socket.create_connection(("egress", 3128), timeout=300)
s.sendall(b"CONNECT {HOST}:443 HTTP/1.1\\r\\nHost: {HOST}:443\\r\\n\\r\\n")
head = b""
while b"\\r\\n\\r\\n" not in head:
    head += s.recv(1)
assert b" 200 " in head.split(b"\\r\\n")[0], head
ctx = ssl.create_default_context(cafile="/tls/ca.pem")
t = ctx.wrap_socket(s, server_hostname="{HOST}")
sys.stdout.write(ssl.DER_cert_to_PEM_cert(t.getpeercert(binary_form=True)))
"""


@pytest.fixture
def tls(tmp_path):
    out = subprocess.run([str(REPO / "k8s" / "tls.sh")], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    secret = next(d for d in yaml.safe_load_all(out) if d["kind"] == "Secret")
    for name, data in secret["data"].items():
        (tmp_path / name).write_bytes(base64.b64decode(data))
        (tmp_path / name).chmod(0o644)      # a Secret volume's default modes
    tmp_path.chmod(0o755)
    return tmp_path


def start_egress(dc, net: str, tls_dir):
    host_config = dc.api.create_host_config(
        binds={str(tls_dir): {"bind": "/run/egress-tls", "mode": "ro"}},
        read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges:true"],
        tmpfs={p: "uid=13,gid=13,mode=0700,size=16m"
               for p in ("/run/egress", "/var/lib/biotool-egress-run", "/var/lib/biotool-egress")},
        mem_limit="512m")
    netcfg = dc.api.create_networking_config(
        {net: dc.api.create_endpoint_config(aliases=["egress"])})
    created = dc.api.create_container(EGRESS_IMAGE, user="13:13", host_config=host_config,
                                      networking_config=netcfg, labels={TEST_LABEL: "k8s-tls"},
                                      environment={"EGRESS_TLS_DIR": "/run/egress-tls"})
    egress = dc.containers.get(created["Id"])
    egress.start()
    return egress


def wait_ready(egress) -> None:
    """Until the egress is ready; it stopping first fails, as does a start past the limit."""
    def ready() -> bool:
        egress.reload()
        assert egress.status == "running", egress.logs().decode()[-2000:]
        return egress.exec_run(["test", "-e", "/run/egress/ready"]).exit_code == 0
    polling.until("the egress to be ready", ready, every_s=0.2)


@pytest.fixture
def network(docker_client, images):
    net = docker_client.networks.create(f"bts-k8s-{uuid.uuid4().hex[:8]}", internal=True,
                                        labels={TEST_LABEL: "k8s-tls"})
    yield net.name
    for c in docker_client.containers.list(ignore_removed=True, all=True, filters={"label": f"{TEST_LABEL}=k8s-tls"}):
        c.remove(force=True)
    net.remove()


def test_the_gate_presents_the_namespaces_certificate(docker_client, network, tls):
    egress = start_egress(docker_client, network, tls)
    wait_ready(egress)
    peer = docker_client.containers.run(
        EGRESS_IMAGE, entrypoint=["python3", "-c", CLIENT], user="13:13", network=network,
        volumes={str(tls): {"bind": "/tls", "mode": "ro"}}, labels={TEST_LABEL: "k8s-tls"},
        detach=True)
    assert peer.wait(timeout=600)["StatusCode"] == 0, peer.logs().decode()[-2000:]
    assert peer.logs(stderr=False).decode().strip() == (tls / "host.pem").read_text().strip()


def test_an_incomplete_certificate_set_stops_the_egress(docker_client, network, tls):
    (tls / "host.key").unlink()
    egress = start_egress(docker_client, network, tls)
    # Its exit, not a wait that a slow start outlasts: code 2, the reason, and no "ready" before.
    assert egress.wait(timeout=600)["StatusCode"] == 2
    logs = egress.logs()
    assert b"EGRESS_TLS_DIR has no host.key" in logs and b"egress: ready" not in logs, logs[-2000:]
