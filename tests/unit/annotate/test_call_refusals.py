"""`biotool call` refuses what the policy forbids, with exit 3 naming the rule: every denied
category, and aliasing tricks, for built-in tools and for real ToolUniverse tools."""

from __future__ import annotations

import pytest

from biotool.output import RefusedError

DENIED_CATEGORIES = ("dataset_lookup", "accession_lookup", "literature_lookup")
BUILTIN_CATEGORIES = {"sequence_analysis": "seq_stats", "gene_annotation": "gene_lookup",
                      "variant_annotation": "variant_annotate"}


@pytest.mark.parametrize("category,tool", sorted(BUILTIN_CATEGORIES.items()))
def test_denying_a_builtin_category_refuses_its_tools(rules_file, call, category, tool):
    path = rules_file(deny_categories=[category])
    with pytest.raises(RefusedError) as exc:
        call(tool, {"query": "S"} if tool == "gene_lookup" else {"sequence": "ACGT"})
    assert exc.value.exit_code == 3
    assert f"{path} [tools] deny_categories '{category}'" in str(exc.value)


@pytest.mark.parametrize("alias", [
    "translate", "TRANSLATE", "Translate", "trаnslate",  # Cyrillic а
    "ｔｒａｎｓｌａｔｅ", "trans-late", "trans_late", "tr\u200banslate", "biotool.translate",
    "biotool:TRANSLATE", "transl4te",
])
def test_aliases_of_a_denied_builtin_are_refused(rules_file, call, alias):
    rules_file(deny_patterns=["translate"])
    with pytest.raises(RefusedError) as exc:
        call(alias, {"sequence": "ATGGCC"})
    assert "deny_patterns 'translate'" in str(exc.value)


def test_the_same_builtin_runs_when_the_rule_is_absent(rules_file, call):
    rules_file()
    assert call("translate", {"sequence": "ATGGCC"})["frames"][0]["protein"] == "MA"


def _one_per_category(tools):
    out = {}
    for tool in tools:
        if tool.category in DENIED_CATEGORIES:
            out.setdefault(tool.category, tool)
    return out


@pytest.mark.parametrize("category", DENIED_CATEGORIES)
def test_every_denied_category_refuses_tooluniverse_tools_by_category_alone(
        rules_file, call, tooluniverse_tools, category):
    # No name patterns at all: the category rule by itself must refuse.
    path = rules_file(deny_categories=list(DENIED_CATEGORIES))
    members = [t for t in tooluniverse_tools if t.category == category]
    assert len(members) >= 10, category
    for tool in members[:5]:
        with pytest.raises(RefusedError) as exc:
            call(tool.name, {})
        assert f"{path} [tools] deny_categories '{category}'" in str(exc.value), tool.name


@pytest.mark.parametrize("name", [
    "PubMed_search_articles", "pubmed_search_articles", "ＰｕｂＭｅｄ_search_articles",
    "PubМed_search_articles",  # Cyrillic М
    "Pub-Med.search.articles", "tu:PubMed_search_articles", "tooluniverse.PubMed_search_articles",
    "EuropePMC_search_articles", "europe_pmc_search_articles", "GEO_search_datasets",
    "ncbi-geo-search", "arrayexpress_search_experiments", "ArrayΕxpress_search",  # Greek Ε
    "BioSamples_search", "ENA_get_entry", "SRA_search", "s.r.a_search",
])
def test_aliases_of_denied_tooluniverse_tools_are_refused(call, tooluniverse_tools, name,
                                                          biotool_env):
    with pytest.raises(RefusedError) as exc:
        call(name, {})
    assert "[tools] deny_" in str(exc.value)


def test_shipped_rules_refuse_every_tooluniverse_tool_of_a_denied_category(tooluniverse_tools,
                                                                         biotool_env):
    from biotool.annotate import calls

    rows = calls.list_tools()["tools"]
    by_name = {r["name"]: r for r in rows}
    denied = [t for t in tooluniverse_tools if t.category in DENIED_CATEGORIES]
    assert len(denied) > 300
    assert all(not by_name[t.name]["offered"] and "[tools]" in by_name[t.name]["rule"]
               for t in denied)


def test_a_tooluniverse_tool_needing_an_unlisted_host_is_not_offered(
        rules_file, call, tooluniverse_tools):
    from biotool.annotate import calls

    tool = next(t for t in tooluniverse_tools if t.name == "Alliance_get_gene")
    assert tool.hosts == ("www.alliancegenome.org:443",)
    rules_file()
    with pytest.raises(RefusedError) as exc:
        call(tool.name, {})
    assert "www.alliancegenome.org:443, not on the egress allowlist" in str(exc.value)
    assert "[egress] allow" in str(exc.value)
    # Put the host on the allowlist and the same tool is offered (listing only: no traffic).
    rules_file(egress=["www.alliancegenome.org:443"])
    row = next(r for r in calls.list_tools("Alliance_get_gene")["tools"]
               if r["name"] == tool.name)
    assert row["offered"] is True


