"""The tool registry: every tool `biotool call` knows, with its JSON schemas, category and the
network hosts it needs. Built-in tools are local (no hosts); ToolUniverse tools join the same
list when the optional package is installed (see tooluniverse_bridge)."""

from __future__ import annotations

from dataclasses import dataclass, field

from biotool.annotate.sequences import REFERENCE_ARGS


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    category: str
    args_schema: dict
    result_schema: dict
    hosts: tuple[str, ...] = ()  # host:port pairs it must reach; () for local tools
    source: str = "builtin"
    target: str = ""  # "module:function" for built-ins
    labels: tuple[str, ...] = ()  # what the tool is (collection, implementation) for policy
    aliases: tuple[str, ...] = ()
    endpoints: tuple[str, ...] = ()  # host/path of each URL it calls, matched by the policy too
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    def names(self) -> list[str]:
        return [self.name, *self.aliases]

    def schema(self) -> dict:
        return {"name": self.name, "description": self.description, "category": self.category,
                "source": self.source, "hosts": list(self.hosts),
                "endpoints": list(self.endpoints),
                "arguments": self.args_schema, "result": self.result_schema}


def _obj(props: dict, required=(), extra=False) -> dict:
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": extra}


COMPETENCE = {"type": "object", "description": "applicable, confidence, margin, alternatives, "
              "ties, blind_spots, remedy (see `biotool --help`)"}
PROVENANCE = {"type": "object", "description": "biotool version and every staged item used, "
              "with sha256"}


def _result(props: dict) -> dict:
    return {"type": "object", "properties": {**props, "competence": COMPETENCE,
                                             "provenance": PROVENANCE}}


SEQ = {"type": "string", "description": "DNA/RNA sequence, plain or FASTA (IUPAC codes allowed; "
       "whitespace and digits ignored). Or give `reference` instead."}
TABLE = {"type": "integer", "minimum": 1, "maximum": 33, "default": 1,
         "description": "NCBI genetic code id (1 standard, 2 vertebrate mitochondrial, 11 "
         "bacterial...)."}

