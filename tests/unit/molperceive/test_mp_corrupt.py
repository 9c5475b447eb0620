"""Mutations that reach each reason code on purpose, verified by the labeler."""

import random

import pytest
from biotool.output import InputError

from molperceive import contract, corrupt, label


@pytest.mark.parametrize("reason", contract.REASONS)
def test_each_reason_is_reachable_and_verified(reason):
    out = corrupt.corrupt("OC(=O)c1ccccc1O", reason)
    verdict = label.label(out["smiles"])
    assert (verdict["status"], verdict["reason"]) == (corrupt.STATUS_OF[reason], reason)
    assert out["smiles"] != out["source"]


def test_kekule_written_source_reaches_kekulization_failure():
    out = corrupt.corrupt("OC1=CC=CC=C1C", "kekulization_failure", random.Random(3))
    assert label.label(out["smiles"])["reason"] == "kekulization_failure"


def test_unreachable_reason_is_a_clear_error():
    # A ring-free, aromatic-free chain cannot fail kekulization.
    with pytest.raises(InputError, match="kekulization_failure"):
        corrupt.corrupt("CCCCCO", "kekulization_failure")


def test_invalid_source_and_unknown_reason_are_errors():
    with pytest.raises(InputError, match="not a valid"):
        corrupt.corrupt("C1CC", "valence_error")
    with pytest.raises(InputError, match="unknown reason"):
        corrupt.corrupt("CCCCO", "multiple_components")
