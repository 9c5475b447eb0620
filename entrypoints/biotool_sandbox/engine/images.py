"""A run's images: which ones it asks for (each named by the option or variable that chose
it), checked present on the engine in one wording, and which ones it ran: each service's image
as the engine resolved it when the container was created (the image ID, the reference it was
asked for, the registry digests the engine knows for it, and the revision the build labelled it
with), for the run record (`up`), the audit and Inspect's sample log."""

from __future__ import annotations

from dataclasses import dataclass

from .. import settings
from ..errors import LauncherError
from .variables import Variables

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
    """{service: identity} for a run's containers, given by service (`runs.by_service`)."""
    return {service: identity(c, docker_client) for service, c in by_service.items()}


def sandbox_variable(mode: str) -> str:
    """The compose variable of the sandbox's image: --mode gpu runs the CUDA image's own."""
    return (settings.CUDA_IMAGE if mode == "gpu" else settings.IMAGE).name


@dataclass(frozen=True)
class Wanted:
    """An image a run's containers use: the option or variable that chose it, its name, and the
    make target that builds it."""

    source: str
    name: str
    target: str


def requested(mode: str, variables: Variables) -> list[Wanted]:
    """Every image the run's containers use, the sandbox's first."""
    wanted = [sandbox_variable(mode)] + ([] if mode == "offline" else [settings.EGRESS_IMAGE.name])
    return [Wanted(variables.set_by(var) or var, variables.value(var),
                   "image-cuda" if var == settings.CUDA_IMAGE.name else "image")
            for var in wanted]


def check_present(dc, images: list[Wanted]) -> None:
    """Each image is on this engine: a run never pulls or builds, and compose does not always
    say that it created no container for want of one."""
    import docker.errors

    for image in images:
        try:
            dc.images.get(image.name)
        except docker.errors.ImageNotFound:
            raise LauncherError(f"{image.source} {image.name}: no such image on this engine (up "
                                f"never pulls or builds: `make {image.target}`, or docker "
                                "pull/load it first)") from None
        except docker.errors.APIError as exc:
            raise LauncherError(f"{image.source} {image.name!r} is not an image name "
                                f"({exc.explanation or exc})") from None
