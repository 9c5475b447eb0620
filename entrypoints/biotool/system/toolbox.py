"""The toolbox: the command-line tools, R libraries and Python packages the image carries
beyond biotool (toolbox.toml), their versions, whether each starts, and TOOLS.md.

    python -m biotool.system.toolbox install --bin DIR --doc FILE   # at image build
    python -m biotool.system.toolbox markdown --dockerfile Dockerfile \
        --lock image/requirements-cpu.lock > docs/TOOLS.md
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import sys
import time
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

MANIFEST = Path(__file__).with_name("toolbox.toml")
R_LIBRARY = Path("/usr/lib/R/site-library")
DOC = "TOOLS.md"  # under BIOTOOL_HOME in the image, and in docs/
VERSION_TIMEOUT = 20.0  # seconds: a tool whose --version takes longer does not "start"
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


@dataclass(frozen=True)
class Tool:
    command: str
    package: str  # its Debian package; "" for a command the Python environment installs
    family: str
    what: str
    version: tuple[str, ...]
    version_exit: int = 0
    also: tuple[str, ...] = ()
    data: str = ""
    wrapper: str = ""  # a command line the tool's name runs, where Debian ships no such name
    # A shell script run in place of Debian's launcher of the same name (/usr/local/bin comes
    # first on PATH), where that launcher misreads the container it runs in.
    script: str = ""
    pip: str = ""  # the PyPI distribution that installs the command into /opt/venv/bin


@dataclass(frozen=True)
class Absent:
    name: str
    why: str
    covers: tuple[str, ...] = ()  # the union's names (Union) this entry accounts for
    instead: str = ""  # what in the image serves the same need


@dataclass(frozen=True)
class Data:
    """Files staged in the image for the tools (not references: those are `biotool
    references`), each from a Debian package whose pin fixes its contents."""
    name: str
    path: str
    package: str
    what: str


@dataclass(frozen=True)
class Union:
    """What the environments agents are evaluated in carry (issue 34): command names, R
    libraries and Python modules, each here (a toolbox entry) or accounted for by an absent one.
    `counted`: the union's size and what was here before the list below was drawn up, per kind."""
    commands: tuple[str, ...]
    r: tuple[str, ...]
    python: tuple[str, ...]
    counted: dict[str, tuple[int, int]]


@dataclass(frozen=True)
class Toolbox:
    tools: tuple[Tool, ...]
    r_package: str
    r_libraries: tuple[str, ...]
    r_packages: tuple[str, ...]
    python: dict[str, str]  # import name -> distribution name
    absent: tuple[Absent, ...]
    data: tuple[Data, ...] = ()
    union: Union | None = None

    @property
    def packages(self) -> set[str]:
        """Every Debian package the toolbox names (the Dockerfile pins each)."""
        return ({t.package for t in self.tools if t.package} | {d.package for d in self.data}
                | {self.r_package, *self.r_packages})

    def families(self) -> dict[str, list[Tool]]:
        out: dict[str, list[Tool]] = {}
        for t in self.tools:
            out.setdefault(t.family, []).append(t)
        return out


@cache
def load(path: Path = MANIFEST) -> Toolbox:
    raw = tomllib.loads(path.read_text())
    tools = tuple(Tool(**{k: tuple(v) if isinstance(v, list) else v for k, v in t.items()})
                  for t in raw["tool"])
    r = raw["r"]
    u = raw.get("union")
    union = u and Union(commands=tuple(u["commands"]), r=tuple(u["r"]), python=tuple(u["python"]),
                        counted={k: tuple(v) for k, v in u["counted"].items()})
    return Toolbox(tools=tools, r_package=r["package"], r_libraries=tuple(r["libraries"]),
                   r_packages=tuple(r["packages"]), python=dict(raw["python"]["modules"]),
                   absent=tuple(Absent(**{k: tuple(v) if isinstance(v, list) else v
                                          for k, v in a.items()}) for a in raw["absent"]),
                   data=tuple(Data(**d) for d in raw.get("data", [])), union=union)


