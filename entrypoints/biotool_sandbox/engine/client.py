"""The docker engine: the SDK's client, and what the engine says it can run."""

from __future__ import annotations

from ..errors import EngineError

def client():
    """A docker SDK client, or EngineError saying the engine is not reachable."""
    import docker  # only the launcher needs the SDK

    try:
        c = docker.from_env()
        c.ping()
        return c
    except Exception as exc:  # docker raises several unrelated types here
        raise EngineError(f"docker engine not reachable ({exc}); start dockerd") from None
