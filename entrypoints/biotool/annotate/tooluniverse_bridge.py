"""ToolUniverse (the optional extra `biotool[tooluniverse]`) behind the same policy.

Its tools are read from the package's own JSON configs and listed beside the built-ins; each
gets a biotool category from its collection (so `deny_categories` applies to them too) and
the network hosts it needs. Only classes reviewed as offline compute count as local; for any
other the hosts are the URLs in its config and module, or unknown, and an unknown or
non-allowlisted host means the tool is not offered. The host/path of each of those URLs is
also matched by the policy's name patterns ("eutils.ncbi.nlm.nih.gov/entrez"), so a tool with
a harmless name that queries a literature or dataset service is refused outright. Calls instantiate the one tool class
directly: the package's __init__ imports its MCP server and tool hub (about ten seconds),
which a single local computation does not need.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
import types
from functools import lru_cache
from pathlib import Path

from biotool.annotate.policy import UNKNOWN_HOST
from biotool.annotate.registry import Tool
from biotool.output import ToolFailure

PACKAGE = "tooluniverse"
PREFIXES = ("tooluniverse:", "tu:", "tooluniverse.", "tu.")

# Implementations reviewed as pure local computation (their modules import no network
# client); everything else is treated as needing the network.
LOCAL_TYPES = frozenset({
    "DNATool", "ProtParamTool", "PopGenTool", "DegreesOfUnsaturationTool", "DnDsTool",
    "EpidemiologyTool", "ScientificCalculatorTool",
})
_NETWORK_IMPORT = re.compile(r"^\s*(?:import|from)\s+(requests|urllib|httpx|aiohttp|socket|"
                             r"http\.client|urllib3|websockets|Bio\.Entrez|Bio\.Blast|"
                             r"boltz_api|huggingface_hub|openai|mcp|fastmcp|subprocess|"
                             r"importlib)\b"
                             r"|^\s*from\s+Bio\s+import\s+[^\n]*\b(Entrez|Blast|NCBIWWW|ExPASy|"
                             r"TogoWS|KEGG)\b", re.M)
_URL = re.compile(r"https?://([A-Za-z0-9.-]+\.[A-Za-z]{2,})(?::(\d+))?(/[A-Za-z0-9._~/-]*)?")

# ToolUniverse collections (the stem of their JSON file) by what they look up; these map onto
# the rules' deny_categories. Names and labels are also matched by deny_patterns.
LITERATURE = {
    "pubmed", "pubmed_utils", "pmc", "europe_pmc", "europepmc_annotations", "europepmc_citations",
    "epmc_annotations", "semantic_scholar", "semantic_scholar_ext", "openalex", "crossref",
    "arxiv", "biorxiv", "biorxiv_ext", "medrxiv", "core", "doaj", "unpaywall", "dblp", "hal",
    "opencitations", "icite", "scite", "pubtator", "pubtator3_ext", "litvar", "literature_search",
    "ncbi_bookshelf_reference", "osf_preprints", "retraction", "openaire", "inspirehep", "bgpt",
    "consensus", "orcid", "protocolsio",
}
DATASET = {
    "geo", "sra", "ncbi_sra", "ena_browser", "ena_portal", "arrayexpress", "biostudies",
    "biosamples", "bioproject", "dbgap", "ega", "ddbj", "omicsdi", "zenodo", "figshare", "dryad",
    "dataverse", "datacite", "dataone", "datagov", "openaire_dataset", "re3data", "archs4",
    "chipatlas", "expression_atlas", "gxa", "scxa", "cellxgene_discovery", "cellxgene_census",
    "single_cell_portal", "hca", "ucsc_cell_browser", "pride", "proteomexchange", "massive",
    "metabolights", "metabolomics_workbench", "mgnify", "mgnify_expanded", "encode", "gdc",
    "tcia", "idr", "idr_searchengine", "bioimage_archive", "empiar", "openneuro", "dandi",
    "synapse", "immport", "fourdn", "hubmap", "hubmap_sample", "nasa_osdr", "gsa", "pdc",
    "dataset", "tdc_dataset", "cryoet", "neurovault", "ncbi_datasets", "biothings_gateway",
}
ACCESSION = {"ncbi_nucleotide", "dbfetch", "ensembl_sequence", "identifiers_org", "togoid",
             "idmap", "uniprot_idmapping", "ensembl_xrefs", "ebi_search", "nextstrain",
             "pathoplexus", "bvbrc", "sequence_analyze"}


def installed() -> bool:
    return importlib.util.find_spec(PACKAGE) is not None


def _package_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    return Path(list(spec.submodule_search_locations)[0])


def version() -> str:
    from importlib.metadata import version as v

    return v(PACKAGE)


def category_of(collection: str) -> str:
    if collection in LITERATURE:
        return "literature_lookup"
    if collection in DATASET:
        return "dataset_lookup"
    if collection in ACCESSION:
        return "accession_lookup"
    return f"tooluniverse:{collection}"


@lru_cache(maxsize=1)
def _registry() -> dict:
    path = _package_dir() / "_lazy_registry_static.py"
    text = path.read_text() if path.exists() else ""
    return dict(re.findall(r'"([A-Za-z0-9_]+)":\s*"([A-Za-z0-9_]+)"', text))


@lru_cache(maxsize=None)
def _module_source(module: str) -> str:
    try:
        return (_package_dir() / f"{module}.py").read_text(errors="replace")
    except OSError:
        return ""


def _network_use(config: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(hosts as host:port, endpoints as host/path) of a tool: () for a reviewed local class,
    else every URL in its config wiring and its module, or UNKNOWN_HOST when none is found."""
    kind = config.get("type", "")
    module = _registry().get(kind)
    source = _module_source(module) if module else ""
    if kind in LOCAL_TYPES and module and not _NETWORK_IMPORT.search(source) \
            and not _URL.search(source):
        return (), ()
    wiring = {k: v for k, v in config.items()
              if k not in ("description", "parameter", "return_schema", "test_examples", "label")}
    hosts, endpoints = set(), set()
    for host, port, path in _URL.findall(json.dumps(wiring) + "\n" + source):
        hosts.add(f"{host.lower()}:{port or 443}")
        endpoints.add(host.lower() + path.rstrip("/"))
    return (tuple(sorted(hosts)) or (UNKNOWN_HOST,)), tuple(sorted(endpoints))


