"""Provenance: the biotool version, the image build, and every reference/index/model used."""

from __future__ import annotations

import json
from functools import lru_cache

from biotool import __version__, settings

@lru_cache(maxsize=1)
def build_identity() -> dict:
    """The image's build identity, written at build time; empty outside the image."""
    path = settings.BUILD_INFO.get()
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def used(kind: str, name: str, sha256: str, **extra) -> dict:
    """One item an answer depended on (a reference, index, database or model)."""
    return {"kind": kind, "name": name, "sha256": sha256, **extra}


def provenance(*items: dict) -> dict:
    out = {"biotool": __version__, "used": list(items)}
    build = build_identity()
    if build:
        out["image"] = {k: build[k] for k in ("image", "revision", "created", "torch_variant")
                        if k in build}
    return out
