"""Installs refused at once: the installer names an agent reaches for (pip, apt, conda, ...)
and R's install.packages answer with the reason instead of retrying through the proxy."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

# What every refused install says: the installer shims and R's site profile, both written at
# build by install() below.
NO_INSTALL = ("installs are not possible in this sandbox (no package index is reachable and "
              "the image is read-only); run `biotool list` or read /opt/biotool/TOOLS.md for "
              "the tools, R libraries and Python packages already here")
# Installers an agent reaches for, and the sub-commands of each that only read (they still
# work: `pip list`, `apt list --installed`).
PIP = ("pip", "pip3", f"pip3.{sys.version_info.minor}")
PIP_READS = "list show freeze check help inspect -h --help -V --version"
INSTALLERS = {
    **{name: PIP_READS for name in PIP},
    "apt-get": "-h --help -v --version",
    "apt": "list show search policy depends rdepends -h --help -v --version",
    "conda": "", "mamba": "", "micromamba": "", "uv": "",
}
# NO_INSTALL as shell and R strings quote it (no backquotes).
NO_INSTALL_PLAIN = NO_INSTALL.replace("`", "'")
SHIM = """#!/bin/sh
# biotool sandbox, written at build by biotool.system.toolbox: {NAME} here. Nothing can be
# installed, so an install fails at once with the reason instead of retrying through the
# proxy for minutes.
{READ_ONLY}echo "{NAME}: {MESSAGE}" >&2
exit 1
"""
# R's utils::install.packages and its kin, replaced in R's site profile (they are in the
# utils namespace, which is loaded after the site profile runs).
R_PROFILE = """
## biotool sandbox, written at build by biotool.system.toolbox: nothing can be installed here.
## One line on stderr, as every installer shim says it: stop() would add "Execution halted".
local({{
    refuser <- function(f) {{
        force(f)
        function(...) {{
            message(f, ": {MESSAGE}")
            if (interactive()) invokeRestart("abort") else quit(save = "no", status = 1, runLast = FALSE)
        }}
    }}
    replace <- function(...) {{
        ns <- asNamespace("utils")
        for (f in c("install.packages", "update.packages", "download.packages")) {{
            unlockBinding(f, ns); assign(f, refuser(f), envir = ns); lockBinding(f, ns)
        }}
    }}
    if (isNamespaceLoaded("utils")) replace() else setHook(packageEvent("utils", "onLoad"), replace)
}})
"""


def shim(name: str, real: str | None) -> str:
    """The script an installer's name runs in the image."""
    read_only = INSTALLERS[name].split()
    case = (f'# Sub-commands that only read run the real tool.\ncase "${{1:-}}" in\n'
            f'    {"|".join(read_only)}) exec {real} "$@" ;;\nesac\n') if read_only and real else ""
    return SHIM.format(NAME=name, MESSAGE=NO_INSTALL_PLAIN, READ_ONLY=case)


def install_refusals(bindir: Path, venv_bin: Path, rprofile: Path | None) -> list[str]:
    """Every installer name answers with NO_INSTALL: pip's in the venv (first on PATH), the
    others in `bindir`; R's install.packages in its site profile."""
    made = []
    for name in INSTALLERS:
        where = venv_bin if name in PIP else bindir
        found = shutil.which(name, path="/usr/bin:/bin")
        real = (f"{shlex.quote(str(venv_bin / 'python'))} -m pip" if name in PIP
                else found and shlex.quote(found))
        path = where / name
        path.unlink(missing_ok=True)
        path.write_text(shim(name, real))
        path.chmod(0o755)
        made.append(str(path))
    if rprofile is not None:
        with open(rprofile, "a") as fh:
            fh.write(R_PROFILE.format(MESSAGE=NO_INSTALL_PLAIN))
        made.append(str(rprofile))
    return made
