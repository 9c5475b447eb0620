"""Chemistry draws: molecules from a public pool, labelled by MolPerceive's pinned RDKit."""

from __future__ import annotations

import random
from pathlib import Path

POOL = ("NCI", "first_5K.smi")  # RDKit's own data: the first 5,000 NCI open-database molecules
MOLECULES = 5
HEAVY_ATOMS = (6, 40)


def pool() -> list[str]:
    """The pool's SMILES, in file order (RDKit's copy in the image: no download)."""
    from rdkit import RDConfig

    path = Path(RDConfig.RDDataDir, *POOL)
    with open(path, encoding="ascii") as fh:
        return [line.split()[0] for line in fh if line.strip()]


def molecules(rng: random.Random, public: Path) -> dict:
    """Five molecules of the pool, each one fragment of 6-40 heavy atoms that MolPerceive
    labels; the truth is each one's formula and heavy-atom count as `molperceive label` gives
    them. The agent sees /task/molecules.smi (SMILES and a neutral id, mol1..mol5)."""
    from molperceive import label

    smiles = pool()
    chosen, truth = [], {}
    for s in rng.sample(smiles, len(smiles)):
        if "." in s:
            continue
        got = label.label(s, ["formula", "heavy_atom_count"])
        labels = got.get("labels") or {}
        heavy = labels.get("heavy_atom_count")
        if got.get("status") != "ok" or not isinstance(heavy, int) \
                or not HEAVY_ATOMS[0] <= heavy <= HEAVY_ATOMS[1]:
            continue
        chosen.append(s)
        n = len(chosen)
        truth[f"mol{n}_formula"] = {"smiles": s, "stored": labels["formula"]}
        truth[f"mol{n}_heavy_atoms"] = {"smiles": s, "stored": heavy}
        if n == MOLECULES:
            break
    with open(public / "molecules.smi", "w", encoding="ascii") as fh:
        fh.writelines(f"{s}\tmol{i}\n" for i, s in enumerate(chosen, 1))
    return truth
