"""`biotool-sandbox up --site DIR`: checked before docker is touched, mounted read-only."""

from __future__ import annotations

import subprocess
import sys

import json

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
    from biotool_sandbox import stack

    site = tmp_path / "a site:with colon"
    site.mkdir()
    (site / "staged.json").write_text('{"items": {}}')
    path = stack._site_override(tmp_path, "sandbox", stack.check_site(str(site)))
    # The long bind syntax (a colon in the host path cannot split it), read-only.
    assert path.read_text() == (
        "services:\n  sandbox:\n    volumes:\n      - type: bind\n"
        f"        source: {json.dumps(str(site))}\n        target: /opt/biotool-site\n"
        "        read_only: true\n")
