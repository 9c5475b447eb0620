"""The values file for Inspect's k8s sandbox (`inspect_k8s_sandbox`'s `agent-env` chart).

Rendered, not written by hand: the egress allowlist comes from the rules file and every limit
from compose.yaml's own `${VAR:-default}` declarations (engine.variables.compose_defaults), so the
compose stack and a Kubernetes release cannot drift. `biotool-sandbox k8s-values` prints it;
k8s/values.yaml is its output for the defaults (tests/unit/sandbox/test_k8s_render.py).

Two services, one pod each: `default` (the agent's sandbox: compose's hardening as a
securityContext, its tmpfs as memory-backed emptyDirs with compose's sizes) and `egress`
(Squid + the gate). The chart's own release-wide Cilium policy already confines every pod to
its release and namespace DNS; the policies added here deny the sandbox the world outright
(whatever else a cluster allows) and give the egress pod its one way out: NCBI by name
(toFQDNs + SNI), or the site's NCBI relay when one is named.
"""

from __future__ import annotations

import re
from pathlib import Path

from biotool import rules as rules_mod
from biotool.settings import EGRESS_POLICY

from auditwire import RUN_STATE, SCHEDULE_DIR

from .. import settings
from ..engine import budget
from ..engine.variables import Variables, compose_defaults
from ..errors import LauncherError
from .capabilities import Capabilities

HEADER = ("# Rendered by `biotool-sandbox k8s-values` from image/rules.toml and compose.yaml;\n"
          "# do not edit: re-render (a unit test keeps this file equal to the output).\n")
SANDBOX_UID = 1000           # compose's user "1000:1000"
EGRESS_UID = 13              # Debian's `proxy`, the egress image's USER
PROXY_PORT = 3128
RELAY_PORT = 8443            # image/egress/relay.py's default
CA_CONFIGMAP = "biotool-egress-ca"          # ca.pem only: what the sandbox trusts
TLS_SECRET = "biotool-egress-tls"           # ca.pem, host.pem, host.key: the egress only
RELAY_SECRET = "biotool-relay-client"       # site-ca.pem, client.pem, client.key (relay.py)
RELEASE_POD = {"io.kubernetes.pod.namespace": "{{ .Release.Namespace }}",
               "app.kubernetes.io/instance": "{{ .Release.Name }}"}
NO_WORLD = "biotool-sandbox-no-world"      # the sandbox's policy (after the release's name)
# What doctor's cluster mode says it relies on (biotool/system/clusterpolicy.py); the chart
# does not template env values, so the policies are named without their release prefix.
SANDBOX_POLICY = (f"CiliumNetworkPolicy {NO_WORLD} (the world denied) and agent-env's "
                  "sandbox-egress (its release's pods and namespace DNS only), k8s/values.yaml")
# Each pod is Guaranteed at compose.yaml's limits, the sandbox's one way out is the egress pod
# (Cilium), on the cluster's gVisor runtime class; Inspect's k8s sandbox execs as any user.
CAPABILITIES = Capabilities(backend="Kubernetes (agent-env)", limits=True, network_rule=True,
                            runtimes=("gvisor",), user_switching=True)
KUBE_DNS = [{"matchLabels": {"io.kubernetes.pod.namespace": "kube-system", "k8s-app": app}}
            for app in ("kube-dns", "node-local-dns")]


