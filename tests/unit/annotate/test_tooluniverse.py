"""The real ToolUniverse package behind the same policy: its offline compute tools run here."""

from __future__ import annotations

import json

import pytest

from biotool.output import InputError


def test_local_tooluniverse_tools_are_offered_and_remote_ones_are_not(biotool_env,
                                                                     tooluniverse_tools):
    from biotool.annotate import calls

    listing = calls.list_tools()
    rows = {r["name"]: r for r in listing["tools"] if r["source"] == "tooluniverse"}
    assert len(rows) == len(tooluniverse_tools) > 1000
    assert rows["DNA_reverse_complement"]["offered"] is True
    offered = [n for n, r in rows.items() if r["offered"]]
    # Only reviewed offline tools: nothing that needs a host is offered under the default
    # allowlist (blast.ncbi.nlm.nih.gov only).
    hosts = {t.name: t.hosts for t in tooluniverse_tools}
    assert offered and all(hosts[n] == () for n in offered)
    assert listing["counts"]["unreachable"] > 1000


def test_a_tooluniverse_tool_agrees_with_the_builtin(call, tooluniverse_tools):
    seq = "ATGAAACGCATTAGCACCACCATTACCACCACCATCACCATTACCACAGGTAACGG"
    tu = call("tu:DNA_reverse_complement", {"sequence": seq})
    ours = call("reverse_complement", {"sequence": seq})
    assert tu["source"] == "tooluniverse"
    assert ours["reverse_complement"] in str(tu["result"])
    assert tu["provenance"]["used"][0]["name"] == "tooluniverse:DNA_reverse_complement"


def test_tooluniverse_arguments_are_validated_against_its_schema(call, tooluniverse_tools):
    with pytest.raises(InputError, match=r"args\.sequence: expected string"):
        call("DNA_reverse_complement", {"sequence": 42})


def test_tooluniverse_call_from_the_command_line(biotool, tooluniverse_tools):
    res = biotool("call", "tu:DNA_translate_sequence", '{"sequence": "ATGGCCTAA"}')
    assert res.code == 0, res.stderr
    assert "MA" in json.dumps(res.json["result"])


def test_calling_a_builtin_does_not_read_the_tooluniverse_configs(call, tooluniverse_tools):
    # Reading ~700 config files costs half a second of every call; a built-in needs none.
    from biotool.annotate import tooluniverse_bridge

    tooluniverse_bridge.tools.cache_clear()
    try:
        assert call("seq_stats", {"sequence": "ATGGCC"})["tool"] == "seq_stats"
        assert tooluniverse_bridge.tools.cache_info().misses == 0
    finally:
        tooluniverse_bridge.tools()