def coverage(box: Toolbox | None = None) -> dict[str, dict]:
    """Per kind of the union: which of its listed names are here, which an absent entry
    accounts for, which neither (a gap), and the union's counts before and now."""
    box = box or load()
    here = {"commands": {n for t in box.tools for n in names(t)},
            "r": set(box.r_libraries), "python": set(box.python)}
    covered = {n for a in box.absent for n in a.covers}
    out = {}
    for kind in ("commands", "r", "python"):
        listed = getattr(box.union, kind)
        present = [n for n in listed if n in here[kind]]
        total, before = box.union.counted[kind]
        out[kind] = {"listed": len(listed), "present": present,
                     "absent": [n for n in listed if n not in here[kind] and n in covered],
                     "gap": [n for n in listed if n not in here[kind] and n not in covered],
                     "union": total, "before": before, "now": before + len(present)}
    return out


def names(tool: Tool) -> list[str]:
    return [tool.command, *tool.also]


# ---------------------------------------------------------------- versions

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


# ---------------------------------------------------------------- does each tool start

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


# ---------------------------------------------------------------- what agents read

def summary() -> dict:
    """The `tools` section of `biotool list`: every command name (utilities aside) and R
    library, and how many Python modules, kept under the output bound; the modules' names and
    every version are `biotool version`'s, and what each is for, where its data lives and what
    is absent on purpose are TOOLS.md's."""
    from biotool import staging

    box = load()
    return {
        "commands": " ".join(n for fam, tools in box.families().items() if fam != "utilities"
                             for t in tools for n in names(t)),
        "r_libraries": " ".join(box.r_libraries),
        "python": f"{len(box.python)} modules (scanpy, scvi, pydeseq2, gseapy, ...): biotool version",
        "doc": f"{staging.home() / DOC}: each one's use and data, what is absent",
    }


def _cell(text: str) -> str:
    """Text in a Markdown table cell: a `|` would start another column."""
    return text.replace("|", "\\|")


def markdown(deb: dict[str, str], box: Toolbox | None = None,
             pip: dict[str, str] | None = None) -> str:
    """TOOLS.md from the toolbox, {Debian package: version} and {PyPI distribution: version}
    (the commands the Python environment installs)."""
    box = box or load()
    pip = pip or {}
    lines = [
        "# The toolbox",
        "",
        "Generated from `entrypoints/biotool/system/toolbox.toml` "
        "(`python -m biotool.system.toolbox markdown`); in the image at `/opt/biotool/TOOLS.md`.",
        "Nothing can be installed in this sandbox: what is listed here is what there is. "
        "`biotool list` lists the same names, `biotool version` their versions, and "
        "`biotool doctor` checks that each starts.",
        "",
        "Data the tools need: `biotool references` lists the staged references with every "
        "index (faidx, bwa, bowtie2, hisat2, minimap2) and its path, and the gene annotation GTF "
        "staged on each genome's sequence names (`annotation`); `biotool list` gives every "
        "staged database's path and a `use` line (in production images: Swiss-Prot for blastp "
        "and diamond, a Kraken 2 database); `biotool index --reference "
        "NAME --kind KIND` gives the path of one index, building it into the cache first when it "
        "is not staged (bounded by `--timeout`). Example inputs are under `/opt/biotool/samples`.",
        "",
    ]
    for fam, tools in box.families().items():
        lines += [f"## {fam}", "", "| command | version (Debian package) | what | data |",
                  "|---|---|---|---|"]
        for t in tools:
            cmd = " / ".join(f"`{n}`" for n in names(t))
            ver = (f"{pip.get(t.pip, '?')} (PyPI {t.pip})" if t.pip
                   else f"{deb.get(t.package, '?')} ({t.package})")
            lines.append(f"| {cmd} | {ver} | {_cell(t.what)} | {_cell(t.data)} |")
        lines.append("")
    lines += ["## R", "", f"R {deb.get(box.r_package, '?')} (`R`, `Rscript`) with "
              + ", ".join(f"{lib} ({deb.get(pkg, '?')})"
                          for lib, pkg in zip(box.r_libraries, box.r_packages))
              + ". `library()` of each works as any user on the read-only root.", ""]
    lines += ["## Python", "", "In `/opt/venv` (the `python` on PATH), pinned in "
              "`image/requirements-*.lock`: " + ", ".join(f"`{m}` ({d})" for m, d in
                                                          box.python.items()) + ".", ""]
    if box.data:
        lines += ["## Staged data for the tools", "", "| what | path | from (Debian package) |",
                  "|---|---|---|"]
        lines += [f"| {_cell(d.what)} | `{d.path}` | {deb.get(d.package, '?')} ({d.package}) |"
                  for d in box.data]
        lines.append("")
    lines += ["## Deliberately not here", "", "| what | why | what covers the need |",
              "|---|---|---|"]
    lines += [f"| {_cell(a.name)} | {_cell(a.why)} | {_cell(a.instead)} |" for a in box.absent]
    if box.union:
        lines += ["", "## Against what agents' evaluation environments carry", "",
                  "The union of the command-line tools, R libraries and Python modules of the "
                  "environments agents are evaluated in (issue 34), checked as an agent reaches "
                  "each: here before the second round, here now, and the names still absent "
                  "(each a row above).", "",
                  "| kind | union | before | now | absent |", "|---|---|---|---|---|"]
        for kind, c in coverage(box).items():
            lines.append(f"| {kind} | {c['union']} | {c['before']} | {c['now']} "
                         f"({100 * c['now'] // c['union']}%) | "
                         + ", ".join(f"`{n}`" for n in c["absent"] + c["gap"]) + " |")
        union, now = (sum(c[k] for c in coverage(box).values()) for k in ("union", "now"))
        lines.append(f"| all | {union} | {sum(c['before'] for c in coverage(box).values())} | "
                     f"{now} ({100 * now // union}%) | |")
    return "\n".join(lines) + "\n"