def quantity(size: str) -> str:
    """A compose size (`4g`, `512m`) as the Kubernetes quantity of the same bytes (`4Gi`)."""
    n = budget.to_bytes(size)
    for unit, shift in (("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def millicpu(cpus: str) -> str:
    try:
        value = float(cpus)
    except ValueError:
        raise LauncherError(f"{cpus!r} is not a CPU count like 1.5") from None
    if value <= 0:
        raise LauncherError(f"{cpus!r} is not a CPU count like 1.5")
    return f"{round(value * 1000)}m"


def egress_cpus(compose: Path) -> str:
    m = re.search(r"^  egress:\n(?:    .*\n|\s*\n)*?    cpus:\s*([0-9.]+)",
                  compose.read_text(encoding="utf-8"), re.M)
    if not m:
        raise LauncherError(f"{compose}: the egress service has no cpus limit to carry over")
    return m.group(1)


def limits(compose: Path) -> dict:
    """compose.yaml's defaults, checked as `up` checks them (full tmpfs leave room to run)."""
    d = compose_defaults(compose)
    mem = budget.run_memory(Variables.of(compose, environ={}))  # refused: tmpfs caps too large
    if not mem["egress"]:
        raise LauncherError(f"{compose}: the egress service has no mem_limit to carry over")
    return {
        "image": d[settings.IMAGE.name], "egress_image": d[settings.EGRESS_IMAGE.name],
        "cpu": millicpu(d[settings.CPUS.name]), "memory": quantity(d[settings.MEM_LIMIT.name]),
        "tmpfs": {path: quantity(d[var]) for path, var in budget.TMPFS_VARS.items()},
        "egress_cpu": millicpu(egress_cpus(compose)), "egress_memory": quantity(f"{mem['egress']}"),
    }


def parse_relay(relay: str | None) -> dict | None:
    """`SERVICE.NAMESPACE[:PORT]` of the site's NCBI relay, or None (straight to NCBI)."""
    if not relay:
        return None
    m = re.fullmatch(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)"
                     r"(?::([0-9]{1,5}))?", relay)
    if not m or not 0 < int(m.group(5) or RELAY_PORT) < 65536:
        raise LauncherError(f"--relay {relay!r} must be SERVICE.NAMESPACE[:PORT], e.g. "
                            f"ncbi-relay.biotool-relay:{RELAY_PORT}")
    service, namespace = m.group(1), m.group(3)
    return {"service": service, "namespace": namespace, "port": int(m.group(5) or RELAY_PORT),
            "host": f"{service}.{namespace}.svc.cluster.local"}


def _hardened(uid: int) -> dict:
    # compose's user, read_only, cap_drop: [ALL] and no-new-privileges, as Kubernetes says them.
    return {"runAsUser": uid, "runAsGroup": uid, "runAsNonRoot": True,
            "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


def _guaranteed(cpu: str, memory: str) -> dict:
    # Requests equal to limits: the Guaranteed QoS class, never evicted before Burstable pods.
    return {"limits": {"cpu": cpu, "memory": memory}, "requests": {"cpu": cpu, "memory": memory}}


def _tmpfs(name: str, size: str) -> dict:
    # Memory-backed like compose's tmpfs: a full one is ENOSPC, its pages count against the limit.
    return {"name": name, "emptyDir": {"medium": "Memory", "sizeLimit": size}}


def sandbox_service(lim: dict) -> dict:
    proxy = f"http://egress:{PROXY_PORT}"
    ca = "/run/biotool-egress-ca/ca.pem"
    env = {"HTTPS_PROXY": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy, "http_proxy": proxy,
           "NO_PROXY": "", "no_proxy": "",
           "SSL_CERT_FILE": ca, "CURL_CA_BUNDLE": ca, "REQUESTS_CA_BUNDLE": ca,
           EGRESS_POLICY.name: SANDBOX_POLICY}
    names = {"/work": "work", "/tmp": "tmp", "/var/tmp": "var-tmp"}
    return {
        "runtimeClassName": CAPABILITIES.runtimes[0],
        "image": lim["image"],
        # The image's ENTRYPOINT (tini) stays PID 1, as compose's `init: true` gives it.
        "command": [],
        "args": ["sleep", "infinity"],
        "workingDir": "/work",
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "securityContext": _hardened(SANDBOX_UID),
        "resources": _guaranteed(lim["cpu"], lim["memory"]),
        "volumes": [*(_tmpfs(names[p], size) for p, size in lim["tmpfs"].items()),
                    {"name": "egress-ca",
                     "configMap": {"name": CA_CONFIGMAP,
                                   "items": [{"key": "ca.pem", "path": "ca.pem"}]}}],
        "volumeMounts": [*({"name": names[p], "mountPath": p} for p in lim["tmpfs"]),
                         {"name": "egress-ca", "mountPath": "/run/biotool-egress-ca",
                          "readOnly": True}],
    }


def egress_service(lim: dict, relay: dict | None) -> dict:
    # EGRESS_RUN_STATE says where the entrypoint keeps the gate's audit store, so the
    # directory egress_audit() reads (audit.STORE) is the one mounted here.
    env = [{"name": "EGRESS_TLS_DIR", "value": "/run/egress-tls"},
           {"name": "EGRESS_RUN_STATE", "value": RUN_STATE}]
    volumes = [_tmpfs("run-egress", "16Mi"),
               # The run's certificate copy, RIDs and audit: kept across a container restart,
               # as compose's egress-state volume is; the gate bounds its audit at 16 MB.
               {"name": "egress-state", "emptyDir": {"sizeLimit": "64Mi"}},
               # The NCBI schedule: one per pod here (the relay is the site-wide authority).
               _tmpfs("ncbi-schedule", "16Mi"),
               {"name": "egress-tls", "secret": {"secretName": TLS_SECRET}}]
    mounts = [{"name": "run-egress", "mountPath": "/run/egress"},
              {"name": "egress-state", "mountPath": RUN_STATE},
              {"name": "ncbi-schedule", "mountPath": SCHEDULE_DIR},
              {"name": "egress-tls", "mountPath": "/run/egress-tls", "readOnly": True}]
    if relay:
        env += [{"name": settings.NCBI_RELAY.name,
                 "value": f"https://{relay['host']}:{relay['port']}"},
                {"name": settings.NCBI_RELAY_TLS.name, "value": "/run/biotool-relay-tls"}]
        volumes.append({"name": "relay-tls", "secret": {"secretName": RELAY_SECRET}})
        mounts.append({"name": "relay-tls", "mountPath": "/run/biotool-relay-tls",
                       "readOnly": True})
    return {
        "runtimeClassName": CAPABILITIES.runtimes[0],
        "image": lim["egress_image"],
        # The sandbox's HTTPS_PROXY=http://egress:3128 resolves through this record.
        "dnsRecord": True,
        "env": env,
        "securityContext": _hardened(EGRESS_UID),
        "resources": _guaranteed(lim["egress_cpu"], lim["egress_memory"]),
        # What compose's healthcheck waits for: Squid listens and its relay to the gate is up.
        "readinessProbe": {"exec": {"command": ["test", "-e", "/run/egress/ready"]},
                           "periodSeconds": 1, "failureThreshold": 30},
        "volumes": volumes,
        "volumeMounts": mounts,
    }


def _policy(name: str, service: str, description: str, spec: dict) -> dict:
    return {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
            "metadata": {"name": '{{ template "agentEnv.fullname" . }}-' + name},
            "spec": {"description": description,
                     "endpointSelector": {"matchLabels": {**RELEASE_POD,
                                                          "inspect/service": service}},
                     **spec}}


def _dns(names: list[str]) -> dict:
    return {"toEndpoints": KUBE_DNS,
            "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}],
                         "rules": {"dns": [{"matchName": n} for n in names]}}]}


