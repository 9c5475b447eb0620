"""The smiles_from_graph key from the molecule's own InChI, without a second InChI run.

The graph a smiles_from_graph row shows keeps element, charge, hydrogens and Kekulé bonds and
drops stereo and isotopes; the molecule rebuilt from it (label.mol_from_graph, the pinned way)
therefore has the InChI of the original with its stereo and isotopic layers removed. Standard
InChI orders its layers main (formula, /c, /h), charge (/q, /p), stereo (/b, /t, /m, /s),
isotopic (/i and its own /h, /b, /t, /m, /s); the main and charge layers never depend on
stereo or isotopes, so cutting at the first stereo or isotopic layer gives that InChI.
tests/unit/molperceive/test_mp_fast_path.py checks it against the rebuild on real molecules.
"""

from __future__ import annotations

# First letters of the layers a rebuilt graph cannot carry: stereo (b, t, m, s), isotopes (i).
_DROPPED = frozenset("btmsi")


def without_stereo_and_isotopes(inchi: str) -> str:
    """The standard InChI cut before its first stereo or isotopic layer (unchanged if none)."""
    if "/" not in inchi:
        return inchi
    parts = inchi.split("/")
    # parts[0] is "InChI=1S" and parts[1] the formula (upper-case first): never dropped.
    for n in range(2, len(parts)):
        if parts[n][:1] in _DROPPED:
            return "/".join(parts[:n])
    return inchi
