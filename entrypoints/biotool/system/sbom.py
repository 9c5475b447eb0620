"""The image's software bill of materials: CycloneDX 1.5 JSON, written at build time from what
is installed, with no network.

    python -m biotool.system.sbom write /etc/biotool/sbom.cdx.json   # at image build

Components: every Debian package dpkg lists as installed (/var/lib/dpkg/status), every Python
distribution in the venv (with the sha256 of the wheel it was installed from, recorded by the
wheels stage in WHEELS), every R package R's library paths hold (as installed.packages() lists
them), every staged item of the inventory (staged.json: its sources with their pinned sha256,
and the staged files' own digest) and the project itself (its version, revision and wheel
digest). The image is metadata.component. The timestamp is the build's SOURCE_DATE_EPOCH
(build.json's `created`) and the serial number is derived from the content, so one commit
gives one SBOM. tests/image/test_sbom.py validates it against the published CycloneDX 1.5
schema and cross-checks it against dpkg-query, pip list and installed.packages().
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import sysconfig
import uuid
from importlib import metadata
from pathlib import Path
from urllib.parse import quote

from biotool import settings

DPKG_STATUS = Path("/var/lib/dpkg/status")
# The R library paths Debian's R searches (/etc/R/Renviron's R_LIBS_SITE, then the base library).
R_LIBRARIES = (Path("/usr/local/lib/R/site-library"), Path("/usr/lib/R/site-library"),
               Path("/usr/lib/R/library"))
# sha256sum lines of the wheels the venv was installed from (the Dockerfile's wheels stage).
WHEELS = "biotool-wheels.sha256"
PROJECT_WHEEL = Path("/etc/biotool/project-wheel.sha256")
SBOM = "/etc/biotool/sbom.cdx.json"
PROJECT = "biotool-sandbox"


def _purl_part(text: str) -> str:
    return quote(text, safe=".-_~")


def _paragraphs(text: str):
    """Debian control (DCF) paragraphs as dicts; continuation lines are joined."""
    for block in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = None
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            yield fields


def debian_packages(status: Path | None = None) -> list[dict]:
    out = []
    for p in _paragraphs((status or DPKG_STATUS).read_text(encoding="utf-8", errors="replace")):
        if not p.get("Status", "").endswith(" installed"):
            continue
        name, version, arch = p["Package"], p["Version"], p.get("Architecture", "all")
        comp = {"type": "library", "bom-ref": f"deb:{name}:{arch}", "name": name,
                "version": version,
                "purl": f"pkg:deb/debian/{_purl_part(name)}@{_purl_part(version)}"
                        f"?arch={arch}&distro=debian-12"}
        source = p.get("Source")
        if source:
            comp["properties"] = [{"name": "debian:source", "value": source}]
        out.append(comp)
    return sorted(out, key=lambda c: c["bom-ref"])


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_hashes(path: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """{(normalised name, version): (sha256, wheel file name)} from sha256sum lines."""
    out = {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        digest, _, name = line.strip().partition("  ")
        if not name.endswith(".whl"):
            continue
        dist, version = name[:-4].split("-")[:2]
        out[(_normal(dist), version)] = (digest, name)
    return out


def python_packages(site: Path | None = None, wheels: Path | None = None) -> list[dict]:
    site = Path(site or sysconfig.get_paths()["purelib"])
    hashes = _wheel_hashes(wheels or Path(sys.prefix) / WHEELS)
    out = []
    for dist in metadata.distributions(path=[str(site)]):
        name, version = dist.metadata["Name"], dist.version
        if _normal(name) == PROJECT:
            continue  # the project is its own component
        comp = {"type": "library", "bom-ref": f"pypi:{_normal(name)}", "name": name,
                "version": version, "purl": f"pkg:pypi/{_normal(name)}@{_purl_part(version)}"}
        found = hashes.get((_normal(name), version))
        if found:
            comp["hashes"] = [{"alg": "SHA-256", "content": found[0]}]
            comp["properties"] = [{"name": "biotool:wheel", "value": found[1]}]
        else:
            comp["properties"] = [{"name": "biotool:wheel",
                                   "value": "none: installed by python3 -m venv"}]
        out.append(comp)
    return sorted(out, key=lambda c: c["bom-ref"])


def r_packages(libraries: tuple[Path, ...] | None = None) -> list[dict]:
    """The packages installed.packages() lists: each folder with a DESCRIPTION and R's
    installed metadata (Meta/package.rds: R's `translations` folder has the one, not the
    other), first library wins, as R's own lookup does."""
    out, seen = [], set()
    for lib in libraries or R_LIBRARIES:
        for desc in sorted(lib.glob("*/DESCRIPTION")):
            if not (desc.parent / "Meta" / "package.rds").is_file():
                continue
            fields = next(_paragraphs(desc.read_text(encoding="utf-8", errors="replace")), {})
            name = fields.get("Package")
            if not name or name in seen or not fields.get("Version"):
                continue
            seen.add(name)
            comp = {"type": "library", "bom-ref": f"r:{name}", "name": name,
                    "version": fields["Version"],
                    "properties": [{"name": "r:library", "value": str(lib)}]}
            repo = fields.get("Repository", "")
            if repo == "CRAN":
                comp["purl"] = f"pkg:cran/{_purl_part(name)}@{_purl_part(fields['Version'])}"
            if repo:
                comp["properties"].append({"name": "r:repository", "value": repo})
            out.append(comp)
    return sorted(out, key=lambda c: c["bom-ref"])


