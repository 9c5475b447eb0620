"""The CUDA image (make image-cuda, several GB) on a machine's CPU: torch is PyPI's CUDA build,
every tool runs on the CPU fallback, and doctor/version say no GPU is visible (or, with a GPU,
its driver against what torch's CUDA line needs). Marker `cuda`: `make test-cuda` runs these;
`make test` and CI leave them out."""

from __future__ import annotations

import json
import os
import uuid

import pytest
from biotool_testing.images import TEST_LABEL

from biotool_sandbox.demo import FAMILY_STEPS

pytestmark = pytest.mark.cuda

# Not conftest's shared label: a parallel session's clean-up must not remove these mid-run.
CUDA_LABEL = f"{TEST_LABEL}-cuda"

CUDA_IMAGE = os.environ.get("BIOTOOL_CUDA_IMAGE", "biotool-sandbox:cuda")
SAMPLES = "/opt/biotool/samples"
SAMPLE_FILES = {"demo-sarscov2-artic-reads": f"{SAMPLES}/demo-sarscov2-artic-reads/MT007544.fastq",
                "demo-pbmc68k-heldout": f"{SAMPLES}/demo-pbmc68k-heldout"}


@pytest.fixture(scope="module")
def cuda(docker_client):
    import docker

    try:
        docker_client.images.get(CUDA_IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"{CUDA_IMAGE} is not built: run `make image-cuda`", pytrace=False)

    def run(command, **kwargs):
        kwargs.setdefault("network_mode", "none")
        c = docker_client.containers.run(CUDA_IMAGE, command, detach=True, labels={CUDA_LABEL: "1"},
                                         name=f"biotool-test-{uuid.uuid4().hex[:10]}", **kwargs)
        try:
            code = c.wait(timeout=600)["StatusCode"]
            return (code, c.logs(stdout=True, stderr=False).decode(errors="replace"),
                    c.logs(stdout=False, stderr=True).decode(errors="replace"))
        finally:
            c.remove(force=True)

    return run


def test_torch_is_the_cuda_build_and_runs_on_the_cpu(cuda):
    script = ("import json, torch; x = torch.randn(64, 64); "
              "print(json.dumps({'cuda': torch.version.cuda, 'available': torch.cuda.is_available(), "
              "'sum': float((x @ x.T).trace() >= 0)}))")
    code, out, err = cuda(["python3", "-c", script])
    assert code == 0, err
    got = json.loads(out)
    assert got["cuda"] and got["cuda"].split(".")[0] in ("12", "13"), got
    assert got["available"] is False and got["sum"] == 1.0


def test_version_and_doctor_report_no_gpu_and_the_driver_torch_needs(cuda):
    code, out, err = cuda(["biotool", "version"])
    assert code == 0, err
    gpu = json.loads(out)["gpu"]
    assert gpu["visible"] is False and gpu["torch_cuda"] and gpu["driver_required"], gpu
    assert gpu["detail"].startswith("no GPU visible") and gpu["driver_required"] in gpu["detail"]
    assert json.loads(out)["image"]["torch_variant"] == "cuda"
    code, out, err = cuda(["biotool", "doctor", "--no-sha"])
    assert code == 0, err
    check = next(c for c in json.loads(out)["checks"] if c["check"] == "gpu")
    assert check["ok"] and check["detail"].startswith("no GPU visible"), check


@pytest.mark.parametrize("family,sample,argv", FAMILY_STEPS, ids=[s[0] for s in FAMILY_STEPS])
def test_every_tool_runs_on_the_cpu_fallback(cuda, family, sample, argv):
    argv = [a.replace("{path}", SAMPLE_FILES.get(sample, "")) for a in argv]
    code, out, err = cuda(argv)
    assert code == 0, err[-2000:]
    assert isinstance(json.loads(out), dict)


def test_cell2sentence_generates_on_the_cpu(cuda):
    script = ("from pathlib import Path\n"
              "from biotool.singlecell import c2s, tiny_c2s\n"
              "w, t = tiny_c2s.build(Path('/tmp/c2s'), ['CD3E', 'IL7R', 'LTB', 'LYZ', 'MS4A1'])\n"
              "m = c2s.load(w, t, device=c2s.pick_device())\n"
              "out = c2s.generate(m, [c2s.prompt(['CD3E', 'LYZ'], 'Homo sapiens')], batch_size=1)\n"
              "print(c2s.pick_device(), len(out['answers']))\n")
    code, out, err = cuda(["python3", "-c", script])
    assert code == 0, err[-2000:]
    assert out.split() == ["cpu", "1"], out
