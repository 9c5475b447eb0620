"""Fixtures of the annotate family: a rules file of one's own, and in-process calls."""

from __future__ import annotations

import json

import pytest

DEFAULT_EGRESS = '[egress]\nallow = ["blast.ncbi.nlm.nih.gov:443"]\n'


@pytest.fixture
def rules_file(tmp_path, monkeypatch):
    """Write a rules file with the given [tools] lists and point BIOTOOL_RULES at it."""
    count = iter(range(1000))

    def write(deny_categories=(), deny_patterns=(), allow=(), egress=None) -> str:
        egress_block = DEFAULT_EGRESS if egress is None else \
            f"[egress]\nallow = {json.dumps(list(egress))}\n"
        path = tmp_path / f"rules-{next(count)}.toml"
        path.write_text(egress_block + "[tools]\n"
                        f"deny_categories = {json.dumps(list(deny_categories))}\n"
                        f"deny_patterns = {json.dumps(list(deny_patterns))}\n"
                        f"allow = {json.dumps(list(allow))}\n", encoding="utf-8")
        monkeypatch.setenv("BIOTOOL_RULES", str(path))
        return str(path)

    return write


@pytest.fixture
def call(biotool_env):
    """`biotool call` in process: (name, args dict) -> the JSON result; errors raised as is."""
    from biotool.annotate import calls
    from biotool.output import render

    def run(name: str, args: dict | None = None, max_chars: int = 0) -> dict:
        # Rendered exactly as stdout would carry it, so tests see what the agent sees.
        return json.loads(render(calls.call(name, json.dumps(args or {}), max_chars)))

    return run


@pytest.fixture(scope="session")
def tooluniverse_tools():
    """The real ToolUniverse package's tools; the extra must be installed for these tests
    (pip install tooluniverse==1.5.7, as docs/annotate.md says)."""
    from biotool.annotate import tooluniverse_bridge

    assert tooluniverse_bridge.installed(), \
        "ToolUniverse tests need the optional extra: pip install tooluniverse==1.5.7"
    return tooluniverse_bridge.tools()
