"""The two lock files the image installs from agree with pyproject.toml and with each other
(no docker needed; these guard the inputs of the build)."""

from biotool_testing import scripts
from biotool_testing.paths import REPO

lockfile = scripts.module(REPO / "image" / "lockfile.py")

CPU = REPO / "image" / "requirements-cpu.lock"
CUDA = REPO / "image" / "requirements-cuda.lock"


def test_every_pyproject_requirement_is_pinned():
    assert lockfile.stale(CPU) == []
    assert lockfile.stale(CUDA) == []


def test_a_requirement_missing_from_the_lock_is_reported(tmp_path):
    pruned = tmp_path / "requirements.lock"
    pruned.write_text("".join(ln + "\n" for ln in CPU.read_text().splitlines()
                              if not ln.startswith("rdkit==")))
    assert lockfile.stale(pruned) == ["rdkit==2026.3.4 (not in the lock)"]


def test_cuda_lock_differs_from_cpu_only_in_the_torch_stack():
    cpu, cuda = lockfile.read_lock(CPU), lockfile.read_lock(CUDA)
    assert cpu.pop("torch") == "2.13.0+cpu"
    assert cuda.pop("torch") == "2.13.0"
    shared = {n: v for n, v in cuda.items() if n in cpu}
    assert shared == cpu, "a shared package is pinned differently in the two locks"
    extra = sorted(set(cuda) - set(cpu))
    assert extra and all(n.startswith(("nvidia-", "cuda-", "triton")) for n in extra), extra


def test_pins_match_the_design_constraints():
    pins = lockfile.read_lock(CPU)
    assert pins["rdkit"] == "2026.3.4"
    assert pins["celltypist"] == "1.7.1"
    assert tuple(int(x) for x in pins["scikit-learn"].split(".")[:2]) < (1, 8)
    assert int(pins["pandas"].split(".")[0]) < 3
