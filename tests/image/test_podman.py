"""The image under rootless Podman (`make test-podman`, not part of `make test`): the offline
forms that work with `docker run` (no network, an arbitrary UID, a read-only root) work with
`podman run` as a non-root user, on real data. The user is BIOTOOL_PODMAN_USER (default
biotool-podman, made by image/runtime/podman-user.sh); the sandbox image is loaded into that
user's own store from this engine once per image ID."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess

import pytest

from biotool_testing.ran import Ran

pytestmark = pytest.mark.podman
USER = os.environ.get("BIOTOOL_PODMAN_USER", "biotool-podman")
SHAPE = ["--network", "none", "--user", "12345:12345", "--read-only", "--tmpfs", "/tmp",
         "-e", "HOME=/home/agent"]


def _as_user(cmd: str, timeout: int = 900, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run(["su", "-", USER, "-c", cmd], capture_output=True, text=stdin is None,
                          timeout=timeout, stdin=stdin)


@pytest.fixture(scope="module")
def podman_image(docker_client, images) -> str:
    if shutil.which("podman") is None:
        pytest.fail("podman is not installed (apt-get install podman uidmap)", pytrace=False)
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        pytest.fail(f"no user {USER}: run image/runtime/podman-user.sh", pytrace=False)
    image = docker_client.images.get(images["sandbox"])
    ref = f"localhost/{images['sandbox']}"
    have = _as_user(f"podman image inspect --format '{{{{.Id}}}}' {shlex.quote(ref)}")
    if have.returncode != 0 or have.stdout.strip() not in image.id:
        # docker save | podman load keeps the image's config, so its ID is docker's.
        save = subprocess.Popen(["docker", "save", images["sandbox"]], stdout=subprocess.PIPE)
        loaded = _as_user("podman load -q", timeout=1800, stdin=save.stdout)
        save.wait()
        assert loaded.returncode == 0, loaded.stderr[-2000:]
    return ref


def podman_run(image: str, *command: str, extra: tuple[str, ...] = ()) -> Ran:
    cmd = ["podman", "run", "--rm", *SHAPE, *extra, image, *command]
    proc = _as_user(" ".join(shlex.quote(c) for c in cmd))
    # Podman warns on stderr about the host's mount propagation; the command's own stderr follows.
    err = "".join(line for line in proc.stderr.splitlines(keepends=True)
                  if "is not a shared mount" not in line)
    return Ran(code=proc.returncode, stdout=proc.stdout, stderr=err)


def test_rootless_podman_runs_as_a_user_without_root():
    proc = _as_user("podman info --format '{{.Host.Security.Rootless}}'")
    assert proc.stdout.strip() == "true", proc.stderr


def test_doctor_passes_offline_with_an_arbitrary_uid_and_a_read_only_root(podman_image):
    ran = podman_run(podman_image, "biotool", "doctor")
    assert ran.code == 0, ran
    checks = {c["check"]: c for c in ran.json["checks"]}
    assert checks["egress"]["detail"].startswith("offline mode: only lo"), checks["egress"]
    assert checks["non-root"]["detail"] == "running as uid 12345"
    assert checks["toolbox"]["ok"], checks["toolbox"]


def test_variants_on_the_demo_artic_reads_finds_the_known_deletion(podman_image):
    # The image's own demo sample, as an agent runs it: the isolate's 10-nt deletion at 29749.
    ran = podman_run(podman_image, "biotool", "variants", "--reference", "MN908947.3",
                     "--fastq", "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq",
                     "--top", "5")
    assert ran.code == 0, ran
    deletion = next(v for v in ran.json["variants"] if v["pos"] == 29749)
    assert (deletion["ref"], deletion["alt"], deletion["type"]) == ("ACGATCGAGTG", "A", "deletion")


def test_the_root_is_read_only_and_installs_refuse(podman_image):
    ran = podman_run(podman_image, "bash", "-lc", "touch /opt/x 2>&1; pip install numpy 2>&1; "
                     "echo rc=$?")
    assert "Read-only file system" in ran.stdout, ran
    assert "installs are not possible in this sandbox" in ran.stdout and "rc=1" in ran.stdout


def test_require_enforced_holds_under_podman_offline_and_refuses_on_its_network(podman_image):
    env = ("-e", "BIOTOOL_REQUIRE_ENFORCED=1")
    assert podman_run(podman_image, "biotool", "list", extra=env).code == 0
    # Podman's default rootless network (slirp4netns) reaches what the host reaches.
    cmd = ["podman", "run", "--rm", "--user", "12345:12345", "--read-only", *env,
           podman_image, "biotool", "list"]
    proc = _as_user(" ".join(shlex.quote(c) for c in cmd))
    assert proc.returncode == 3, proc
    assert "BIOTOOL_REQUIRE_ENFORCED is set and the network is not enforced" in proc.stderr
