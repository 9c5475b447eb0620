"""Which images a run ran: each service's image as the engine resolved it when the container
was created (the image ID, the reference it was asked for, the registry digests the engine
knows for it, and the revision the build labelled it with), for the run record (`up`), the
audit and Inspect's sample log."""

from __future__ import annotations

REVISION_LABEL = "org.opencontainers.image.revision"


def identity(container, docker_client) -> dict:
    """One container's image: id, ref, repo_digests (empty for an image built here and never
    pushed or pulled), revision."""
    import docker.errors

    image_id = container.attrs.get("Image")
    out = {"ref": (container.attrs.get("Config") or {}).get("Image"), "id": image_id,
           "repo_digests": [], "revision": None}
    try:
        image = docker_client.images.get(image_id)
    except (docker.errors.ImageNotFound, docker.errors.APIError):
        return out  # removed since the run started: the ID above is still what it ran
    out["repo_digests"] = sorted(image.attrs.get("RepoDigests") or [])
    out["revision"] = (image.labels or {}).get(REVISION_LABEL)
    return out


def run_images(by_service: dict, docker_client) -> dict:
    """{service: identity} for a run's containers, given by service (`stack.by_service`)."""
    return {service: identity(c, docker_client) for service, c in by_service.items()}
