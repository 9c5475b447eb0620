"""What the toolbox is (toolbox.toml): the tools, R libraries, Python packages and staged data
the image carries beyond biotool, what is absent on purpose, and the union it is measured
against."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MANIFEST = Path(__file__).with_name("toolbox.toml")


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
