"""`python -m biotool.staging`: the build-time staging (biotool.stagebuild) under the name the
image build, `make pins` and site operators run. A program of its own, above the package
whose name it carries: the inventory below never imports the build."""

from biotool.stagebuild.cli import main

raise SystemExit(main())
