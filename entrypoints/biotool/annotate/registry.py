"""The tool registry: every tool `biotool call` knows, with its JSON schemas, category and the
network hosts it needs. Built-in tools are local (no hosts), their arguments are pydantic
models (annotate/arguments.py) from which their argument schemas are derived; ToolUniverse
tools join the same list when the optional package is installed (see tooluniverse_bridge).

A built-in names its model (`arguments.<name>`), which is built, with its schema, on first
use: pydantic models take a tenth of a second to build, and `biotool list` (names, categories
and the policy's verdicts) or a call of one tool needs none or one of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache


@cache
def _model(name: str) -> type:
    from biotool.annotate import arguments

    return getattr(arguments, name)


@cache
def _schema(name: str) -> dict:
    from biotool.annotate import arguments

    return arguments.json_schema(_model(name))


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    category: str
    # The arguments' JSON Schema, or (a built-in) the name of its model in annotate/arguments.py
    arguments: dict | str
    result_schema: dict
    hosts: tuple[str, ...] = ()  # host:port pairs it must reach; () for local tools
    source: str = "builtin"
    target: str = ""  # "module:function" for built-ins
    labels: tuple[str, ...] = ()  # what the tool is (collection, implementation) for policy
    aliases: tuple[str, ...] = ()
    endpoints: tuple[str, ...] = ()  # host/path of each URL it calls, matched by the policy too
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def model(self) -> type | None:
        """A built-in's arguments model; None: validated by args_schema."""
        return _model(self.arguments) if isinstance(self.arguments, str) else None

    @property
    def args_schema(self) -> dict:
        return _schema(self.arguments) if isinstance(self.arguments, str) else self.arguments

    def names(self) -> list[str]:
        return [self.name, *self.aliases]

    def schema(self) -> dict:
        return {"name": self.name, "description": self.description, "category": self.category,
                "source": self.source, "hosts": list(self.hosts),
                "endpoints": list(self.endpoints),
                "arguments": self.args_schema, "result": self.result_schema}


COMPETENCE = {"type": "object", "description": "applicable, confidence, margin, alternatives, "
              "ties, blind_spots, remedy (see `biotool --help`)"}
PROVENANCE = {"type": "object", "description": "biotool version and every staged item used, "
              "with sha256"}


def _result(props: dict) -> dict:
    return {"type": "object", "properties": {**props, "competence": COMPETENCE,
                                             "provenance": PROVENANCE}}


def _builtin(name: str, description: str, category: str, model: str, result: dict,
             target: str, aliases: tuple[str, ...] = ()) -> Tool:
    return Tool(name, description, category, model, result, target=target, aliases=aliases)


BUILTIN = (
    _builtin("seq_stats",
             "Sequence statistics: length, composition, GC fraction, ambiguous bases and molecular "
             "weight (DNA/RNA); mass, pI, GRAVY, aromaticity, instability (protein).",
             "sequence_analysis", "SeqStats",
             _result({"length": {"type": "integer"}, "composition": {"type": "object"},
                      "gc_fraction": {"type": ["number", "null"]},
                      "molecular_weight_da": {"type": "number"}}),
             target="biotool.annotate.sequence_tools:seq_stats"),
    _builtin("reverse_complement", "Reverse complement of a DNA/RNA sequence (IUPAC-aware).",
             "sequence_analysis", "ReverseComplement",
             _result({"reverse_complement": {"type": "string"}, "length": {"type": "integer"}}),
             target="biotool.annotate.sequence_tools:reverse_complement_tool",
             aliases=("revcomp",)),
    _builtin("translate",
             "Translate DNA/RNA in one or more frames (1,2,3 forward; -1,-2,-3 on the reverse "
             "complement) with any NCBI genetic code. Stops are '*', ambiguous codons 'X'.",
             "sequence_analysis", "Translate",
             _result({"frames": {"type": "array", "items": {"type": "object"}},
                      "table": {"type": "object"}}),
             target="biotool.annotate.sequence_tools:translate"),
    _builtin("find_orfs",
             "Open reading frames on both strands: start/end (1-based on the input), frame, "
             "length and protein, longest first.",
             "sequence_analysis", "FindOrfs",
             _result({"orfs": {"type": "array", "items": {"type": "object"}},
                      "count": {"type": "integer"}}),
             target="biotool.annotate.sequence_tools:find_orfs"),
    _builtin("align_pairwise",
             "Pairwise alignment (Biopython PairwiseAligner): global or local, DNA (match 2, "
             "mismatch -3, gap -5/-2 by default) or protein (BLOSUM62, gap -11/-1). Reports score, "
             "identity, gaps, coordinates and how many alignments tie.",
             "sequence_analysis", "AlignPairwise",
             _result({"score": {"type": "number"}, "identity": {"type": "number"},
                      "alignment": {"type": "string"}, "coordinates": {"type": "array"}}),
             target="biotool.annotate.sequence_tools:align_pairwise", aliases=("align",)),
    _builtin("primer_tm",
             "Primer melting temperature: nearest-neighbour (SantaLucia) with salt, Mg2+, dNTP and "
             "primer concentrations, plus GC-formula and Wallace values for comparison.",
             "sequence_analysis", "PrimerTm",
             _result({"tm_nearest_neighbor_c": {"type": "number"},
                      "gc_fraction": {"type": "number"}}),
             target="biotool.annotate.sequence_tools:primer_tm", aliases=("tm",)),
    _builtin("restriction_sites",
             "Restriction enzyme sites (Biopython Restriction, REBASE): cut positions per enzyme "
             "for a list of enzymes, 'common' (default), 'commercial' or 'all'.",
             "sequence_analysis", "RestrictionSites",
             _result({"cutters": {"type": "array", "items": {"type": "object"}},
                      "non_cutters": {"type": "array"}}),
             target="biotool.annotate.sequence_tools:restriction_sites",
             aliases=("restriction_map",)),
    _builtin("gene_lookup",
             "Look a gene up by symbol, synonym, NCBI GeneID, locus tag, protein ID or sequence id "
             "in the staged gene annotation table: coordinates, CDS segments, product. Lists every "
             "match when a symbol is ambiguous.",
             "gene_annotation", "GeneLookup",
             _result({"matches": {"type": "array", "items": {"type": "object"}},
                      "count": {"type": "integer"}, "matched_on": {"type": "string"}}),
             target="biotool.annotate.genes:gene_lookup", aliases=("gene_info",)),
    _builtin("variant_annotate",
             "Annotate a substitution or indel on a coding sequence: codon change, HGVS c. and "
             "p. (3'-shifted as HGVS requires) and effect (synonymous, missense, nonsense, "
             "frameshift, inframe_indel, start_lost, stop_lost; a changed stop codon that is "
             "still a stop is synonymous with so_term stop_retained_variant). The CDS is a "
             "staged gene (gene=symbol/ID), "
             "the CDS under a genomic position (reference + position), or given (cds_sequence). "
             "The change is hgvs ('c.1841A>G', 'c.10del', 'c.10_11insT', 'c.10dup', "
             "'c.10_12delinsAT') or ref/alt at cds_position or position ('-' or '' for none).",
             "variant_annotation", "VariantAnnotate",
             _result({"annotations": {"type": "array", "items": {"type": "object", "properties": {
                 "hgvs_c": {"type": "string"}, "hgvs_p": {"type": "string"},
                 "effect": {"type": "string"}, "codon_change": {"type": "string"}}}}}),
             target="biotool.annotate.variant:variant_annotate", aliases=("annotate_variant",)),
)