def dockerfile_pins(text: str) -> dict[str, str]:
    """{package: version} of every `pkg=version` pin in a Dockerfile's `apt-get install` and
    `apt-get download` arguments."""
    joined = text.replace("\\\n", " ")
    args = " ".join(m.split("&&")[0] for m in re.split(r"apt-get (?:install|download)", joined)[1:])
    return dict(re.findall(r"(?<![\w.+=-])([a-z0-9][a-z0-9.+-]*)=([0-9][\w.+:~-]*)", args))


def lock_versions(text: str, dists: set[str]) -> dict[str, str]:
    """{distribution: version} of `dists` in a lock file's `name==version` lines."""
    canon = {re.sub(r"[-_.]+", "-", d).lower(): d for d in dists}
    out = {}
    for line in text.splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep and re.sub(r"[-_.]+", "-", name).lower() in canon:
            out[canon[re.sub(r"[-_.]+", "-", name).lower()]] = version
    return out


# ---------------------------------------------------------------- image build

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m biotool.system.toolbox")
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("install")
    i.add_argument("--bin", type=Path, required=True)
    i.add_argument("--doc", type=Path, required=True)
    m = sub.add_parser("markdown")
    m.add_argument("--dockerfile", type=Path, help="versions from its pins, not from dpkg")
    m.add_argument("--lock", type=Path, help="PyPI versions from this lock, not the environment")
    a = ap.parse_args(argv)
    if a.cmd == "install":
        for path in install(a.bin, a.doc):
            print(f"toolbox: made {path}", file=sys.stderr)
        return 0
    box = load()
    deb = (dockerfile_pins(a.dockerfile.read_text()) if a.dockerfile
           else debian_versions(box.packages))
    dists = {t.pip for t in box.tools if t.pip}
    pip = (lock_versions(a.lock.read_text(), dists) if a.lock
           else python_versions({d: d for d in dists}))
    sys.stdout.write(markdown(deb, box, pip))
    return 0


if __name__ == "__main__":
    sys.exit(main())
