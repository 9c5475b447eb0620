"""Demo staging is reproducible (issue 32): the two items whose bytes held the build's clock,
the demo CellTypist model (trained at build) and the demo BLAST database (makeblastdb's date),
staged twice into different folders give the same files and the same staged.json records, and
hold SOURCE_DATE_EPOCH's date rather than the clock's. CI's cheap stand-in for a second no-cache
image build (`make repro-check` does the whole one)."""

from __future__ import annotations

import datetime
import json
import pickle
import shutil
from pathlib import Path

import pytest

from biotool.cache import sha256_tree
from biotool.stagebuild import blastdate
from biotool.stagebuild.build import stage

REPO = Path(__file__).resolve().parents[3]
ITEMS = ["demo-pbmc68k-celltypist", "demo-viral-panel"]
EPOCH = 1700000000

pytestmark = pytest.mark.skipif(shutil.which("makeblastdb") is None,
                                reason="makeblastdb not installed")


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): sha256_tree(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "staged.json" and "manifests" not in p.parts}


@pytest.fixture(scope="module")
def twice(tmp_path_factory):
    pytest.importorskip("celltypist")
    mp = pytest.MonkeyPatch()
    mp.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    mp.setenv("PYTHONHASHSEED", "0")
    out = []
    try:
        for name in ("a", "b"):
            dest = tmp_path_factory.mktemp(f"stage-{name}")
            inv = stage(REPO / "refs", dest, ["demo"], only=ITEMS)
            out.append((dest, inv))
    finally:
        mp.undo()
    return out


def test_same_files_and_records(twice):
    (a, inv_a), (b, inv_b) = twice
    assert sorted(inv_a["items"]) == ["database/demo-viral-panel",
                                      "model/demo-pbmc68k-celltypist"]
    assert _files(a) == _files(b)
    assert json.dumps(inv_a, sort_keys=True) == json.dumps(inv_b, sort_keys=True)


def test_dates_are_source_date_epochs(twice):
    (a, inv), _ = twice
    db = (a / inv["items"]["database/demo-viral-panel"]["files"]["main"]["path"]).parent
    index = (db / "db.nin").read_bytes()
    offset, length = blastdate._date_field(index)
    assert index[offset:offset + length].rstrip(b"\0").decode() == blastdate.blast_date(EPOCH)
    model = a / inv["items"]["model/demo-pbmc68k-celltypist"]["files"]["main"]["path"]
    with open(model, "rb") as fh:
        date = pickle.load(fh)["description"]["date"]
    assert date == str(datetime.datetime.fromtimestamp(EPOCH, datetime.timezone.utc)
                       .replace(tzinfo=None))
