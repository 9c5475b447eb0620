"""The commands an agent runs first import no heavy library: `biotool list` used to build
annotate's pydantic models (a tenth of a second) only to name the tools."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pydantic", "jsonschema", "scanpy", "anndata", "celltypist", "numba", "matplotlib",
         "torch", "transformers", "pysam", "rdkit", "Bio", "numpy", "scipy", "pandas")
PROBE = """
import contextlib, json, os, sys
heavy = json.loads(sys.argv[2])
sys.argv = ["biotool", *json.loads(sys.argv[1])]
from biotool.cli import main
code = None
with contextlib.redirect_stdout(open(os.devnull, "w")):
    try:
        main()
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "loaded": sorted(m for m in heavy if m in sys.modules)}))
"""


@pytest.mark.parametrize("args", [["--help"], ["list"], ["references"], ["version"],
                                  ["doctor", "--no-sha"]])
def test_start_up_commands_import_no_heavy_library(biotool_env, args):
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
                          capture_output=True, text=True, env=biotool_env, timeout=300)
    assert proc.stdout.strip(), proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["code"] in (0, 4, None), proc.stderr[-2000:]  # doctor fails off the image
    assert out["loaded"] == [], out


def test_a_builtin_tool_still_has_its_model_and_schema_when_asked():
    from biotool.annotate.registry import BUILTIN

    tool = next(t for t in BUILTIN if t.name == "translate")
    assert tool.model.__name__ == "Translate"
    assert tool.args_schema["type"] == "object" and "sequence" in tool.args_schema["properties"]
