"""One rule for a staged record a command may use (files, and no staging error; the rule
itself: test_staged_item.py), and one refusal of one that is not: every family that resolves
staged items (references, gene tables, CellTypist and C2S models, BLAST databases) applies
the same rule to an inventory that records failed items as `staging.build --keep-going`
does, and refuses in the same words."""

from __future__ import annotations

import json

import pytest

from biotool import staging
from biotool.output import InputError

FAILED = "staging failed at build time: download refused"


def _record(kind: str, name: str, **extra) -> dict:
    """An item as staging.build records one that did not stage."""
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
    assert reference.staged_names() == []
    with pytest.raises(InputError, match="no gene annotation table is staged here"):
        genes.table_records()
    assert models.celltypist_panel("unknown") == []
    with pytest.raises(InputError, match="no taxonomy BLAST database is staged"):
        local.staged_database(None)


@pytest.mark.parametrize("call, said", [
    (lambda m, l: m.celltypist_model("broken-celltypist"), "--reference broken-celltypist"),
    (lambda m, l: m.c2s_model("broken-c2s"), "model broken-c2s"),
    (lambda m, l: l.staged_database("broken-blast"), "database broken-blast"),
], ids=["celltypist", "c2s", "blast"])
def test_every_family_refuses_a_failed_item_in_the_same_words(failed_home, call, said):
    from biotool.singlecell import models
    from biotool.taxonomy import local

    with pytest.raises(InputError) as err:
        call(models, local)
    assert str(err.value) == f"{said}: not staged here ({FAILED}); see `biotool list`"
