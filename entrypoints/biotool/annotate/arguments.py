"""The built-in tools' arguments as pydantic models: the one source of each tool's argument
JSON Schema (what `biotool call NAME --schema` shows) and of its validation.

Every model refuses unknown fields and coerces nothing (JSON "11" is not the integer 11).
An optional field is typed as its value and defaults to None: pydantic never checks a default,
so an absent field reads None while an explicit null is refused like any other wrong type,
and the schema shows the plain type.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Literal, Union

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag,
                      ValidationError)
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticKnownError

from biotool.annotate.schema import kind, say
from biotool.output import InputError

SEQUENCE = ("DNA/RNA sequence, plain or FASTA (IUPAC codes allowed; whitespace and digits "
            "ignored). Or give `reference` instead.")
Table = Annotated[int, Field(ge=1, le=33, description="NCBI genetic code id (1 standard, 2 "
                              "vertebrate mitochondrial, 11 bacterial...).")]


def _not_bool(value):
    """JSON true is not the frame 1 (a Literal compares by ==, and True == 1)."""
    if isinstance(value, bool):
        raise PydanticKnownError("int_type")
    return value


Frame = Annotated[Literal[1, 2, 3, -1, -2, -3], BeforeValidator(_not_bool)]


def _by_kind(*forms):
    """A union whose form is chosen by the JSON type of the value (each form tagged with it),
    so a refusal names what is wrong within that form rather than listing every form's."""
    return Annotated[Union[tuple(Annotated[f, Tag(t)] for t, f in forms)], Discriminator(kind)]


Frames = _by_kind(("integer", Frame), ("string", Literal["all"]),
                  ("array", Annotated[list[Frame], Field(min_length=1)]))
Enzymes = _by_kind(("string", Literal["common", "commercial", "all"]),
                   ("array", Annotated[list[str], Field(min_length=1)]))


class Arguments(BaseModel):
    """Every tool's arguments: unknown fields refused, nothing coerced."""
    model_config = ConfigDict(extra="forbid", strict=True)


class FromReference(Arguments):
    """A sequence given inline or cut from a staged reference (annotate/sequences.resolve)."""
    sequence: str = Field(None, description=SEQUENCE)
    reference: str = Field(None, description="A staged reference (name or alias, see "
                           "`biotool references`) to read the sequence from instead of "
                           "`sequence`.")
    seqid: str = Field(None, description="Sequence in that reference (needed when it has "
                       "several, e.g. an influenza segment id).")
    start: int = Field(None, ge=1, description="1-based first base (default 1).")
    end: int = Field(None, ge=1, description="1-based last base, inclusive (default: the end).")
    strand: Literal["+", "-"] = Field("+", description="'-' reads the reverse complement of "
                                      "the region.")


class SeqStats(FromReference):
    sequence: str = Field(None, description="DNA/RNA or protein sequence.")
    alphabet: Literal["dna", "protein"] = "dna"
    double_stranded: bool = False


class ReverseComplement(FromReference):
    pass


class Translate(FromReference):
    table: Table = 1
    frame: Frames = Field(1, description="a frame, a list, or 'all'")
    to_stop: bool = False


class FindOrfs(FromReference):
    table: Table = 1
    min_protein_length: int = Field(30, ge=1)
    start_codons: Literal["ATG", "table"] = Field(
        "ATG", description="ATG only, or every start codon of the table")
    require_stop: bool = False
    max_orfs: int = Field(50, ge=1, le=1000)


class AlignPairwise(Arguments):
    seq_a: str
    seq_b: str
    mode: Literal["global", "local"] = "global"
    molecule: Literal["dna", "protein"] = "dna"
    # Scores for DNA; protein is scored by BLOSUM62 with gaps -11/-1 whatever these say.
    match: float = Field(2, description="DNA match score")
    mismatch: float = Field(-3, description="DNA mismatch score")
    gap_open: float = Field(-5, description="DNA gap opening score")
    gap_extend: float = Field(-2, description="DNA gap extension score")