def policies(allow: list[tuple[str, int]], relay: dict | None) -> list[dict]:
    sandbox = _policy(
        NO_WORLD, "default",
        "The agent's pod never reaches outside the cluster, whatever other policy allows: "
        "its one way out is the egress service (the chart limits it to its release).",
        {"egressDeny": [{"toEntities": ["world"]}]})
    if relay:
        ways = [_dns([relay["host"]]),
                {"toEndpoints": [{"matchLabels": {"io.kubernetes.pod.namespace": relay["namespace"],
                                                  "app.kubernetes.io/name": relay["service"]}}],
                 "toPorts": [{"ports": [{"port": str(relay["port"]), "protocol": "TCP"}]}]}]
        why = f"the site's NCBI relay ({relay['host']}:{relay['port']}) only"
    else:
        ways = [_dns(sorted({h for h, _ in allow}))]
        ways += [{"toFQDNs": [{"matchName": host}],
                  "toPorts": [{"ports": [{"port": str(port), "protocol": "TCP"}],
                               "serverNames": [host]}]} for host, port in allow]
        why = "the allowlisted hosts only (" + ", ".join(f"{h}:{p}" for h, p in allow) + ")"
    egress = _policy("biotool-egress-out", "egress",
                     f"The egress pod (Squid + the gate) leaves the cluster to {why}, and "
                     "resolves only those names beyond the namespace.", {"egress": ways})
    return [sandbox, egress]


def allowlist(rules_path: Path) -> list[tuple[str, int]]:
    """The rules file's egress allowlist: plain DNS names (rules.py proves each one, so each
    is a Cilium toFQDNs matchName) and TCP ports, without repeats."""
    try:
        return list(rules_mod.load(rules_path).egress_allow)
    except rules_mod.RulesError as exc:
        raise LauncherError(str(exc)) from None


DIGEST_REF = re.compile(r"[^@\s]+@sha256:[0-9a-f]{64}")


def pin(ref: str, docker_client=None) -> str:
    """`ref` pinned by digest (NAME@sha256:...), so every pod of a run, and a rerun, pulls the
    same image: a digest reference as it is (checked), a tag resolved to the registry digest
    the local engine knows for it (LauncherError when it knows none: an image built here and
    never pushed has no registry digest)."""
    if "@" in ref:
        if not DIGEST_REF.fullmatch(ref):
            raise LauncherError(f"image {ref!r} is not a digest reference (NAME@sha256:<64 hex>)")
        return ref
    import docker.errors

    from ..engine.client import client

    dc = docker_client or client()
    try:
        digests = dc.images.get(ref).attrs.get("RepoDigests") or []
    except docker.errors.ImageNotFound:
        raise LauncherError(f"--pin: image {ref} is not on this engine") from None
    repo = ref.rsplit(":", 1)[0] if ":" in ref.rsplit("/", 1)[-1] else ref
    mine = sorted(d for d in digests if d.split("@", 1)[0] == repo) or sorted(digests)
    if not mine:
        raise LauncherError(f"--pin: image {ref} has no registry digest (built here and never "
                            "pushed): push it to the cluster's registry, then pin it")
    return mine[0]


def values(rules_path: Path, compose: Path, *, image: str | None = None,
           egress_image: str | None = None, relay: str | None = None,
           pin_digests: bool = False) -> dict:
    """The agent-env values: services `default` and `egress`, and the Cilium policies.
    pin_digests: both images as digest references (pin); a digest reference given is checked
    and kept either way."""
    lim = limits(compose)
    lim["image"] = image or lim["image"]
    lim["egress_image"] = egress_image or lim["egress_image"]
    for key in ("image", "egress_image"):
        if pin_digests or "@" in lim[key]:
            lim[key] = pin(lim[key])
    relay_ = parse_relay(relay)
    return {
        # Empty on purpose: the chart applies allowDomains to every pod of the release, the
        # sandbox included, which would let it reach NCBI around the gate.
        "allowDomains": [],
        "services": {"default": sandbox_service(lim), "egress": egress_service(lim, relay_)},
        "additionalResources": policies(allowlist(rules_path), relay_),
    }


def render(values_doc: dict) -> str:
    import yaml

    return HEADER + yaml.safe_dump(values_doc, sort_keys=False, width=100)
