"""The import walk of the whole `entrypoints/` tree: no import cycle and no upward import,
with the layers docs/architecture.md draws ("Layers").

Bottom first: `commandline` (the command-line layer, on Typer) and the neutral
modules beside it (`auditwire`, the audit's wire format both images read); biotool's core
(its top-level shared modules: output, files, cache, procs, family, ...); `biotool.staging` (the
staged-item inventory every command reads); `biotool.alignment` (references, indexes,
aligners); the families (`system`, `reads`, `taxonomy`, `singlecell`, `annotate`), each apart
from the others; `biotool.stagebuild`, the build-time staging (it indexes with `alignment` and
runs the families' builders and checks, by a table of names, never a "module:function" string
in a manifest); and the programs on top (`biotool.cli`, `biotool.__main__`,
`biotool.buildcache`, which runs `celltype`'s code at image build, and
`biotool.staging.__main__`, the `python -m biotool.staging` that runs `stagebuild`). A program
is a unit of its own, apart from the package whose name it carries: `biotool.staging` itself
never imports the build. `molperceive` and the launcher `biotool_sandbox` stand beside
biotool: they import the command-line layer and biotool's core, never a family. The draws of
Harbor tasks (`biotool_sandbox.draws`, run in the image by `python -m
biotool_sandbox.harbor_draw`) are programs too, each module a unit: they read staged items.
Inside the launcher, bottom first: its shared top-level modules (errors, settings, timeouts,
the audit's parser, the Harbor verifier's modules that run in the image), `engine` (the docker
engine, compose files, runs, limits, images), `backends` (the compose stack, Apptainer,
Kubernetes values, Harbor environment, each declaring its Capabilities), `providers` (the
Inspect sandbox providers), and its programs on top (LAUNCHER_PROGRAMS: the CLI and what only
it runs).

Every `import` and `from ... import` counts, at a module's top or inside a function, relative
ones resolved, and so does every `importlib.import_module` call: of a literal name, of an
f-string (each placeholder one name segment: `f"biotool.{family}.cli"` is every family's
`cli`), or of a name computed from data, which DYNAMIC must say how to read (annotate's
built-in tools, by the "module:function" targets of annotate/registry.py); a load the walk
cannot resolve fails it.

KNOWN lists the import edges that still close a cycle or point upward, each with why it is
not fixed here; the walk leaves them out, so any new cycle or upward import fails, and an
exception that no longer exists fails too (the list stays true).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ENTRYPOINTS = Path(__file__).resolve().parents[2] / "entrypoints"

FAMILIES = {"system", "reads", "taxonomy", "singlecell", "annotate"}
PROGRAMS = {"biotool.cli", "biotool.__main__", "biotool.buildcache", "biotool.staging.__main__"}
BESIDE = {"molperceive", "biotool_sandbox"}   # import commandline and biotool's core only
NEUTRAL = {"auditwire"}  # standard-library modules of no package, which both images read
DRAWS = "biotool_sandbox.draws"               # programs: each draw module a unit of its own
LAUNCHER = "biotool_sandbox"
LAUNCHER_RANK = {"shared": 0, "engine": 1, "backends": 2, "providers": 3, "program": 4}
LAUNCHER_PROGRAMS = {f"{LAUNCHER}.{m}" for m in ("cli", "__main__", "demo", "agent",
                                                 "settingsdoc", "harbor_tasks")}
RANK = {"neutral": 0, "commandline": 0, "core": 1, "staging": 2, "alignment": 3, "family": 4, "stagebuild": 5,
        "program": 6}

GRADER = ("the Harbor verifier scores a chemistry task by MolPerceive's own rule and labels "
          "(issue 33): the one place the two programs meet, in the image that carries both")
# (importer, imported): an edge the walk leaves out, and why.
DRAWN = ("a drawn chemistry task's truth is MolPerceive's labels of the drawn molecules, which "
         "the grader scores by the same rule: in the image that carries both")
FAMILY_CLI = ("the registry of families (`FAMILIES`) loads each family's declaration, its "
              "cli.describe(), by name for `list`, `doctor` and `version`, so no family imports "
              "another and the registry imports none at its top; the families' own declarations "
              "import the registry's types")
DRAW_BY_NAME = ("a Harbor task names its draw as MODULE.FUNCTION; `python -m "
                "biotool_sandbox.harbor_draw` loads it by that name in the image, and the "
                "launcher checks a task's name through the same resolve")
KNOWN = {
    **{("biotool.family", f"biotool.{f}.cli"): FAMILY_CLI for f in FAMILIES},
    **{("biotool_sandbox.harbor_draw", f"biotool_sandbox.draws.{p.stem}"): DRAW_BY_NAME
       for p in sorted((ENTRYPOINTS / "biotool_sandbox" / "draws").glob("*.py"))
       if p.stem != "__init__"},
    ("biotool_sandbox.draws.chemistry", "molperceive"): DRAWN,
    ("biotool_sandbox.draws.chemistry", "molperceive.label"): DRAWN,
    ("biotool_sandbox.harbor_grade", "molperceive"): GRADER,
    ("biotool_sandbox.harbor_grade", "molperceive.label"): GRADER,
    ("biotool_sandbox.harbor_grade", "molperceive.score"): GRADER,
}


def modules(root: Path = ENTRYPOINTS) -> dict[str, Path]:
    """Every module under `root` by its dotted name (a package by its own name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = path
    return out


def _registry_targets(known: dict[str, Path]) -> set[str]:
    """The modules annotate's built-in tools name ("module:function" in registry.py)."""
    text = (ENTRYPOINTS / "biotool" / "annotate" / "registry.py").read_text()
    return set(re.findall(r'target="([a-z_.]+):', text))


# importlib loads of a name computed from data: how to read what each module can load.
DYNAMIC = {"biotool.annotate.calls": _registry_targets}


def _import_module_call(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr == "import_module"
            and isinstance(func.value, ast.Name) and func.value.id == "importlib")


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module's own string constants (`PACKAGE = "tooluniverse"`), which an f-string of a
    load may name."""
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def _piece(part: ast.AST, consts: dict[str, str]) -> str:
    if isinstance(part, ast.Constant):
        return re.escape(part.value)
    if isinstance(part.value, ast.Name) and part.value.id in consts:
        return re.escape(consts[part.value.id])
    if isinstance(part.value, ast.Name) and part.value.id == "family":
        return "(?:" + "|".join(sorted(FAMILIES)) + ")"  # biotool.family.FAMILIES, by name
    return r"[A-Za-z_]\w*"


def loaded(name: str, node: ast.Call, known: dict[str, Path],
           consts: dict[str, str]) -> list[str]:
    """The modules an `importlib.import_module(...)` call in module `name` can load."""
    arg = node.args[0] if node.args else None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.JoinedStr):
        pattern = "".join(_piece(p, consts) for p in arg.values)
        return sorted(m for m in known if re.fullmatch(pattern, m))
    if name in DYNAMIC:
        return sorted(DYNAMIC[name](known))
    raise AssertionError(f"{name}:{node.lineno}: an importlib load the walk cannot resolve; "
                         f"make it static or say in DYNAMIC what it loads")


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that module `name` (at `path`) imports: each imported name
    resolved to the longest known module it names (`from a import b` names a.b when b is a
    module, else a), and what its `importlib.import_module` calls load."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    tree = ast.parse(path.read_text(), str(path))
    consts = _constants(tree)
    for node in ast.walk(tree):
        if _import_module_call(node):
            names = loaded(name, node, known, consts)
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            while n and n not in known:
                n = n.rpartition(".")[0]
            if n and n != name:
                out.add(n)
    return out


def graph(root: Path = ENTRYPOINTS, leave_out=KNOWN) -> dict[str, set[str]]:
    known = modules(root)
    return {m: {t for t in imported(m, p, known) if (m, t) not in leave_out}
            for m, p in known.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iteratively)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    for root in g:
        if root in index:
            continue
        work = [(root, iter(sorted(g.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def unit(module: str) -> str:
    """What a layer is made of: biotool's sub-packages and top-level modules, the other
    packages' modules (`biotool.reads.bam` -> `biotool.reads`; `molperceive.label` itself),
    and each program (`biotool.staging.__main__` itself)."""
    return module if module in PROGRAMS or _draw(module) else ".".join(module.split(".")[:2])


def _draw(module: str) -> bool:
    return module == DRAWS or module.startswith(DRAWS + ".")


def units(g: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, targets in g.items():
        out.setdefault(unit(m), set()).update(unit(t) for t in targets if unit(t) != unit(m))
    return out


def layer(module: str) -> str:
    top, _, rest = module.partition(".")
    if _draw(module):
        return "program"
    if top in BESIDE:
        return top
    if top in NEUTRAL:
        return "neutral"
    if top == "commandline":
        return "commandline"
    sub = rest.split(".")[0]
    if unit(module) in PROGRAMS:
        return "program"
    if sub in ("staging", "alignment", "stagebuild"):
        return sub
    return "family" if sub in FAMILIES else "core"


def launcher_layer(module: str) -> str:
    """A launcher module's layer: its sub-package (engine, backends, providers), a program, or
    shared (the package's other top-level modules)."""
    sub = module.split(".")[1] if module.count(".") else ""
    if sub in LAUNCHER_RANK and sub not in ("shared", "program"):
        return sub
    return "program" if module in LAUNCHER_PROGRAMS else "shared"


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Edges against the layers: to a higher layer, to another family, from a program
    beside biotool to anything of biotool above its core, or up the launcher's own layers."""
    bad = []
    for m, targets in g.items():
        a = layer(m)
        for t in sorted(targets):
            b = layer(t)
            if a == b == LAUNCHER:
                ok = LAUNCHER_RANK[launcher_layer(t)] <= LAUNCHER_RANK[launcher_layer(m)]
            elif a in BESIDE:
                ok = b in (a, "neutral", "commandline", "core")
            elif b in BESIDE:
                ok = False
            else:
                ok = RANK[b] < RANK[a] or (RANK[b] == RANK[a]
                                           and (a != "family" or unit(t) == unit(m)))
            if not ok:
                bad.append((m, t))
    return bad


def test_no_import_cycle_between_modules():
    assert cycles(graph()) == []


def test_no_import_cycle_between_packages():
    # biotool's sub-packages and top-level modules, and the other packages' modules.
    assert cycles(units(graph())) == []


def test_no_upward_import():
    assert upward(graph()) == []


def test_every_known_exception_still_exists():
    edges = graph(leave_out={})
    gone = [edge for edge in KNOWN if edge[1] not in edges.get(edge[0], set())]
    assert not gone, f"fixed: remove from KNOWN {gone}"
    # ... and each still closes a cycle or points upward: none is listed for nothing.
    for edge in KNOWN:
        without = {k: v for k, v in KNOWN.items() if k != edge}
        g = graph(leave_out=without)
        assert cycles(g) or cycles(units(g)) or edge in upward(g), edge


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_walk_sees_what_it_must(tmp_path):
    """Imports at every depth and relative ones; a cycle, a cycle between packages, and each
    kind of upward import are found."""
    assert {"biotool.alignment.indexes", "biotool.staging"} \
        <= graph()["biotool.alignment.reference"]
    _tree(tmp_path, {
        "biotool/__init__.py": "",
        "biotool/core.py": "def f():\n    from biotool.reads import bam\n",
        "biotool/reads/__init__.py": "",
        "biotool/reads/bam.py": "from . import sibling\nfrom biotool import core\n",
        "biotool/reads/sibling.py": "from ..taxonomy import x\n",
        "biotool/taxonomy/__init__.py": "",
        "biotool/taxonomy/x.py": "",
        "molperceive/__init__.py": "",
        "molperceive/a.py": "import biotool.taxonomy.x\n",
        "biotool_sandbox/__init__.py": "",
        "biotool_sandbox/errors.py": "",
        "biotool_sandbox/cli.py": "from .backends import compose\n",
        "biotool_sandbox/engine/__init__.py": "",
        "biotool_sandbox/engine/runs.py": "from ..errors import x\nfrom ..backends import spec\n",
        "biotool_sandbox/backends/__init__.py": "",
        "biotool_sandbox/backends/compose.py": "from ..engine import runs\n",
        "biotool_sandbox/backends/spec.py": "from ..providers import config\n",
        "biotool_sandbox/providers/__init__.py": "",
        "biotool_sandbox/providers/config.py": "",
    })
    g = graph(tmp_path, leave_out={})
    assert g["biotool.core"] == {"biotool.reads", "biotool.reads.bam"}
    assert g["biotool.reads.bam"] == {"biotool", "biotool.core", "biotool.reads",
                                      "biotool.reads.sibling"}
    assert g["biotool.reads.sibling"] == {"biotool.taxonomy", "biotool.taxonomy.x"}
    assert cycles(g) == [["biotool.core", "biotool.reads.bam"]]
    assert ["biotool.core", "biotool.reads"] in cycles(units(g))
    assert set(upward(g)) == {("biotool.core", "biotool.reads"),
                              ("biotool.core", "biotool.reads.bam"),
                              ("biotool.reads.sibling", "biotool.taxonomy"),
                              ("biotool.reads.sibling", "biotool.taxonomy.x"),
                              ("molperceive.a", "biotool.taxonomy.x"),
                              # the launcher's engine under its backends under its providers
                              ("biotool_sandbox.engine.runs", "biotool_sandbox.backends"),
                              ("biotool_sandbox.engine.runs", "biotool_sandbox.backends.spec"),
                              ("biotool_sandbox.backends.spec", "biotool_sandbox.providers"),
                              ("biotool_sandbox.backends.spec",
                               "biotool_sandbox.providers.config")}


def test_the_walk_sees_importlib_loads(tmp_path):
    """A load by a literal name and by an f-string is an edge like an import; the core loading
    every family's cli is the upward import it is; a load the walk cannot read fails."""
    assert {f"biotool.{f}.cli" for f in FAMILIES} <= graph(leave_out={})["biotool.family"]
    assert {"biotool.annotate.sequence_tools", "biotool.annotate.genes"} \
        <= graph()["biotool.annotate.calls"]
    _tree(tmp_path, {
        "biotool/__init__.py": "",
        "biotool/core.py": "import importlib\ndef f(n):\n"
                           "    return importlib.import_module(f'biotool.{n}.x')\n",
        "biotool/other.py": "import importlib\nM = importlib.import_module('biotool.core')\n",
        "biotool/taxonomy/__init__.py": "",
        "biotool/taxonomy/x.py": "",
    })
    g = graph(tmp_path, leave_out={})
    assert g["biotool.core"] == {"biotool.taxonomy.x"}
    assert g["biotool.other"] == {"biotool.core"}
    assert ("biotool.core", "biotool.taxonomy.x") in upward(g)
    (tmp_path / "biotool" / "other.py").write_text("import importlib\ndef f(n):\n"
                                                   "    return importlib.import_module(n)\n")
    with pytest.raises(AssertionError, match="biotool.other:3: an importlib load"):
        graph(tmp_path, leave_out={})


@pytest.mark.parametrize("name", sorted(m for m in modules() if m.startswith("biotool.alignment")))
def test_each_alignment_module_imports_first_and_alone(name):
    # The layer below the families loads with nothing else imported before it.
    proc = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, (name, proc.stderr[-500:])


def test_the_walks_families_are_the_registrys():
    from biotool import family

    assert set(family.FAMILIES) == FAMILIES
