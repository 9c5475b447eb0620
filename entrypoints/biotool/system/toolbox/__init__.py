"""The toolbox: the command-line tools, R libraries and Python packages the image carries
beyond biotool (toolbox.toml), their versions, whether each starts, and TOOLS.md.

One module per job: `manifest` (what it is), `probe` (versions, does each start), `doc` (what
agents read), `refusal` (installs refused), `build` (at image build); `python -m
biotool.system.toolbox` runs `install` and `markdown`. The names callers use are here.
"""

from biotool.system.toolbox.doc import DOC, dockerfile_pins, lock_versions, markdown, summary
from biotool.system.toolbox.manifest import Toolbox, coverage, load, names
from biotool.system.toolbox.probe import check_tools, debian_versions, python_versions, versions
from biotool.system.toolbox.refusal import NO_INSTALL, install_refusals, shim

__all__ = ["DOC", "NO_INSTALL", "Toolbox", "check_tools", "coverage", "debian_versions",
           "dockerfile_pins", "install_refusals", "load", "lock_versions", "markdown", "names",
           "python_versions", "shim", "summary", "versions"]
