"""The images the image tests run and the runner that starts one throw-away container per
command (the jupyter/docker-stacks pattern); tests/image/conftest.py's fixtures hand them out.

The images are `biotool-sandbox:latest` and `biotool-egress:latest` unless BIOTOOL_IMAGE /
BIOTOOL_EGRESS_IMAGE say otherwise. BIOTOOL_RUNTIME (runsc: gVisor) runs every sandbox container
the tests start under that runtime, through this runner and through the launcher alike
(`make test-gvisor`).
"""

from __future__ import annotations

import os
import uuid

from biotool_testing.ran import Ran

SANDBOX_IMAGE = os.environ.get("BIOTOOL_IMAGE", "biotool-sandbox:latest")
EGRESS_IMAGE = os.environ.get("BIOTOOL_EGRESS_IMAGE", "biotool-egress:latest")
RUNTIME = os.environ.get("BIOTOOL_RUNTIME") or None
TEST_LABEL = "biotool-image-test"
# The value of TEST_LABEL on this pytest session's containers: a session's teardown removes its
# own leftovers only, so two sessions on one engine do not kill each other's containers.
SESSION = uuid.uuid4().hex[:12]
RUN_TIMEOUT = 1200  # only stops a command that hangs: ten times a busy host's longest default run

# The shape Apptainer runs an image in: an arbitrary non-root UID, a read-only root,
# no network, a private /tmp, and a HOME the user cannot write (here: the agent's home).
APPTAINER_SHAPE = {
    "user": "12345:12345",
    "read_only": True,
    "network_mode": "none",
    "tmpfs": {"/tmp": ""},  # docker's defaults: rw,noexec,nosuid,nodev
    "environment": {"HOME": "/home/agent"},
}


class Runner:
    """Runs one command in a fresh container of the sandbox image and removes it."""

    def __init__(self, client, image: str):
        self.client, self.image = client, image

    def run(self, command, timeout: int = RUN_TIMEOUT, **kwargs) -> Ran:
        if isinstance(command, str):
            command = ["bash", "-c", command]
        kwargs.setdefault("network_mode", "none")
        kwargs.setdefault("labels", {}).update({TEST_LABEL: SESSION})
        if RUNTIME:
            kwargs.setdefault("runtime", RUNTIME)
        container = self.client.containers.run(
            self.image, command, detach=True, name=f"biotool-test-{uuid.uuid4().hex[:10]}",
            **kwargs)
        try:
            status = container.wait(timeout=timeout)
            return Ran(code=status["StatusCode"],
                       stdout=container.logs(stdout=True, stderr=False).decode(errors="replace"),
                       stderr=container.logs(stdout=False, stderr=True).decode(errors="replace"))
        finally:
            container.remove(force=True)

    def biotool(self, *args: str, **kwargs) -> Ran:
        return self.run(["biotool", *args], **kwargs)