@lru_cache(maxsize=1)
def tools() -> tuple[Tool, ...]:
    """Every ToolUniverse tool as a registry Tool (empty when the package is not installed)."""
    if not installed():
        return ()
    out = []
    for path in sorted((_package_dir() / "data").glob("*.json")):
        try:
            configs = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(configs, list):
            continue
        collection = path.stem.removesuffix("_tools").removesuffix("_tool")
        for cfg in configs:
            if not isinstance(cfg, dict) or not isinstance(cfg.get("name"), str):
                continue
            params = cfg.get("parameter") if isinstance(cfg.get("parameter"), dict) else {}
            hosts, endpoints = _network_use(cfg)
            out.append(Tool(
                name=cfg["name"], description=str(cfg.get("description", ""))[:2000],
                category=category_of(collection), arguments=params,
                result_schema=cfg.get("return_schema") or {}, hosts=hosts,
                endpoints=endpoints,
                source="tooluniverse", labels=(collection, str(cfg.get("type", ""))),
                aliases=tuple(a for a in cfg.get("aliases", []) or [] if isinstance(a, str)),
                extra={"config_file": str(path), "config": cfg}))
    return tuple(out)


def _tool_class(kind: str):
    module = _registry().get(kind)
    if not module:
        raise ToolFailure(f"tooluniverse: no implementation registered for type {kind!r}")
    if PACKAGE not in sys.modules:
        # A bare package object so that only this tool's module and its base classes load.
        pkg = types.ModuleType(PACKAGE)
        pkg.__spec__ = importlib.util.find_spec(PACKAGE)  # so find_spec still answers later
        pkg.__path__ = [str(_package_dir())]
        sys.modules[PACKAGE] = pkg
    mod = importlib.import_module(f"{PACKAGE}.{module}")
    return getattr(mod, kind)


def call(tool: Tool, args: dict) -> dict:
    """Run one ToolUniverse tool locally; its own error answers become exit 4."""
    from biotool.cache import sha256_file
    from biotool.competence import bounded
    from biotool.provenance import provenance, used

    config = tool.extra["config"]
    instance = _tool_class(config["type"])(config)
    try:
        result = instance.run(args)
    except Exception as exc:  # noqa: BLE001 - a third-party tool; report it in one line
        raise ToolFailure(f"tooluniverse tool {tool.name} failed: {type(exc).__name__}: "
                          f"{exc}") from None
    if isinstance(result, dict) and result.get("status") == "error":
        raise ToolFailure(f"tooluniverse tool {tool.name} answered an error: "
                          f"{result.get('error') or result.get('message') or 'no detail'}")
    return {"result": result,
            "competence": bounded(0.7, 0.5, blind_spots=[
                "a ToolUniverse tool: its answer carries no competence of its own; check it "
                "against a built-in tool where one exists"]),
            "provenance": provenance(used("tool", f"tooluniverse:{tool.name}",
                                          sha256_file(Path(tool.extra["config_file"])),
                                          version=version(), type=config["type"]))}
