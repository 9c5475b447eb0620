"""Environment settings: how a program declares a `BIOTOOL_*` variable it reads (`Setting`:
name, default, kind, one doc line), the one way it reads one, and the table docs/settings.md
is generated from; and the command-line layer's own setting, `DEBUG`.

Each program declares its variables in one module, `settings.py` (biotool's, the launcher's,
the egress image's); nothing else names a `BIOTOOL_` variable
(tests/unit/test_settings.py). A kind is what an option takes (`commandline.kinds`: a number
in a range, a size, a file), a plain type (`str`, `Path`) or `flag`. Standard library only,
like `kinds.py`: the egress image copies both beside its own code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

TRUE = ("1", "true", "yes", "on")


def flag(raw: str) -> bool:
    """A switch: on for 1, true, yes or on (any case), off for anything else."""
    return raw.strip().lower() in TRUE


@dataclass(frozen=True)
class Setting:
    """One environment variable a program reads. `default`: the value when it is unset or
    empty (None: no value); `kind`: the conversion of the text set, raising ValueError with
    why it is refused; `doc`: one line for docs/settings.md."""

    name: str
    default: Any
    kind: Callable[[str], Any]
    doc: str

    def raw(self, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
        """The text set, None when unset or only blanks (empty means unset for every one)."""
        text = (os.environ if env is None else env).get(self.name)
        return text if text and text.strip() else None

    def get(self, env: Optional[Mapping[str, str]] = None) -> Any:
        """The value: the text set through `kind`, else `default`; ValueError naming the
        variable and the value when the kind refuses it."""
        text = self.raw(env)
        if text is None:
            return self.default
        try:
            return self.kind(text)
        except ValueError as exc:
            raise ValueError(f"{self.name}={text.strip()[:40]!r}: {exc}") from None


def kind_name(kind: Callable[[str], Any]) -> str:
    """A kind as the settings table shows it."""
    if kind is flag:
        return "flag (" + ", ".join(TRUE) + ")"
    if kind is str:
        return "text"
    if kind is Path:
        return "path"
    bounds = getattr(kind, "bounds", None)
    if bounds is not None:
        return f"{kind.__name__} ({bounds()})" if kind.ranged else kind.__name__
    want = getattr(kind, "want", None)
    if want is not None:
        return want
    return getattr(kind, "metavar", "").lower() or kind.__name__


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(settings: list[Setting], shown: Optional[Mapping[str, str]] = None) -> list[str]:
    """The Markdown table of `settings`, in the order declared; `shown`: a default written
    elsewhere (compose.yaml's), by variable."""
    rows = ["| variable | default | kind | what |", "|---|---|---|---|"]
    for s in settings:
        default = ("" if s.default in (None, "") else "off" if s.default is False
                   else f"`{s.default}`")
        if shown and s.name in shown:
            default = shown[s.name]
        rows.append(f"| `{s.name}` | {_cell(default)} | {_cell(kind_name(s.kind))} "
                    f"| {_cell(s.doc)} |")
    return rows


def declared(namespace: Mapping[str, Any]) -> list[Setting]:
    """The settings a settings module declares (its module-level `Setting`s), in order."""
    return [v for v in namespace.values() if isinstance(v, Setting)]


DEBUG = Setting("BIOTOOL_DEBUG", False, flag,
                "show the traceback of an internal error (exit 4) instead of its one line")
