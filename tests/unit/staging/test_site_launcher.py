"""`biotool-sandbox up --site DIR`: checked before docker is touched, mounted read-only."""

from __future__ import annotations

import subprocess
import sys

import yaml

ENTRYPOINTS = __import__("pathlib").Path(__file__).resolve().parents[3] / "entrypoints"


def test_a_site_without_staged_json_is_refused_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "biotool_sandbox", "up", "--site", str(tmp_path)],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "DOCKER_HOST": "unix:///nonexistent.sock",
                               "PYTHONPATH": str(ENTRYPOINTS)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "no staged.json" in proc.stderr
    assert "python -m biotool.staging --dest" in proc.stderr


def test_the_override_binds_the_site_read_only_at_the_fixed_path(tmp_path):
    from biotool_sandbox.engine import overrides

    site = tmp_path / "a site:with colon"
    site.mkdir()
    (site / "staged.json").write_text('{"items": {}}')
    path = overrides.site_override(tmp_path, "sandbox", overrides.check_site(str(site)))
    # The long bind syntax (a colon in the host path cannot split it), read-only.
    assert yaml.safe_load(path.read_text()) == {"services": {"sandbox": {"volumes": [
        {"type": "bind", "source": str(site), "target": "/opt/biotool-site", "read_only": True}]}}}


def test_the_extra_ca_override_survives_a_colon_in_the_run_folder(tmp_path):
    """The CA override once wrote the short `SRC:DST:ro` form, which a colon in the state
    folder's path split in the wrong place."""
    from biotool_sandbox.engine import overrides

    run_dir = tmp_path / "state:with colon"
    run_dir.mkdir()
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    egress = yaml.safe_load(overrides.extra_ca_override(run_dir, ca).read_text())["services"]["egress"]
    assert egress["volumes"] == [{"type": "bind", "source": str(run_dir / "extra-ca.pem"),
                                  "target": overrides.EXTRA_CA_IN_EGRESS, "read_only": True}]
    assert egress["environment"] == {"BIOTOOL_EGRESS_EXTRA_CA": overrides.EXTRA_CA_IN_EGRESS}
