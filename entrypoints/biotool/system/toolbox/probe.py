"""What the toolbox holds in this image: installed versions (dpkg, R's DESCRIPTION files,
Python metadata) and whether each tool starts."""

from __future__ import annotations

import re
import shutil
import time
from importlib import metadata
from pathlib import Path

from biotool.system.toolbox.manifest import load

R_LIBRARY = Path("/usr/lib/R/site-library")
VERSION_TIMEOUT = 20.0  # seconds: a tool whose --version takes longer does not "start"


def debian_versions(packages: set[str]) -> dict[str, str]:
    """{package: installed version} from dpkg, in one call; {} where there is no dpkg."""
    from biotool.output import ToolFailure
    from biotool.procs import OutOfTime, capture

    if not shutil.which("dpkg-query"):
        return {}
    try:
        said = capture(["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n",
                        *sorted(packages)], time.monotonic() + VERSION_TIMEOUT)
    except (OutOfTime, ToolFailure):
        return {}
    out = {}
    for line in said.out.splitlines():
        name, version, status = (line.split("\t") + ["", ""])[:3]
        if status.startswith("ii") and version:
            out[name] = version
    return out


def r_versions(libraries: tuple[str, ...], root: Path = R_LIBRARY) -> dict[str, str | None]:
    """Each R library's Version from its DESCRIPTION (no R start-up: milliseconds)."""
    out: dict[str, str | None] = {}
    for lib in libraries:
        try:
            text = (root / lib / "DESCRIPTION").read_text(errors="replace")
        except OSError:
            out[lib] = None
            continue
        m = re.search(r"^Version:\s*(\S+)", text, re.M)
        out[lib] = m.group(1) if m else None
    return out


def python_versions(modules: dict[str, str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for dist in modules.values():
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def versions() -> dict:
    """What `biotool version` reports of the toolbox: Debian package, R and Python versions."""
    box = load()
    deb = debian_versions(box.packages)
    pip = python_versions({t.pip: t.pip for t in box.tools if t.pip})
    return {
        "tools": {t.command: pip[t.pip] if t.pip else deb.get(t.package) for t in box.tools},
        "r": {"R": deb.get(box.r_package), **r_versions(box.r_libraries)},
        "python": python_versions(box.python),
    }


def check_tools(width: int = 8, meanwhile=None) -> dict[str, str]:
    """{command: why it does not start} for every tool, every alias checked on PATH too.

    A tool fails only when it fails twice, the second time alone: the first pass runs
    `width` at a time, and on a crowded 2-core host a JVM can miss its bound there.
    `meanwhile`: other work done a step at a time while the tools run (procs.run_each_bounded)."""
    from biotool.procs import run_each_bounded

    box = load()
    cmds = {t.command: [t.command, *t.version] for t in box.tools}
    expect = {t.command: t.version_exit for t in box.tools}

    def failures(names: list[str], width: int) -> dict[str, str]:
        ran = run_each_bounded([cmds[n] for n in names], VERSION_TIMEOUT, width, meanwhile)
        return {n: _why(r, expect[n]) for n, r in zip(names, ran) if _why(r, expect[n])}

    results = failures(list(cmds), width)
    if results:
        results = failures(sorted(results), 1)
    for t in box.tools:
        for alias in t.also:
            if shutil.which(alias) is None:
                results[alias] = f"not on PATH (an alias of {t.command})"
    return results


def _why(ran: tuple[int, str] | str, expected_exit: int) -> str | None:
    """None when a version command exited as it should, else why not (one line)."""
    if isinstance(ran, str):
        return ran
    rc, said = ran
    return None if rc == expected_exit else f"exit {rc}: {said}"
