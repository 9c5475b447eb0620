from biotool.cli import run

run()
