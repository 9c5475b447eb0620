"""A first-use index build run in the background (biotool.alignment.indexes.start_background):

    python3 -m biotool.alignment.background LABEL FASTA FINAL SHOWN LOCK_FD

It holds the index's lock (LOCK_FD, inherited from the command that started it), builds and
publishes the index as a foreground build does, leaves a failure beside it for the next run
to say, and outlives that command; the lock goes when this process does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from biotool.alignment.indexes import build_in_background


def main(argv: list[str]) -> int:
    label, fasta, final, shown, lock_fd = argv
    try:
        build_in_background(label, Path(fasta), Path(final), shown)
    finally:
        os.close(int(lock_fd))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
