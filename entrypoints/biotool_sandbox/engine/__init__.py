"""The engine layer under every backend: the docker client, compose files and runs, overrides,
limits and the host's memory budget, images, the NCBI schedule volume, exec and the audit read."""
