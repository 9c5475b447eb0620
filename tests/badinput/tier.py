"""What the unit tier and the image tier of the corpus share around pytest: which cases the
session selected, restoring the permission cases' folders, the summary line and the message a
failing case shows."""

from __future__ import annotations

import json
import os
from pathlib import Path

from badinput.contract import summary


def selected_ids(request) -> set[str]:
    """Ids of the corpus cases this pytest session selected (-k, node ids), so a filtered run
    executes only those."""
    return {item.callspec.params["case"]["id"] for item in request.session.items
            if getattr(item, "callspec", None) and "case" in item.callspec.params
            and item.module.__name__.endswith("test_bad_input_corpus")}


def restore_permissions(corpus_root: Path) -> None:
    """Make the mode-000 folders of the permission cases removable again."""
    for p in (corpus_root / "noperm", corpus_root / "noperm-matrix"):
        if p.exists():
            os.chmod(p, 0o755)


def report(request, tier: str, cases: list[dict], results: list[dict]) -> dict:
    """One summary line on the terminal, past pytest's output capture; the results by id."""
    s = summary(cases, results)
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\nbad-input corpus ({tier}): {s['on_contract']}/{s['cases']} cases on "
              f"contract; by family {json.dumps(s['families'])}", flush=True)
    return {r["id"]: r for r in results}


def failure(case: dict, result: dict, bad: list[str]) -> str:
    """What a failing case did, for its assertion message."""
    return (f"{case['id']}: {'; '.join(bad)}\n  argv: {case['argv']}\n"
            f"  exit {result['rc']}, stdout {result['stdout'][:200]!r}\n"
            f"  stderr {result['stderr'][-600:]!r}")
