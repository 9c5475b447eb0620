"""The image describes itself and can be checked (issue 32): its SBOM is valid CycloneDX 1.5 by
the published schema and lists exactly what dpkg-query, pip and R's installed.packages() list in
the image; `biotool-sandbox verify-image` passes on the images as built and fails, naming the
file, on a derived image that changed one; `biotool version` points to both; a run records the
images it ran (up and audit)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

from biotool_testing import stack
from biotool_testing.images import EGRESS_IMAGE, SANDBOX_IMAGE
from biotool_testing.paths import REPO

SBOM = "/etc/biotool/sbom.cdx.json"
MANIFEST = "/etc/biotool/files.tsv"


def _verify(*args: str):
    return subprocess.run([sys.executable, "-m", "biotool_sandbox", "verify-image", *args],
                          capture_output=True, text=True, timeout=900, cwd=REPO)


@pytest.fixture(scope="module")
def sbom(sandbox) -> dict:
    ran = sandbox.run(["cat", SBOM])
    assert ran.code == 0, ran
    return json.loads(ran.stdout)


def _names(sbom: dict, prefix: str) -> dict[str, str]:
    return {c["bom-ref"].split(":", 1)[1]: c["version"] for c in sbom["components"]
            if c["bom-ref"].startswith(prefix)}


def test_sbom_is_valid_cyclonedx(sbom):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    assert JsonStrictValidator(SchemaVersion.V1_5).validate_str(json.dumps(sbom)) is None


def test_sbom_lists_what_dpkg_lists(sandbox, sbom):
    ran = sandbox.run(["dpkg-query", "-W", "-f",
                       "${db:Status-Status}\t${Package}:${Architecture}\t${Version}\n"])
    assert ran.code == 0, ran
    installed = {pkg: ver for status, pkg, ver in
                 (line.split("\t") for line in ran.stdout.splitlines())
                 if status == "installed"}
    assert len(installed) > 300  # the toolbox's packages and what they need
    assert _names(sbom, "deb:") == installed


def test_sbom_lists_what_pip_lists_with_wheel_hashes(sandbox, sbom):
    ran = sandbox.run(["python", "-m", "pip", "list", "--format", "json"])
    assert ran.code == 0, ran
    listed = {re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"] for p in json.loads(ran.stdout)}
    project = listed.pop("biotool-sandbox")
    assert _names(sbom, "pypi:") == listed
    assert _names(sbom, "project:") == {"biotool-sandbox": project}
    pypi = [c for c in sbom["components"] if c["bom-ref"].startswith("pypi:")]
    hashed = [c for c in pypi if c.get("hashes")]
    # Every distribution but what `python -m venv` put there itself (pip) came from a wheel
    # of the wheelhouse, whose sha256 is recorded.
    assert {c["name"] for c in pypi} - {c["name"] for c in hashed} <= {"pip", "setuptools"}
    assert all(re.fullmatch(r"[0-9a-f]{64}", c["hashes"][0]["content"]) for c in hashed)


def test_sbom_lists_what_r_lists(sandbox, sbom):
    ran = sandbox.run(["Rscript", "-e", 'ip <- installed.packages(); '
                       'write.table(unique(ip[, c("Package", "Version")]), sep = "\\t", '
                       'quote = FALSE, row.names = FALSE, col.names = FALSE)'])
    assert ran.code == 0, ran
    listed = dict(line.split("\t") for line in ran.stdout.splitlines() if line)
    assert {"DESeq2", "limma", "ggplot2", "stats"} <= set(listed)
    assert _names(sbom, "r:") == listed


def test_sbom_lists_the_staged_items(sandbox, sbom):
    ran = sandbox.run(["cat", "/opt/biotool/staged.json"])
    items = {k: v for k, v in json.loads(ran.stdout)["items"].items() if not v.get("error")}
    staged = {c["bom-ref"].split(":", 1)[1]: c["hashes"][0]["content"]
              for c in sbom["components"] if c["bom-ref"].startswith("staged:")}
    assert staged == {k: v["sha256"] for k, v in items.items()}


def test_version_points_to_sbom_and_manifest(sandbox):
    ran = sandbox.run(["biotool", "version"])
    assert ran.code == 0, ran
    image = ran.json["image"]
    digest = sandbox.run(["sha256sum", MANIFEST]).stdout.split()[0]
    assert image["sbom"] == SBOM and image["file_manifest"] == MANIFEST
    assert image["file_manifest_sha256"] == digest
    assert image["created"] and image["source_date_epoch"]


def test_verify_image_passes_on_the_images_as_built(images):
    for image in (SANDBOX_IMAGE, EGRESS_IMAGE):
        ran = _verify(image)
        assert ran.returncode == 0, ran.stderr
        report = json.loads(ran.stdout)
        assert report["ok"] and report["manifest"]["differences"] == 0
        assert report["paths"] > 1000


def test_verify_image_fails_on_a_derived_image_that_changed_one_file(docker_client, images):
    # The egress image: small, so the derived image costs seconds.
    dockerfile = (f"FROM {EGRESS_IMAGE}\nUSER root\n"
                  "RUN echo '# edited' >> /etc/biotool/rules.toml\nUSER proxy\n")
    tag = "biotool-egress:verify-derived-test"
    docker_client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True,
                               forcerm=True)
    try:
        ran = _verify(tag)
        assert ran.returncode == 4, (ran.stdout, ran.stderr)
        report = json.loads(ran.stdout)
        assert report["manifest"]["listed"] == [{"path": "/etc/biotool/rules.toml",
                                                 "change": "changed", "detail": "content"}]
        assert "1 path(s) differ from its own manifest" in ran.stderr
        # And against the original: the one file, whatever either manifest says.
        ran = _verify(tag, "--against", EGRESS_IMAGE)
        assert json.loads(ran.stdout)["against"]["listed"] == [
            {"path": "/etc/biotool/rules.toml", "change": "changed", "detail": "content"}]
    finally:
        docker_client.images.remove(tag, force=True)


def test_a_run_records_the_images_it_ran(images, docker_client):
    up = stack.launcher("up")
    try:
        want = {"sandbox": docker_client.images.get(SANDBOX_IMAGE).id,
                "egress": docker_client.images.get(EGRESS_IMAGE).id}
        assert {k: v["id"] for k, v in up["images"].items()} == want
        assert up["images"]["sandbox"]["ref"] == SANDBOX_IMAGE
        assert up["images"]["sandbox"]["revision"]
        audit = stack.launcher("audit", up["run"])
        assert audit["images"] == up["images"]
    finally:
        stack.launcher("down", up["run"], check=False)


def test_manifest_lists_the_image_but_itself(sandbox):
    ran = sandbox.run(["cat", MANIFEST])
    lines = [l for l in ran.stdout.splitlines() if not l.startswith("#")]
    assert any(l.endswith("\t/opt/biotool/staged.json") for l in lines)
    assert any(l.endswith(f"\t{SBOM}") for l in lines)
    assert not any(l.endswith(f"\t{MANIFEST}") for l in lines)


def test_pin_refuses_an_image_with_no_registry_digest(docker_client):
    """An image made on this engine and never pushed has no digest a cluster could pull by
    (one of the test's own, imported from an empty layer)."""
    import io
    import tarfile

    from biotool_sandbox.backends import k8s
    from biotool_sandbox.errors import LauncherError

    layer = io.BytesIO()
    tarfile.open(fileobj=layer, mode="w").close()
    docker_client.api.import_image_from_data(layer.getvalue(), repository="biotool-test-pin",
                                             tag="local")
    try:
        with pytest.raises(LauncherError, match="no registry digest"):
            k8s.pin("biotool-test-pin:local", docker_client)
        with pytest.raises(LauncherError, match="not on this engine"):
            k8s.pin("biotool-no-such-image:never", docker_client)
    finally:
        docker_client.images.remove("biotool-test-pin:local", force=True)
