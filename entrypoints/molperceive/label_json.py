"""The `molperceive label` result as JSON text: byte for byte json.dumps(result,
ensure_ascii=False), in about half the time on the graphs.

The graphs are most of the text (one small object per atom, one triple per bond), and their
atoms repeat a few dozen (element, charge, hydrogens) combinations: each combination is
encoded once and reused, and bond triples are formatted directly. Everything else goes
through the same encoder json.dumps uses. tests/unit/molperceive/test_mp_label.py compares
the two on real molecules.
"""

from __future__ import annotations

import json

# What json.dumps(obj, ensure_ascii=False) runs, with its default separators.
_encode = json.JSONEncoder(ensure_ascii=False).encode
# Stands in for a value while the object around it is encoded; JSON writes it escaped.
_SLOT = "\x00molperceive-slot\x00"
_SLOT_TEXT = _encode(_SLOT)


def _spliced(obj: dict, key: str, text: str) -> str | None:
    """obj encoded with obj[key] written as `text`; None if the slot is not unique."""
    encoded = _encode({**obj, key: _SLOT})
    if encoded.count(_SLOT_TEXT) != 1:
        return None
    return encoded.replace(_SLOT_TEXT, text)


def _graph(graph: dict, atoms_seen: dict) -> str | None:
    """A graph as label.Molecule.graph builds it ({"atoms": [{element: str, charge: int,
    hydrogens: int}], "bonds": [[int, int, int]]}) as json.dumps writes it."""
    if list(graph) != ["atoms", "bonds"]:
        return None
    atoms = []
    for a in graph["atoms"]:
        key = (a["element"], a["charge"], a["hydrogens"])
        text = atoms_seen.get(key)
        if text is None:
            text = atoms_seen[key] = _encode(a)
        atoms.append(text)
    bonds = [f"[{i}, {j}, {o}]" for i, j, o in graph["bonds"]]
    return '{"atoms": [' + ", ".join(atoms) + '], "bonds": [' + ", ".join(bonds) + "]}"


def dumps(result: dict) -> str:
    """json.dumps(result, ensure_ascii=False) for {"molecules": [...], ...}."""
    atoms_seen: dict = {}
    parts = []
    for m in result["molecules"]:
        graph = m.get("graph")
        text = None
        if type(graph) is dict:
            inner = _graph(graph, atoms_seen)
            text = _spliced(m, "graph", inner) if inner is not None else None
        parts.append(text if text is not None else _encode(m))
    whole = _spliced(result, "molecules", "[" + ", ".join(parts) + "]")
    return whole if whole is not None else _encode(result)
