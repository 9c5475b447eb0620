"""No module of the project reaches into Typer's or click's internals (issue 39): no import of
a private name (a module or name with a leading underscore, e.g. Typer's vendored
`typer._click`), no attribute read of one, and no monkeypatching of anything the frameworks
define (assigning to their modules, classes or functions, `setattr` on them). Subclassing
`TyperGroup` or `click.ParamType` and overriding methods in the subclass is the public way
and passes. An earlier build patched `parse_args` and `process_value` in place and imported
click from Typer's private copy; this walk fails on each of those."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WALKED = ("entrypoints", "harbor", "bench", "image", "tests")
FRAMEWORKS = ("typer", "click", "rich_click")


def _framework_methods() -> frozenset[str]:
    """Names of the methods Typer's and click's command, parameter, context and error classes
    define: assigning one on any object (`command.parse_args = ...`) replaces the
    framework's own code, whatever the object came from. (Typer is installed wherever the
    science stack is: transformers requires it.)"""
    typer = pytest.importorskip("typer")
    import typer.core

    classes = (typer.core.TyperCommand, typer.core.TyperGroup, typer.core.TyperOption,
               typer.core.TyperArgument, typer.Context, typer.BadParameter)
    return frozenset(n for c in classes for k in c.__mro__ if k is not object
                     for n, v in vars(k).items()
                     if callable(v) and not (n.startswith("__") and n.endswith("__")))


METHODS = _framework_methods()


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
               for part in dotted.split("."))


def _framework(dotted: str | None) -> bool:
    return bool(dotted) and dotted.split(".")[0] in FRAMEWORKS


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def breaches(source: str, name: str = "<source>") -> list[str]:
    """Each private import, private attribute or monkeypatch of Typer/click in `source`."""
    tree = ast.parse(source, name)
    bound: set[str] = set()  # local names bound to a framework module or object
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _framework(alias.name):
                    bound.add((alias.asname or alias.name).split(".")[0])
                    if _private(alias.name):
                        out.append(f"{name}:{node.lineno}: imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and _framework(node.module):
            for alias in node.names:
                bound.add(alias.asname or alias.name)
                if _private(f"{node.module}.{alias.name}"):
                    out.append(f"{name}:{node.lineno}: imports {alias.name} from {node.module}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and isinstance(_root(node), ast.Name) and _root(node).id in bound):
            out.append(f"{name}:{node.lineno}: reads private .{node.attr}")
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            if not isinstance(target, ast.Attribute) or not isinstance(_root(target), ast.Name):
                continue
            owner = _root(target).id
            if owner in bound:
                out.append(f"{name}:{node.lineno}: assigns .{target.attr} of {owner}")
            elif target.attr in METHODS and owner not in ("self", "cls"):
                out.append(f"{name}:{node.lineno}: replaces the framework method "
                           f".{target.attr} on {owner}")
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            first = node.args[0]
            patched = (isinstance(_root(first), ast.Name) and _root(first).id in bound) or (
                isinstance(first, ast.Constant) and isinstance(first.value, str)
                and _framework(first.value))
            if called in ("setattr", "delattr") and patched:
                out.append(f"{name}:{node.lineno}: {called} on a framework object")
    return out


def _sources():
    for top in WALKED:
        for path in sorted((REPO / top).rglob("*.py")):
            if path.resolve() != Path(__file__).resolve():
                yield path


def test_no_module_reaches_into_typer_or_click():
    found = [b for path in _sources()
             for b in breaches(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("source", [
    "import typer._click",
    "from typer._click import core",
    "from typer import _click",
    "from click.core import _check_iter",
    "import typer\nx = typer._click.Context",
    "from typer.core import TyperCommand\nTyperCommand.parse_args = lambda *a: None",
    "import click\nclick.core.Option.process_value = lambda *a: None",
    "import click as c\nsetattr(c.Option, 'process_value', None)",
    "def t(monkeypatch):\n    monkeypatch.setattr('click.core.Option.process_value', None)",
    "from typer import core\ncore.DEFAULT_MARKUP_MODE = None",
    # The earlier build's way: methods replaced on the command objects Typer built.
    "for command in group.commands.values():\n    command.parse_args = once(command.parse_args)",
    "for param in command.params:\n    param.process_value = guarded(param.process_value)",
])
def test_the_walk_finds_each_kind_of_reach(source):
    assert breaches(source), source


@pytest.mark.parametrize("source", [
    "import typer\nfrom typer.core import TyperGroup\n"
    "class Group(TyperGroup):\n    def parse_args(self, ctx, args):\n"
    "        return super().parse_args(ctx, args)\n",
    "import typer\napp = typer.Typer(rich_markup_mode=None)\napp.info.name = 'x'\n",
    "import click\nclass Seconds(click.ParamType):\n    name = 'seconds'\n",
    "import json\njson._private = 1\n",
])
def test_the_public_ways_pass(source):
    assert breaches(source) == [], source
