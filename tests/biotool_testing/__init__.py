"""Helpers the tests and the bench share, one module per behaviour; imported by name, never by
file path (`from biotool_testing import simulate`).

pytest puts `tests/` on `sys.path` (`pythonpath` in pyproject.toml's pytest settings), so every
test and conftest imports them; a bench script run as `python3 bench/NAME.py` gets the same
path from `bench/repo_paths.py`. Nothing here imports a test module or a conftest.
"""
