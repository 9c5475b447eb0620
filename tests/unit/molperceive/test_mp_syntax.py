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


def test_the_string_fast_path_judges_as_the_token_walk():
    # _well_formed (translate and a regex) must say what _well_formed_tokens says: on the
    # shipped molecules, each with random one-character edits, and short random strings.
    import random

    from molperceive import smiles_syntax as sx
    rng = random.Random(25)
    alphabet = list("CNOcnosBrClFIPS()[]=#$:/\\.-+@H123456789%*") + \
        ["[nH]", "[C@@H]", "[2H]", "%12", "%(123)", "[Xx]", "[O-]", "Cl", "Br"]
    base = [line.split()[0] for line in NCI.read_text().splitlines() if line.strip()]
    cases = set(base)
    for s in base:
        for _ in range(10):
            pos = rng.randrange(len(s) + 1)
            edit = rng.choice((s[:pos] + rng.choice(alphabet) + s[pos:], s[:pos] + s[pos + 1:],
                               s[:pos] + rng.choice(alphabet) + s[pos + 1:]))
            cases.add(edit)
    cases.update("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 10)))
                 for _ in range(20000))
    verdicts = {s: sx._well_formed_tokens(s) for s in cases}
    assert sum(verdicts.values()) > 2000 and len(verdicts) - sum(verdicts.values()) > 2000
    assert [s for s, ok in verdicts.items() if sx._well_formed(s) != ok] == []