class PrimerTm(Arguments):
    sequence: str = Field(min_length=1)
    na_mM: float = Field(50.0, ge=0)
    mg_mM: float = Field(0.0, ge=0)
    dntps_mM: float = Field(0.0, ge=0)
    primer_nM: float = Field(250.0, ge=0.001)


class RestrictionSites(FromReference):
    enzymes: Enzymes = Field(
        "common", description="'common' (30 everyday enzymes), 'commercial', 'all', or a "
        "list of REBASE names")
    linear: bool = True


class GeneLookup(Arguments):
    query: str = Field(min_length=1)
    reference: str = Field(None, description="restrict to one staged reference (name or "
                           "alias)")


class VariantAnnotate(Arguments):
    gene: str = None
    reference: str = None
    seqid: str = None
    cds_sequence: str = None
    flank_3prime: str = Field(None, description="bases after the given CDS, read when a "
                              "frameshift runs past its stop")
    hgvs: str = None
    cds_position: int = Field(None, ge=1)
    position: int = Field(None, ge=1, description="1-based genomic position on the reference; "
                          "ref and alt are then on its plus strand, as in a VCF (a "
                          "minus-strand CDS is reverse-complemented for you)")
    ref: str = None
    alt: str = None
    table: Table = 1


class _Unsorted(GenerateJsonSchema):
    """Keys as pydantic writes them (`type` first), not sorted alphabetically."""

    def sort(self, value, parent_key=None):
        return value


def _tidy(node):
    """pydantic's schema as agents read it: no `title` on every node, no `default: null`."""
    if isinstance(node, list):
        return [_tidy(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and value is None):
            continue
        # Under `properties` the keys are field names, never schema keywords.
        out[key] = ({k: _tidy(v) for k, v in value.items()} if key == "properties"
                    else _tidy(value))
    return out


@cache
def json_schema(model: type[Arguments]) -> dict:
    """The JSON Schema of a model's arguments, in the shape of every tool's `arguments`."""
    tidy = _tidy(model.model_json_schema(schema_generator=_Unsorted))
    return {"type": "object", "properties": tidy["properties"],
            "required": tidy.get("required", []), "additionalProperties": False}


# pydantic's error types by the JSON Schema keyword they break; any other `*_type` is "type".
_KEYWORDS = {"missing": "required", "extra_forbidden": "additionalProperties",
             "literal_error": "enum", "union_tag_invalid": "type",
             "greater_than_equal": "minimum", "greater_than": "exclusiveMinimum",
             "less_than_equal": "maximum", "less_than": "exclusiveMaximum",
             "string_too_short": "minLength", "string_too_long": "maxLength",
             "too_short": "minItems", "too_long": "maxItems"}


def _message(error: dict, schema: dict) -> str:
    """One line naming the field (`args.frame[1]`), worded as for ToolUniverse's tools.
    Arguments are flat: a loc is a field, then list indexes (ints) and the JSON type that
    picked a union's form (strings), which also finds the schema node that was broken."""
    loc = error["loc"]
    indexes = [f"[{p}]" for p in loc[1:] if isinstance(p, int)]
    where = "".join(["args", *(f".{p}" for p in loc[:1]), *indexes])
    node = schema["properties"].get(loc[0], {}) if loc else schema
    for part in loc[1:]:
        node = (node["items"] if isinstance(part, int) else
                next(form for form in node["oneOf"] if form["type"] == part))
    keyword = _KEYWORDS.get(error["type"], "type" if error["type"].endswith("_type") else None)
    if keyword == "type":
        want = node.get("type") or [form["type"] for form in node.get("oneOf", [])]
    elif keyword == "enum":
        want = node.get("enum") or [node["const"]]
    elif keyword == "additionalProperties":
        want = sorted(schema["properties"])
    else:
        want = node.get(keyword)
    return (keyword and say(keyword, where, want, error["input"])) or f"{where}: {error['msg']}"


def parse(model: type[Arguments], args: dict) -> Arguments:
    """`args` (parsed JSON) as the tool's model; InputError (exit 2) naming the first bad field."""
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise InputError(_message(first, json_schema(model))) from None
