"""The toolbox at image build: aliases and wrappers Debian does not ship, the installers'
refusals, and TOOLS.md."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from biotool.system.toolbox.doc import markdown
from biotool.system.toolbox.manifest import load
from biotool.system.toolbox.probe import debian_versions, python_versions
from biotool.system.toolbox.refusal import install_refusals


def install(bindir: Path, doc: Path) -> list[str]:
    """At image build: link each alias Debian does not ship, write each wrapper, the
    installers' refusals, and TOOLS.md. Returns what was made."""
    box = load()
    rprofile = Path("/etc/R/Rprofile.site")
    made = install_refusals(bindir, Path(sys.prefix) / "bin",
                            rprofile if rprofile.exists() else None)
    for t in box.tools:
        if t.wrapper or t.script:
            path = bindir / t.command
            path.write_text("#!/bin/sh\n" + (t.script or f'exec {t.wrapper} "$@"\n'))
            path.chmod(0o755)
            made.append(str(path))
        target = shutil.which(t.command) or str(bindir / t.command)
        for alias in t.also:
            if shutil.which(alias) is None:
                (bindir / alias).symlink_to(target)
                made.append(str(bindir / alias))
    doc.write_text(markdown(debian_versions(box.packages), box,
                            python_versions({t.pip: t.pip for t in box.tools if t.pip})))
    return made