BUILTIN = (
    Tool("seq_stats",
         "Sequence statistics: length, composition, GC fraction, ambiguous bases and molecular "
         "weight (DNA/RNA); mass, pI, GRAVY, aromaticity, instability (protein).",
         "sequence_analysis",
         _obj({"sequence": {**SEQ, "description": "DNA/RNA or protein sequence."},
               "alphabet": {"type": "string", "enum": ["dna", "protein"], "default": "dna"},
               "double_stranded": {"type": "boolean", "default": False},
               **REFERENCE_ARGS}),
         _result({"length": {"type": "integer"}, "composition": {"type": "object"},
                  "gc_fraction": {"type": ["number", "null"]},
                  "molecular_weight_da": {"type": "number"}}),
         target="biotool.annotate.sequence_tools:seq_stats"),
    Tool("reverse_complement", "Reverse complement of a DNA/RNA sequence (IUPAC-aware).",
         "sequence_analysis", _obj({"sequence": SEQ, **REFERENCE_ARGS}),
         _result({"reverse_complement": {"type": "string"}, "length": {"type": "integer"}}),
         target="biotool.annotate.sequence_tools:reverse_complement_tool",
         aliases=("revcomp",)),
    Tool("translate",
         "Translate DNA/RNA in one or more frames (1,2,3 forward; -1,-2,-3 on the reverse "
         "complement) with any NCBI genetic code. Stops are '*', ambiguous codons 'X'.",
         "sequence_analysis",
         _obj({"sequence": SEQ, "table": TABLE,
               "frame": {"anyOf": [{"type": "integer", "enum": [1, 2, 3, -1, -2, -3]},
                                   {"type": "string", "enum": ["all"]},
                                   {"type": "array", "items": {"type": "integer",
                                                               "enum": [1, 2, 3, -1, -2, -3]}}],
                         "default": 1, "description": "a frame, a list, or 'all'"},
               "to_stop": {"type": "boolean", "default": False},
               **REFERENCE_ARGS}),
         _result({"frames": {"type": "array", "items": {"type": "object"}},
                  "table": {"type": "object"}}),
         target="biotool.annotate.sequence_tools:translate"),
    Tool("find_orfs",
         "Open reading frames on both strands: start/end (1-based on the input), frame, "
         "length and protein, longest first.",
         "sequence_analysis",
         _obj({"sequence": SEQ, "table": TABLE,
               "min_protein_length": {"type": "integer", "minimum": 1, "default": 30},
               "start_codons": {"type": "string", "enum": ["ATG", "table"], "default": "ATG",
                                "description": "ATG only, or every start codon of the table"},
               "require_stop": {"type": "boolean", "default": False},
               "max_orfs": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50},
               **REFERENCE_ARGS}),
         _result({"orfs": {"type": "array", "items": {"type": "object"}},
                  "count": {"type": "integer"}}),
         target="biotool.annotate.sequence_tools:find_orfs"),
    Tool("align_pairwise",
         "Pairwise alignment (Biopython PairwiseAligner): global or local, DNA (match 2, "
         "mismatch -3, gap -5/-2 by default) or protein (BLOSUM62, gap -11/-1). Reports score, "
         "identity, gaps, coordinates and how many alignments tie.",
         "sequence_analysis",
         _obj({"seq_a": {"type": "string"}, "seq_b": {"type": "string"},
               "mode": {"type": "string", "enum": ["global", "local"], "default": "global"},
               "molecule": {"type": "string", "enum": ["dna", "protein"], "default": "dna"},
               "match": {"type": "number"}, "mismatch": {"type": "number"},
               "gap_open": {"type": "number"}, "gap_extend": {"type": "number"}},
              required=("seq_a", "seq_b")),
         _result({"score": {"type": "number"}, "identity": {"type": "number"},
                  "alignment": {"type": "string"}, "coordinates": {"type": "array"}}),
         target="biotool.annotate.sequence_tools:align_pairwise", aliases=("align",)),
    Tool("primer_tm",
         "Primer melting temperature: nearest-neighbour (SantaLucia) with salt, Mg2+, dNTP and "
         "primer concentrations, plus GC-formula and Wallace values for comparison.",
         "sequence_analysis",
         _obj({"sequence": {"type": "string", "minLength": 1},
               "na_mM": {"type": "number", "minimum": 0, "default": 50.0},
               "mg_mM": {"type": "number", "minimum": 0, "default": 0.0},
               "dntps_mM": {"type": "number", "minimum": 0, "default": 0.0},
               "primer_nM": {"type": "number", "minimum": 0.001, "default": 250.0}},
              required=("sequence",)),
         _result({"tm_nearest_neighbor_c": {"type": "number"}, "gc_fraction": {"type": "number"}}),
         target="biotool.annotate.sequence_tools:primer_tm", aliases=("tm",)),
    Tool("restriction_sites",
         "Restriction enzyme sites (Biopython Restriction, REBASE): cut positions per enzyme "
         "for a list of enzymes, 'common' (default), 'commercial' or 'all'.",
         "sequence_analysis",
         _obj({"sequence": SEQ,
               "enzymes": {"anyOf": [{"type": "string", "enum": ["common", "commercial", "all"]},
                                     {"type": "array", "items": {"type": "string"},
                                      "minItems": 1}], "default": "common"},
               "linear": {"type": "boolean", "default": True}, **REFERENCE_ARGS}),
         _result({"cutters": {"type": "array", "items": {"type": "object"}},
                  "non_cutters": {"type": "array"}}),
         target="biotool.annotate.sequence_tools:restriction_sites",
         aliases=("restriction_map",)),
    Tool("gene_lookup",
         "Look a gene up by symbol, synonym, NCBI GeneID, locus tag, protein ID or sequence id "
         "in the staged gene annotation table: coordinates, CDS segments, product. Lists every "
         "match when a symbol is ambiguous.",
         "gene_annotation",
         _obj({"query": {"type": "string", "minLength": 1},
               "reference": {"type": "string", "description": "restrict to one staged "
                             "reference (name or alias)"}}, required=("query",)),
         _result({"matches": {"type": "array", "items": {"type": "object"}},
                  "count": {"type": "integer"}, "matched_on": {"type": "string"}}),
         target="biotool.annotate.genes:gene_lookup", aliases=("gene_info",)),
    Tool("variant_annotate",
         "Annotate a substitution or indel on a coding sequence: codon change, HGVS c. and p. "
         "(3'-shifted as HGVS requires) and effect (synonymous, missense, nonsense, frameshift, "
         "inframe_indel, start_lost, stop_lost; a changed stop codon that is still a stop is "
         "synonymous with so_term stop_retained_variant). The CDS is a staged gene (gene=symbol/ID), "
         "the CDS under a genomic position (reference + position), or given (cds_sequence). "
         "The change is hgvs ('c.1841A>G', 'c.10del', 'c.10_11insT', 'c.10dup', "
         "'c.10_12delinsAT') or ref/alt at cds_position or position ('-' or '' for none).",
         "variant_annotation",
         _obj({"gene": {"type": "string"}, "reference": {"type": "string"},
               "seqid": {"type": "string"},
               "cds_sequence": {"type": "string"},
               "flank_3prime": {"type": "string", "description": "bases after the given CDS, "
                                "read when a frameshift runs past its stop"},
               "hgvs": {"type": "string"},
               "cds_position": {"type": "integer", "minimum": 1},
               "position": {"type": "integer", "minimum": 1,
                            "description": "1-based genomic position on the reference; "
                            "ref and alt are then on its plus strand, as in a VCF (a "
                            "minus-strand CDS is reverse-complemented for you)"},
               "ref": {"type": "string"}, "alt": {"type": "string"}, "table": TABLE}),
         _result({"annotations": {"type": "array", "items": {"type": "object", "properties": {
             "hgvs_c": {"type": "string"}, "hgvs_p": {"type": "string"},
             "effect": {"type": "string"}, "codon_change": {"type": "string"}}}}}),
         target="biotool.annotate.variant:variant_annotate", aliases=("annotate_variant",)),
)
