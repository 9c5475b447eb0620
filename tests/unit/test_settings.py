"""Every `BIOTOOL_*` variable has one home: its program's `settings.py` (biotool's, the
launcher's, the egress image's; the command-line layer's BIOTOOL_DEBUG in
commandline/settings.py), and docs/settings.md is generated from them.

No module of entrypoints/ or image/ names a variable by a string of its own (a read, a write
into a child's environment, a constant holding the name): it takes the name from a setting.
Every name written anywhere the programs live (their code, shell scripts, the Dockerfile and
the compose files, prose included) is declared, so an operator's table lists them all.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from biotool import settings as biotool_settings
import auditwire
from biotool_sandbox import settingsdoc
from biotool_sandbox.engine.variables import compose_defaults
from biotool_sandbox import settings as launcher
from commandline import settings as layer
from commandline.kinds import Size
from commandline.settings import Setting, flag

REPO = Path(__file__).resolve().parents[2]
SETTINGS_MODULES = {REPO / "entrypoints" / "commandline" / "settings.py",
                    REPO / "entrypoints" / "biotool" / "settings.py",
                    REPO / "entrypoints" / "biotool_sandbox" / "settings.py",
                    REPO / "image" / "egress" / "settings.py"}
# Not variables: the audit's line prefixes (auditwire), which share the spelling.
NOT_VARIABLES = {auditwire.SQUID_PREFIX, auditwire.GATE_PREFIX, auditwire.RELAY_PREFIX,
                 auditwire.STORE_HEADER}
NAME = re.compile(r"BIOTOOL_[A-Z0-9_]+")


def declared() -> set[str]:
    return {s.name for _, _, settings in settingsdoc.programs() for s in settings}


def named_by_literal(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every string in the module that is a variable's name alone."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and NAME.fullmatch(node.value) and node.value not in NOT_VARIABLES)


def code_files() -> list[Path]:
    return [p for root in ("entrypoints", "image") for p in sorted((REPO / root).rglob("*.py"))
            if "egg-info" not in str(p) and p not in SETTINGS_MODULES]


def test_no_module_names_a_variable_outside_the_settings_modules():
    found = {f"{p.relative_to(REPO)}:{line}": name for p in code_files()
             for line, name in named_by_literal(p)}
    assert not found, f"read these through the program's settings.py: {found}"


def test_the_walk_sees_a_read_a_write_and_a_constant(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('import os\nA = os.environ.get("BIOTOOL_A")\nos.environ["BIOTOOL_B"] = "1"\n'
                      'C = "BIOTOOL_C"\nD = f"set BIOTOOL_D to a folder"\nE = "BIOTOOL_GATE"\n')
    assert named_by_literal(module) == [(2, "BIOTOOL_A"), (3, "BIOTOOL_B"), (4, "BIOTOOL_C")]


def text_files() -> list[Path]:
    files = [REPO / "Dockerfile", REPO / "compose.yaml", REPO / "compose.inspect.yaml"]
    for root in ("entrypoints", "image"):
        files += [p for p in sorted((REPO / root).rglob("*")) if p.is_file()
                  and p.suffix in (".py", ".sh", ".def", ".toml", ".conf", "")
                  and "egg-info" not in str(p) and "__pycache__" not in p.parts]
    return files


def test_every_variable_written_where_the_programs_live_is_declared():
    names = declared()
    undeclared = {}
    for path in text_files():
        for name in set(NAME.findall(path.read_text(encoding="utf-8", errors="replace"))):
            if name not in names and name not in NOT_VARIABLES:
                undeclared.setdefault(name, str(path.relative_to(REPO)))
    assert not undeclared, f"declare these in their program's settings.py: {undeclared}"


def test_the_variables_the_maintainer_found_undocumented_are_in_the_table():
    doc = settingsdoc.DOC.read_text()
    for short in ("BUILD_CACHES", "BUILD_INFO", "COMPOSE_FILE", "EGRESS_EXTRA_CA", "FETCH_BACKOFF",
                  "HOME", "MANIFESTS", "NCBI_EMAIL", "NCBI_PACING_DIR", "QUIET", "RULES",
                  "VARTMP_SIZE"):
        assert f"| `BIOTOOL_{short}` |" in doc, short


def test_each_program_declares_a_variable_once():
    for heading, _, settings in settingsdoc.programs():
        names = [s.name for s in settings]
        assert len(names) == len(set(names)), heading
        assert all(s.doc and "\n" not in s.doc for s in settings), heading


def test_docs_settings_md_is_generated_from_the_settings_modules():
    assert settingsdoc.DOC.read_text() == settingsdoc.markdown(), (
        "docs/settings.md is stale: PYTHONPATH=entrypoints python -m "
        "biotool_sandbox.settingsdoc > docs/settings.md")


def test_compose_variables_are_the_launchers_with_compose_yamls_defaults():
    for compose in (REPO / "compose.yaml", REPO / "compose.inspect.yaml"):
        defaults = compose_defaults(compose)
        assert set(defaults) <= {s.name for s in launcher.COMPOSE}, compose
        for s in launcher.COMPOSE:
            if s.default is not None and s.name in defaults:
                assert s.default == defaults[s.name], (compose, s.name)
    assert all(s in launcher.SETTINGS for s in launcher.COMPOSE)


def test_a_setting_reads_empty_as_unset_and_names_itself_when_refused():
    size = Setting("BIOTOOL_X", "4g", Size(), "a size")
    assert size.get({}) == size.get({"BIOTOOL_X": " "}) == "4g"
    assert size.get({"BIOTOOL_X": "2g"}) == "2g"
    with pytest.raises(ValueError, match=r"^BIOTOOL_X='lots': 'lots' is not a size"):
        size.get({"BIOTOOL_X": "lots"})
    on = Setting("BIOTOOL_Y", False, flag, "a switch")
    assert [on.get({"BIOTOOL_Y": v}) for v in ("1", "TRUE", " yes", "on", "0", "no")] == \
        [True, True, True, True, False, False]
    assert layer.DEBUG.get({}) is False


def test_biotool_reads_its_settings_at_the_call_not_at_import(monkeypatch, tmp_path):
    from biotool import staging

    monkeypatch.setenv(biotool_settings.HOME.name, str(tmp_path))
    assert staging.home() == tmp_path
    monkeypatch.setenv(biotool_settings.HOME.name, "")
    assert staging.home() == biotool_settings.HOME.default
