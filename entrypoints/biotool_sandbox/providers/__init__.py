"""biotool's Inspect AI sandbox providers over the backends: `biotool` (compose.py, the compose
stack) and `biotool-apptainer` (apptainer.py), their typed configs (config.py), the one file
transfer and exec result both share (sandbox.py, files.py), and the egress audit a scorer reads
on any provider (audit.py)."""
