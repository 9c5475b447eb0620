"""The one command-line layer of biotool, molperceive and biotool-sandbox.

`program.main(prog, commands)` parses argv against declared commands (`spec`), prints help
(`helptext`), and runs the chosen command through the one exception-to-exit-code ladder
(`ladder`); `errors` holds the exit codes and the error every program raises. This file stays
empty of imports: the image's data stage copies it with `errors.py` alone.
"""
