"""The backends a run can be started on, each declaring one `Capabilities` (capabilities.py):
the compose stack on a Docker engine (compose.py), Apptainer instances (apptainer.py), the
values of Inspect's Kubernetes sandbox (k8s.py) and Harbor's task environment (harbor.py)."""
