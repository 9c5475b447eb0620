"""The one staged-reference resolver: contig lengths and regions through pysam.FastaFile and
the staged faidx, as the read tools and `biotool call` use them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from biotool.output import InputError, ToolFailure

REPO = Path(__file__).resolve().parents[3]
FASTA = REPO / "refs" / "demo" / "sarscov2" / "MN908947.3.reference.fasta"
GENOME = "".join(FASTA.read_text().splitlines()[1:])


def test_staged_reference_lengths_and_regions(biotool_env):
    from biotool.alignment.reference import resolve

    ref = resolve("MN908947.3")
    assert ref.contigs() == {"MN908947.3": len(GENOME)} == {"MN908947.3": 29903}
    assert ref.fetch("MN908947.3", 21562, 21574) == GENOME[21562:21574] == "ATGTTTGTTTTT"
    assert ref.fetch("MN908947.3") == GENOME


def test_annotate_reads_the_region_on_either_strand(biotool_env):
    from biotool.annotate.sequences import resolve, reverse_complement

    args = {"reference": "MN908947.3", "start": 21563, "end": 21574}
    plus, prov = resolve(args)
    assert plus == "ATGTTTGTTTTT"
    assert prov[0]["name"] == "MN908947.3" and prov[0]["region"] == "21563-21574"
    minus, _ = resolve({**args, "strand": "-"})
    assert minus == reverse_complement(plus) == "AAAAACAAACAT"
    whole, _ = resolve({"reference": "MN908947.3"})
    assert whole == GENOME


@pytest.mark.parametrize("args,message", [
    ({"start": 29900, "end": 29904}, "args.start/end: region 29900-29904 is outside "
                                     "MN908947.3 (1-29903)"),
    ({"start": 10, "end": 5}, "args.start/end: region 10-5 is outside"),
    ({"seqid": "chr1"}, "args.seqid: 'chr1' is not in reference MN908947.3"),
])
def test_annotate_out_of_range_names_the_field(biotool_env, args, message):
    from biotool.annotate.sequences import resolve

    with pytest.raises(InputError, match="^" + re.escape(message)):
        resolve({"reference": "MN908947.3", **args})


def test_unknown_reference_is_bad_input_in_both_families(biotool_env):
    from biotool.annotate.sequences import resolve as annotate_resolve
    from biotool.alignment.reference import resolve

    with pytest.raises(InputError, match=r"^--reference: no usable staged reference 'hg19' "
                                         r"\(no manifest names it\); staged references: "
                                         r".*MN908947\.3.*, or give a FASTA file$"):
        resolve("hg19")
    with pytest.raises(InputError, match=r"^args\.reference: no usable staged reference 'hg19' "
                                         r"\(no manifest names it\); staged references: "
                                         r".*MN908947\.3"):
        annotate_resolve({"reference": "hg19"})


def test_a_broken_staged_index_is_a_tool_failure(biotool_env, tmp_path, monkeypatch):
    from biotool import staging
    from biotool.alignment.reference import Reference, staged
    from biotool.staging.item import StagedItem

    fasta = tmp_path / "ref.fasta"
    fasta.write_text(">x\nACGT\n")
    item = StagedItem.from_record({"name": "broken", "kind": "reference", "sha256": "0" * 64,
                                   "files": {"main": {"path": "ref.fasta", "sha256": "0" * 64}}},
                                  "image", tmp_path)
    monkeypatch.setattr(staging, "find", lambda kind, name: item)
    with pytest.raises(ToolFailure, match="reference broken: staged faidx missing beside"):
        staged("broken")
    Path(str(fasta) + ".fai").write_text("not an index\n")
    ref = staged("broken")
    assert isinstance(ref, Reference)
    with pytest.raises(ToolFailure, match=r"reference broken: cannot read .*ref\.fasta through "
                                          r"its index \(Could not understand FASTA index"):
        ref.contigs()
