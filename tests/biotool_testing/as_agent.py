"""Commands run in the image as an agent runs them (uid 12345, read-only root, no network, a
login shell, an exec /tmp), and the FASTA reader the toolbox's image tests share."""

from __future__ import annotations

from pathlib import Path

AGENT = {"user": "12345:12345", "read_only": True, "network_mode": "none",
         "tmpfs": {"/tmp": "rw,exec,mode=1777"}, "environment": {"HOME": "/nonexistent"}}


def sh(sandbox, script: str, mounts: dict | None = None, timeout: int = 600):
    """`script` in a login shell as the agent; stdout, or the failure with both streams."""
    ran = sandbox.run(["bash", "-lc", "set -euo pipefail\n" + script], timeout=timeout,
                      volumes={str(h): {"bind": c, "mode": "ro"} for h, c in (mounts or {}).items()},
                      **AGENT)
    assert ran.code == 0, ran
    return ran.stdout


def fasta(path: Path) -> dict[str, str]:
    """{name: sequence} of a FASTA file (the name is the header's first word)."""
    seqs, name = {}, None
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            seqs[name] = ""
        elif name:
            seqs[name] += line.strip()
    return seqs
