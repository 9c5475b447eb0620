"""docs/settings.md: every `BIOTOOL_*` variable of the three programs, generated from their
settings modules (tests/unit/test_settings.py holds the page to them):

    python -m biotool_sandbox.settingsdoc > docs/settings.md

A checkout's tool, like the compose file the launcher reads: the egress image's settings are
image/egress/settings.py, which no installed package carries.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from commandline import settings as layer
from commandline.settings import Setting, table

REPO = Path(__file__).resolve().parents[2]
EGRESS_SETTINGS = REPO / "image" / "egress" / "settings.py"
DOC = REPO / "docs" / "settings.md"


def egress_settings(path: Path = EGRESS_SETTINGS) -> ModuleType:
    """The egress image's settings module, loaded from its file (it imports `biotool` and
    `commandline` as the image lays them out, which the checkout's entrypoints provide)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("egress_settings", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def programs() -> list[tuple[str, str, list[Setting]]]:
    """(heading, what reads them, settings) for each program, in the page's order."""
    from biotool import settings as biotool_settings
    from biotool_sandbox import settings as launcher

    return [
        ("biotool", "`biotool` and the staging programs in the sandbox image "
         "(entrypoints/biotool/settings.py).", biotool_settings.SETTINGS),
        ("Every program", "the command-line layer of `biotool`, `molperceive` and "
         "`biotool-sandbox` (entrypoints/commandline/settings.py).", [layer.DEBUG]),
        ("biotool-sandbox", "the launcher on the host and the Inspect providers, and what it "
         "sets in a run's containers (entrypoints/biotool_sandbox/settings.py).",
         launcher.SETTINGS),
        ("The egress image", "the egress gate (image/egress/settings.py).",
         egress_settings().SETTINGS),
    ]


def markdown(compose: Path = REPO / "compose.yaml") -> str:
    """The page: one table per program, compose.yaml's defaults shown where they live."""
    from biotool_sandbox import settings as launcher
    from biotool_sandbox.engine.variables import compose_defaults

    defaults = compose_defaults(compose)
    shown = {s.name: f"{defaults[s.name]} (compose.yaml)" for s in launcher.COMPOSE
             if s.name in defaults}
    lines = ["# Settings", "",
             "Every `BIOTOOL_*` environment variable the programs read, generated from each "
             "program's `settings.py` (`python -m biotool_sandbox.settingsdoc > "
             "docs/settings.md`). An empty value counts as unset; a flag is on for "
             "`1`, `true`, `yes` or `on`. A default marked compose.yaml is that file's "
             "`${VAR:-default}`, the one place it is written.", ""]
    for heading, what, settings in programs():
        lines += [f"## {heading}", "", f"Read by {what}", "", *table(settings, shown), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(markdown())
