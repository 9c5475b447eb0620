"""docs/molperceive-contract.md is the document generated from contract.py, and says all of it."""

import subprocess
import sys
from pathlib import Path

from molperceive import contract, contract_doc

DOC = Path(__file__).resolve().parents[3] / "docs" / "molperceive-contract.md"


def test_committed_document_equals_the_generated_one():
    assert DOC.read_text(encoding="utf-8") == contract_doc.render(), \
        "regenerate: python3 -m molperceive.contract_doc > docs/molperceive-contract.md"


def test_document_names_every_part_of_the_contract():
    text = contract_doc.render()
    for expr in contract.CALLS.values():
        assert expr.replace("|", "\\|") in text
    for group in (contract.REPORTED, contract.EXCLUDED):
        for field, why in group.items():
            assert f"| {field} | {why} |" in text
    for reason in contract.REASONS + contract.DELETED_REASONS:
        assert f"`{reason}`" in text
    for field, triggers in contract.TRIGGERS.items():
        assert f"| {field} | {', '.join(triggers)} |" in text
    for texts in contract.PHRASINGS.values():
        assert all(t in text for t in texts)
    for _, _, formula in contract.HILL_CASES:
        assert f"`{formula}`" in text
    for title, body in contract.FINDINGS:
        assert title in text and body in text
    assert contract.PINNED_RDKIT in text and contract.PINNED_RDKIT_PIP in text


def test_check_flags_a_stale_copy(tmp_path):
    stale = tmp_path / "contract.md"
    stale.write_text(contract_doc.render().replace("Hill", "Hil", 1))
    run = [sys.executable, "-m", "molperceive.contract_doc", "--check"]
    bad = subprocess.run(run + [str(stale)], capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout == "" and bad.stderr.count("\n") == 1
    good = subprocess.run(run + [str(DOC)], capture_output=True, text=True)
    assert good.returncode == 0, good.stderr


def test_generator_needs_no_rdkit():
    code = ("import sys, molperceive.contract_doc as d; d.render(); "
            "print('rdkit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
