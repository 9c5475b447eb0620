"""The site's NCBI relay for the tests: the egress image in relay mode, as docs/relay.md runs it,
and the `BIOTOOL_RELAY` records of its log (tests/image/test_relay.py, and the Apptainer
episode's gate in tests/apptainer/test_remote_blast_under_apptainer.py)."""

from __future__ import annotations

import json

from biotool_testing import polling
from biotool_testing.images import EGRESS_IMAGE

RELAY_NAME, RELAY_PORT = "ncbi-relay", 8443


def start_relay(dc, name: str, tls, extra_ca, nets: list[str]):
    """The egress image in relay mode, hardened as compose runs an egress, on `nets`, its
    state on a named volume (docs/relay.md: the schedule and RIDs survive a restart)."""
    dc.volumes.create(f"{name}-state", labels={"org.biotool.test": "ncbi-relay"})
    host_config = dc.api.create_host_config(
        binds={str(tls): {"bind": "/etc/biotool/relay", "mode": "ro"},
               str(extra_ca): {"bind": "/etc/biotool/extra-ca.pem", "mode": "ro"},
               f"{name}-state": {"bind": "/var/lib/biotool-egress", "mode": "rw"}},
        read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges:true"],
        mem_limit="256m", pids_limit=256)
    netcfg = dc.api.create_networking_config(
        {nets[0]: dc.api.create_endpoint_config(aliases=[RELAY_NAME])})
    created = dc.api.create_container(
        EGRESS_IMAGE, command=["relay"], user="proxy", name=name, host_config=host_config,
        networking_config=netcfg,
        environment={"BIOTOOL_EGRESS_EXTRA_CA": "/etc/biotool/extra-ca.pem"},
        labels={"org.biotool.test": "ncbi-relay"})
    relay = dc.containers.get(created["Id"])
    for net in nets[1:]:
        dc.networks.get(net).connect(relay, aliases=[RELAY_NAME])
    relay.start()
    polling.until("the relay's ready line", relay.logs, lambda logs: b"egress relay: ready" in logs)
    return relay


def relay_records(relay) -> list[dict]:
    return [json.loads(line.split(" ", 1)[1]) for line in relay.logs(stderr=False).decode().splitlines()
            if line.startswith("BIOTOOL_RELAY ")]
