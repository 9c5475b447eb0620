"""What one command did (exit code, stdout, stderr): the one result type of every runner the
tests have, a subprocess on the host or a throw-away container."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(repr=False)
class Ran:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        try:
            return json.loads(self.stdout)
        except ValueError:
            raise AssertionError(f"stdout is not one JSON object (exit {self.code}):\n"
                                 f"{self.stdout[-2000:]}\nstderr:\n{self.stderr[-2000:]}")

    def __repr__(self) -> str:
        # The ends of long outputs, so a failed assertion's message stays readable.
        return f"exit {self.code}\nstdout: {self.stdout[-1500:]}\nstderr: {self.stderr[-1500:]}"
