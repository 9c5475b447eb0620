"""Which GPU is visible, and whether its driver is new enough for the CUDA line torch was built for.

Read without importing torch (seconds, and it initialises CUDA): torch's build records its CUDA
version in torch/version.py, and the driver reports itself in /proc or through nvidia-smi.
"""

from __future__ import annotations

import re
import shutil
import time
from importlib.util import find_spec
from pathlib import Path

# NVIDIA's minimum drivers for CUDA minor-version compatibility, per CUDA major release
# (CUDA Compatibility guide, "Minor Version Compatibility", Linux x86_64).
MIN_DRIVER = {"13": "580", "12": "525.60.13", "11": "450.80.02"}


def torch_cuda() -> str | None:
    """The CUDA version torch was built for ('13.0'), None for a CPU build or no torch."""
    try:
        spec = find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        text = (Path(spec.origin).parent / "version.py").read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return m.group(1) if m else None


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def driver_version(proc: Path = Path("/proc/driver/nvidia/version")) -> str | None:
    """The NVIDIA kernel driver's version, from /proc, else nvidia-smi; None when absent."""
    try:
        m = re.search(r"Kernel Module(?: for \w+)?\s+(\d+\.\d+(?:\.\d+)?)", proc.read_text())
        if m:
            return m.group(1)
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    from biotool.output import ToolFailure
    from biotool.procs import OutOfTime, capture

    try:
        said = capture([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                       time.monotonic() + 20)
    except (OutOfTime, ToolFailure):
        return None
    first = said.out.strip().splitlines()
    return first[0].strip() if said.rc == 0 and first else None


def devices(dev: Path = Path("/dev")) -> list[str]:
    """NVIDIA GPU device nodes passed into this container (/dev/nvidia0, ...)."""
    try:
        return sorted(str(p) for p in dev.glob("nvidia[0-9]*"))
    except OSError:
        return []


def report(cuda=..., driver=..., device_nodes=...) -> dict:
    """visible, driver, torch_cuda, driver_required, ok and one sentence saying which.

    Each argument defaults (...) to what this machine has; tests pass values, None included.
    """
    cuda = torch_cuda() if cuda is ... else cuda
    driver = driver_version() if driver is ... else driver
    nodes = devices() if device_nodes is ... else device_nodes
    need = MIN_DRIVER.get(cuda.split(".")[0]) if cuda else None
    out = {"visible": bool(nodes or driver), "devices": nodes, "driver": driver,
           "torch_cuda": cuda, "driver_required": need}
    if not out["visible"]:
        detail = "no GPU visible: torch runs on the CPU"
        if cuda:
            detail += (f" (this torch is built for CUDA {cuda}, which needs an NVIDIA driver "
                       f">= {out['driver_required']})")
        return {**out, "ok": True, "detail": detail}
    if not cuda:
        return {**out, "ok": False,
                "detail": f"a GPU is visible (driver {driver}) but torch is a CPU build: use "
                          f"the CUDA image (biotool-sandbox:cuda, make image-cuda)"}
    if driver is None:
        return {**out, "ok": False,
                "detail": f"GPU device nodes are visible but no NVIDIA driver answers; CUDA "
                          f"{cuda} needs driver >= {out['driver_required']}"}
    if need and _version_tuple(driver) < _version_tuple(need):
        return {**out, "ok": False,
                "detail": f"NVIDIA driver {driver} is older than {out['driver_required']}, the "
                          f"minimum for torch's CUDA {cuda}: torch will not use the GPU; update "
                          f"the driver or build the image with a torch for an older CUDA line"}
    return {**out, "ok": True,
            "detail": f"GPU visible, NVIDIA driver {driver} >= {out['driver_required']} "
                      f"needed by torch's CUDA {cuda}"}
