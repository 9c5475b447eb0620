"""The tool policy: denied names cannot slip through under another spelling, and ordinary
tool names are not caught by accident."""

from __future__ import annotations

import pytest

from biotool.annotate import policy
from biotool.annotate.registry import BUILTIN
from biotool.rules import REPO_RULES, load, parse

ALIASES_OF_PUBMED = [
    "PubMed", "PUBMED", "pubmed_search", "Pub-Med", "pub.med", "pub med", "Pub_Med",
    "ｐｕｂｍｅｄ",            # fullwidth letters (NFKC)
    "рubmеd",                  # Cyrillic р and е
    "pubmеd",                  # one Cyrillic е
    "ΡubMed",                  # Greek capital rho
    "pub\u200bmed",            # zero-width space
    "pübmed",                  # combining accent
    "pubm3d",                  # digit for a letter
    "tu:PubMed_search_articles", "tooluniverse.pubmed", "mcp__pubmed__search",
    "searchPubMedArticles", "getpubmedrecords", "PubMed2",
]


@pytest.mark.parametrize("name", ALIASES_OF_PUBMED)
def test_every_spelling_of_a_denied_name_matches(name):
    assert policy.pattern_matches(name, "pubmed"), name


@pytest.mark.parametrize("name", [
    "GEO", "geo_search", "GEOquery", "geosearch", "get_geo", "getGEO", "g_e_o", "g-e-o-data",
    "NCBI_GEO2", "ＧＥＯ", "gеo",  # Cyrillic е
    "ncbi.geo.series",
])
def test_short_pattern_as_a_word_or_with_api_words_matches(name):
    assert policy.pattern_matches(name, "geo"), name


@pytest.mark.parametrize("name,pattern", [
    ("geometry_optimize", "geo"), ("GSEA_prerank", "gse"), ("ssGSEA_score", "gse"),
    ("enantiomer_check", "ena"), ("rename_sequences", "ena"), ("sequence_stats", "ena"),
    ("genome_nexus", "gse"), ("terrain", "sra"), ("compare_seqs", "pmc"),
    ("fluorescence_excitation", "citation"), ("nucleotide_search", "esearch"),
])
def test_short_pattern_inside_an_ordinary_word_does_not_match(name, pattern):
    assert not policy.pattern_matches(name, pattern), name


def test_every_builtin_tool_is_offered_under_the_shipped_rules():
    rules = load(REPO_RULES)
    for tool in BUILTIN:
        verdict = policy.decide(tool.names(), tool.category, tool.hosts, rules, tool.labels)
        assert verdict.offered, (tool.name, verdict.reason)


def _rules(tools: str, egress='["blast.ncbi.nlm.nih.gov:443"]'):
    return parse(f"[egress]\nallow = {egress}\n[tools]\n{tools}", "test-rules.toml")


def test_deny_wins_over_allow():
    rules = _rules('deny_patterns = ["translate"]\nallow = ["translate"]')
    verdict = policy.check(["translate"], "sequence_analysis", rules)
    assert not verdict.permitted and "deny_patterns 'translate'" in verdict.rule


def test_a_non_empty_allow_list_admits_only_the_tools_it_names():
    rules = _rules('allow = ["seq_stats"]')
    assert policy.check(["seq_stats"], "sequence_analysis", rules).permitted
    refused = policy.check(["translate"], "sequence_analysis", rules)
    assert not refused.permitted and refused.rule.endswith("allow")


def test_a_denied_category_is_refused_with_its_rule_named():
    rules = _rules('deny_categories = ["Literature_Lookup"]')
    verdict = policy.check(["anything"], "literature_lookup", rules)
    assert not verdict.permitted
    assert verdict.rule == "test-rules.toml [tools] deny_categories 'literature_lookup'"


def test_a_tool_needing_a_host_off_the_allowlist_is_not_offered():
    rules = _rules("")
    verdict = policy.decide(["uniprot_tool"], "x", ("rest.uniprot.org:443",), rules)
    assert verdict.permitted and not verdict.offered
    assert verdict.unreachable_hosts == ("rest.uniprot.org:443",)
    allowed = _rules("", egress='["rest.uniprot.org:443"]')
    assert policy.decide(["uniprot_tool"], "x", ("rest.uniprot.org:443",), allowed).offered
    # Same host on another port is a different allowlist entry.
    assert not policy.decide(["t"], "x", ("rest.uniprot.org:80",), allowed).offered
