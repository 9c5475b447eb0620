"""python -m biotool.system.toolbox install --bin DIR --doc FILE   # at image build
python -m biotool.system.toolbox markdown --dockerfile Dockerfile \
    --lock image/requirements-cpu.lock > docs/TOOLS.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from biotool.system.toolbox.build import install
from biotool.system.toolbox.doc import dockerfile_pins, lock_versions, markdown
from biotool.system.toolbox.manifest import load
from biotool.system.toolbox.probe import debian_versions, python_versions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m biotool.system.toolbox")
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("install")
    i.add_argument("--bin", type=Path, required=True)
    i.add_argument("--doc", type=Path, required=True)
    m = sub.add_parser("markdown")
    m.add_argument("--dockerfile", type=Path, help="versions from its pins, not from dpkg")
    m.add_argument("--lock", type=Path, help="PyPI versions from this lock, not the environment")
    a = ap.parse_args(argv)
    if a.cmd == "install":
        for path in install(a.bin, a.doc):
            print(f"toolbox: made {path}", file=sys.stderr)
        return 0
    box = load()
    deb = (dockerfile_pins(a.dockerfile.read_text()) if a.dockerfile
           else debian_versions(box.packages))
    dists = {t.pip for t in box.tools if t.pip}
    pip = (lock_versions(a.lock.read_text(), dists) if a.lock
           else python_versions({d: d for d in dists}))
    sys.stdout.write(markdown(deb, box, pip))
    return 0


if __name__ == "__main__":
    sys.exit(main())
