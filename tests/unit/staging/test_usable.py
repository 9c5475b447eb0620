"""One rule for a staged record a command may use (files, and no staging error; the rule
itself: test_staged_item.py), and one refusal of one that is not: every family that resolves
staged items (references, gene tables, CellTypist and C2S models, BLAST databases) applies
the same rule to an inventory that records failed items as `stagebuild.build --keep-going`
does, and refuses in the same words (staging.require)."""

from __future__ import annotations

import json

import pytest

from biotool import staging
from biotool.output import InputError

FAILED = "staging failed at build time: download refused"


def _record(kind: str, name: str, **extra) -> dict:
    """An item as stagebuild.build records one that did not stage."""
    return {"kind": kind, "name": name, "error": FAILED, "files": {}, **extra}


@pytest.fixture
def failed_home(tmp_path, monkeypatch):
    """A home whose inventory holds only failed items, one per family's kind."""
    items = [_record("reference", "broken-ref"),
             _record("database", "broken-table", format="gene-table"),
             _record("database", "broken-blast", taxa={"x": {"sciname": "x"}}),
             _record("model", "broken-celltypist", framework="celltypist"),
             _record("model", "broken-c2s", framework="cell2sentence")]
    (tmp_path / staging.INVENTORY).write_text(json.dumps(
        {"sets": ["demo"], "items": {f"{i['kind']}/{i['name']}": i for i in items}}))
    monkeypatch.setenv("BIOTOOL_HOME", str(tmp_path))
    monkeypatch.delenv("BIOTOOL_SITE_DIR", raising=False)
    return tmp_path


def test_every_family_skips_a_failed_item(failed_home):
    from biotool.alignment import reference
    from biotool.annotate import genes
    from biotool.singlecell import models
    from biotool.taxonomy import local

    assert reference.staged("broken-ref") is None
    with pytest.raises(InputError, match="no gene annotation table is staged here"):
        genes.table_records()
    assert models.celltypist_panel("unknown") == []
    with pytest.raises(InputError, match="no taxonomy BLAST database is staged"):
        local.staged_database(None)


FOLDER = "a model folder (config.json, weights, tokenizer), or use --model celltypist"


@pytest.mark.parametrize("call, what, kind, name, otherwise", [
    (lambda: _models().celltypist_model("broken-celltypist"), "--reference", "model",
     "broken-celltypist", "a CellTypist model file (.pkl)"),
    (lambda: _models().c2s_model("broken-c2s"), "--c2s-model", "model", "broken-c2s", FOLDER),
    (lambda: _local().staged_database("broken-blast"), "--database", "database",
     "broken-blast", None),
    (lambda: _reference().resolve("broken-ref"), "--reference", "reference", "broken-ref",
     "a FASTA file"),
    (lambda: _sequences().staged_reference("broken-ref"), "args.reference", "reference",
     "broken-ref", None),
], ids=["celltypist", "c2s", "blast", "reads-reference", "annotate-reference"])
def test_every_family_refuses_a_failed_item_in_the_same_words(failed_home, call, what, kind,
                                                              name, otherwise):
    with pytest.raises(InputError) as err:
        call()
    tail = f", or give {otherwise}" if otherwise else ""
    assert str(err.value) == (f"{what}: no usable staged {kind} {name!r} ({FAILED}); staged "
                              f"{kind}s: none; see `biotool list`{tail}")


def test_an_item_no_manifest_names_and_one_of_an_unstaged_set_say_why(failed_home,
                                                                     monkeypatch):
    # The repository's manifests name C2S (set production); this home staged none of them.
    monkeypatch.setenv("BIOTOOL_MANIFESTS", str(staging.REPO_REFS))
    with pytest.raises(InputError, match=r"^--database: no usable staged database 'nt' \(no "
                                         r"manifest names it\); staged databases: none; "):
        staging.require("database", "nt", "--database")
    with pytest.raises(InputError, match=r"^x: no usable staged model 'C2S-Pythia-410m-cell-type-prediction' \("
                                         r"not staged in this image: set 'production' \(build "
                                         r"with --build-arg BIOTOOL_STAGE=production .*\)\); "
                                         r"staged models: none; see `biotool list`$"):
        staging.require("model", "cell2sentence", "x")


def _models():
    from biotool.singlecell import models
    return models


def _local():
    from biotool.taxonomy import local
    return local


def _reference():
    from biotool.alignment import reference
    return reference


def _sequences():
    from biotool.annotate import sequences
    return sequences
