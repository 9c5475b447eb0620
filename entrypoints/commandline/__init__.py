"""The one command-line layer of biotool, molperceive and biotool-sandbox, on Typer.

`program.main(prog, commands)` hands the declared commands (`spec`) to Typer (`typed`, with
the checks Typer has no setting for in `values`) and runs the chosen command through the one
exception-to-exit-code ladder (`ladder`); `errors` holds the exit codes and the error every
program raises. This file stays empty of imports: the image's data stage copies it with
`errors.py` alone.
"""