def staged_items(home: Path) -> list[dict]:
    """Every usable item of the inventory, with where its sources came from and their sha256."""
    try:
        inv = json.loads((home / "staged.json").read_text())
    except (OSError, ValueError):
        return []
    from biotool.staging import StagingError, load_manifests

    try:  # the manifests staged beside the items: the digests of sources shipped in refs/
        manifests = {e.key: e for e in load_manifests(home / "manifests")}
    except (StagingError, OSError):
        manifests = {}
    out = []
    for key, rec in sorted(inv.get("items", {}).items()):
        if rec.get("error") or not rec.get("sha256"):
            continue
        comp = {"type": "machine-learning-model" if rec["kind"] == "model" else "data",
                "bom-ref": f"staged:{key}", "name": rec["name"],
                "hashes": [{"alg": "SHA-256", "content": rec["sha256"]}],
                "properties": [{"name": "biotool:kind", "value": rec["kind"]},
                               {"name": "biotool:set", "value": str(rec.get("set", ""))},
                               {"name": "biotool:path",
                                "value": str(home / rec["files"]["main"]["path"])}]}
        if rec.get("title"):
            comp["description"] = rec["title"]
        refs = []
        for f in (rec.get("pin") or {}).get("files", []):
            refs.append({"type": "distribution", "url": f["url"],
                         "hashes": [{"alg": "SHA-256", "content": f["sha256"]}]})
        if not refs:  # a source shipped in refs/: its path and the manifest's sha256
            entry = manifests.get(key, {})
            srcs = entry.get("source") or []
            srcs = srcs if isinstance(srcs, list) else [srcs]
            digests = entry.get("sha256") or []
            digests = digests if isinstance(digests, list) else [digests]
            for src, digest in zip(srcs, digests):
                comp["properties"].append({"name": "biotool:source",
                                           "value": f"refs/{src} sha256:{digest}"})
        if rec.get("builder"):
            comp["properties"].append({"name": "biotool:builder", "value": rec["builder"]})
        if rec.get("pin", {}).get("revision"):
            comp["version"] = str(rec["pin"]["revision"])
        if refs:
            comp["externalReferences"] = refs
        out.append(comp)
    return out


def project(build: dict) -> dict:
    """The project itself: its installed version, the build's revision and its wheel's sha256."""
    try:
        version = metadata.version(PROJECT)
    except metadata.PackageNotFoundError:
        version = "unknown"
    comp = {"type": "application", "bom-ref": f"project:{PROJECT}", "name": PROJECT,
            "version": version,
            "properties": [{"name": "vcs:revision", "value": str(build.get("revision", "unknown"))}]}
    try:
        digest, _, wheel = PROJECT_WHEEL.read_text().strip().partition("  ")
        comp["hashes"] = [{"alg": "SHA-256", "content": digest}]
        comp["properties"].append({"name": "biotool:wheel", "value": wheel})
    except OSError:
        pass
    return comp


def document(build: dict, home: Path) -> dict:
    """The whole SBOM as a dict (deterministic: the same image content gives the same one)."""
    from biotool import __version__

    components = [project(build), *debian_packages(), *python_packages(), *r_packages(),
                  *staged_items(home)]
    body = json.dumps(components, sort_keys=True).encode()
    serial = uuid.uuid5(uuid.NAMESPACE_URL, "biotool-sbom:" + hashlib.sha256(body).hexdigest())
    image = {"type": "container", "bom-ref": "image", "name": str(build.get("image", "biotool-sandbox")),
             "version": str(build.get("revision", "unknown")),
             "properties": [{"name": f"biotool:{k}", "value": str(build[k])}
                            for k in ("torch_variant", "base_image") if k in build]}
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": f"urn:uuid:{serial}",
        "version": 1,
        "metadata": {
            "timestamp": build.get("created") or "1970-01-01T00:00:00Z",
            "tools": {"components": [{"type": "application", "name": "biotool.system.sbom",
                                      "version": __version__}]},
            "component": image,
        },
        "components": components,
        "dependencies": [{"ref": "image", "dependsOn": [c["bom-ref"] for c in components]}],
    }


def write(out: str, build_info: Path = settings.BUILD_INFO.default, home: Path | None = None) -> int:
    try:
        build = json.loads(Path(build_info).read_text())
    except (OSError, ValueError):
        build = {}
    from biotool.staging import home as staged_home

    doc = document(build, Path(home or staged_home()))
    tmp = Path(f"{out}.partial")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    return len(doc["components"])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "write":
        print("usage: python -m biotool.system.sbom write OUT.cdx.json", file=sys.stderr)
        return 2
    print(f"sbom: {write(argv[1])} components in {argv[1]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