def test_a_tool_with_undeterminable_network_use_is_not_offered(tooluniverse_tools,
                                                               biotool_env):
    from biotool.annotate import calls

    # BLAST through Biopython's NCBIWWW: no URL in its config, so its hosts are unknown.
    row = next(r for r in calls.list_tools("BLAST_nucleotide_search")["tools"]
               if r["name"] == "BLAST_nucleotide_search")
    assert row["offered"] is False and "unknown-network-use" in row["reason"]


@pytest.mark.parametrize("name", ["PubMed_search_articles", "ＧＥＯ_search", "biotool.Pub_Med"])
def test_refusal_exits_3_with_one_line_naming_the_rule(biotool, name):
    res = biotool("call", name, "{}")
    assert res.code == 3
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused" in lines[0] and "deny_patterns" in lines[0]


def test_schema_of_a_denied_tool_is_refused_too(biotool):
    res = biotool("call", "PubMed_search_articles", "--schema")
    assert res.code == 3 and "deny_patterns 'pubmed'" in res.stderr


@pytest.mark.parametrize("name", [
    "ᴘᴜʙᴍᴇᴅ_search",           # Latin small capitals, which NFKC leaves alone
    "ɢᴇᴏ_search", "ꜱʀᴀ",
    "pu\u0301b\u0308med",        # combining marks
    "pub\u115fmed",              # a Hangul filler as an invisible separator
    "рubМеd",                    # mixed Cyrillic and Latin
    "search_pubmed", "pubmed2", "pub.med", "pub/med", "pub med", "g/e/o", "g.e.o_query",
    "efetch", "pmid_lookup", "article_search", "search_papers", "doi_lookup", "medline",
    "chemrxiv_search", "cellxgene_query", "tcga", "get_bibliography",
])
def test_more_aliasing_tricks_are_refused_by_the_shipped_rules(biotool_env, call, name):
    with pytest.raises(RefusedError) as exc:
        call(name, {})
    assert exc.value.exit_code == 3 and "[tools] deny_patterns" in str(exc.value)


@pytest.mark.parametrize("name", ["geometry", "gsea", "sienna", "tenable", "seq_stats",
                                  "primer_tm", "restriction_sites"])
def test_names_that_only_contain_a_short_pattern_inside_a_word_are_not_refused(biotool_env,
                                                                                name):
    from biotool import rules
    from biotool.annotate import policy

    assert policy.check([name], "", rules.load()).permitted


def test_a_benign_named_tooluniverse_tool_calling_a_literature_gateway_is_refused_by_policy(
        rules_file, call, tooluniverse_tools):
    # ClinVar's tools have a harmless name and category, but call NCBI E-utilities (which
    # reach PubMed): the endpoint rule refuses them even with their host on the allowlist.
    tool = next(t for t in tooluniverse_tools if t.name == "ClinVar_search_variants")
    assert tool.category == "tooluniverse:clinvar"
    assert any(e.startswith("eutils.ncbi.nlm.nih.gov/entrez") for e in tool.endpoints)
    rules_file(deny_patterns=["entrez"], egress=[h for h in tool.hosts])
    with pytest.raises(RefusedError) as exc:
        call(tool.name, {})
    assert "endpoint 'eutils.ncbi.nlm.nih.gov/entrez" in str(exc.value)
    assert "deny_patterns 'entrez'" in str(exc.value)


def test_shipped_rules_offer_no_tool_whose_endpoints_are_dataset_or_literature_services(
        biotool_env, tooluniverse_tools):
    from biotool.annotate import calls

    by_name = {r["name"]: r for r in calls.list_tools()["tools"]}
    hosts = ("eutils.ncbi.nlm.nih.gov", "www.ebi.ac.uk/ena", "www.ebi.ac.uk/europepmc",
             "www.ncbi.nlm.nih.gov/geo", "api.openalex.org", "api.crossref.org")
    gateway = [t for t in tooluniverse_tools
               if any(e.startswith(hosts) for e in t.endpoints)]
    assert len(gateway) > 50
    assert all(not by_name[t.name]["offered"] and "[tools]" in by_name[t.name]["rule"]
               for t in gateway)


def test_a_very_long_name_is_bad_input_not_a_crash(biotool):
    res = biotool("call", "get" * 3000 + "pubmed", "{}")
    assert res.code == 2 and res.stdout == "" and "tool names are at most 200" in res.stderr


def test_affix_runs_of_any_length_are_read_without_recursion(biotool_env):
    from biotool.annotate import policy

    assert policy._affixes_only("get" * 5000) and not policy._affixes_only("get" * 5000 + "x")
    assert policy.pattern_matches("get_" * 40 + "pubmed", "pubmed")


@pytest.mark.parametrize("name", ["web_search", "Wikipedia_search", "cBioPortal_get_cancer_studies",
                                  "IMGT_get_sequence"])
def test_web_search_and_study_portals_are_refused_by_the_shipped_rules(biotool_env, call,
                                                                       tooluniverse_tools,
                                                                       name):
    # web_search and the Wikipedia tools find datasets and papers by description; IMGT's
    # tools fetch records through EBI dbfetch (an endpoint rule, not a name one).
    with pytest.raises(RefusedError) as exc:
        call(name, {})
    assert "[tools] deny_patterns" in str(exc.value)
