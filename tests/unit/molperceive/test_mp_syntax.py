"""The independent SMILES syntax checker: the three syntax reasons, without RDKit."""

import subprocess
import sys

from pathlib import Path

import pytest

from molperceive.smiles_syntax import first_problem

NCI = Path(__file__).parent / "data" / "nci_first_400.smi"


@pytest.mark.parametrize("smiles,reason", [
    ("CC(C", "unbalanced_parenthesis"),
    ("CCO)", "unbalanced_parenthesis"),
    ("C1CCC", "unclosed_ring_bond"),
    ("C%12CC", "unclosed_ring_bond"),
    ("QCC", "unknown_element"),
    ("[Xx]CC", "unknown_element"),
    ("C[Ch3]", "unknown_element"),
])
def test_syntax_reasons(smiles, reason):
    assert first_problem(smiles)["reason"] == reason


def test_other_problems_get_no_contract_reason():
    assert first_problem("[CH4")["reason"] is None
    assert first_problem("C==C")["reason"] is None


def test_checker_imports_no_rdkit():
    code = "import sys, molperceive.smiles_syntax as s; s.first_problem('C1CC'); print('rdkit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_agrees_with_rdkit_on_a_real_list_and_its_breakages():
    from rdkit import Chem, RDLogger
    RDLogger.DisableLog("rdApp.*")
    smiles = [line.split()[0] for line in NCI.read_text().splitlines()]
    assert all(first_problem(s) is None for s in smiles)
    for s in smiles[:50]:
        for broken in (s + ")", s.replace("(", "", 1) if "(" in s else s + "(", "Q" + s):
            assert first_problem(broken) is not None
            assert Chem.MolFromSmiles(broken, sanitize=False) is None
