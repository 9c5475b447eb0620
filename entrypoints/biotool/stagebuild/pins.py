"""The pin lock (refs/pins.lock.toml): what `pin` resolves and fetches once, and builds verify.

Each `[[pin]]` names one manifest item (kind, name) and lists every file staging fetches for
it: the resolved URL, sha256, size (and the publisher's md5 where one is published), with
the date it was pinned. Indirections are resolved here, once: a CellTypist `models.json`
index entry becomes its versioned `.pkl` URL, a Hugging Face repository becomes one commit
revision and the files of it the model needs.
"""

from __future__ import annotations

import datetime
import fnmatch
import hashlib
import json
import re
import sys
import tomllib
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from biotool.staging import LOCK, StagingError
from biotool.staging.manifest import item_key
from biotool.stagebuild.fetch import download, read_bytes

HF_INCLUDE = ("*.json", "*.safetensors", "*.txt", "*.model")


@dataclass(frozen=True)
class Rewritten:
    """Files a source host rewrites in place: a pin of them fails every build from the day
    they change, and nothing can repair it, so `make pins` refuses them."""
    host: str
    path: str  # a regular expression on the URL's path
    why: str
    instead: str


REWRITTEN = (
    Rewritten("ftp.ncbi.nlm.nih.gov", r"^/gene/DATA/",
              "NCBI Gene's files are recalculated daily and no earlier copy is kept",
              "a versioned RefSeq annotation release's GFF (refseq/<organism>/.../"
              "annotation_releases/<assembly>-RS_<release>/), whose gene lines carry the "
              "symbols and synonyms"),
    Rewritten("ftp.ncbi.nlm.nih.gov",
              r"^/genomes/all/GCF/.*_(genomic\.(gff|gtf|gbff)|rna\.(fna|gbff)|protein\.(faa|gpff)"
              r"|feature_table\.txt|cds_from_genomic\.fna|translated_cds\.faa)\.gz$",
              "the annotation in a GCF assembly folder is replaced at every annotation release",
              "the same file in that release's folder (refseq/<organism>/.../annotation_releases/"
              "<assembly>-RS_<release>/)"),
    Rewritten("ftp.ncbi.nlm.nih.gov", r"^/blast/db/",
              "BLAST databases under blast/db/ are updated in place and not archived",
              "a dated copy in NCBI's cloud bucket (https://ncbi-blast-databases.s3.amazonaws.com/"
              "<date>/, the newest named in its latest-dir file)"),
    Rewritten("ncbi-blast-databases.s3.amazonaws.com", r"^/latest(/|-dir$)",
              "the cloud bucket's latest folder (and its latest-dir file) moves to each day's copy",
              "the dated folder latest-dir names today (https://ncbi-blast-databases.s3."
              "amazonaws.com/<date>/)"),
    Rewritten("ftp.ncbi.nlm.nih.gov", r"/(current|latest|[A-Za-z0-9.]+_latest)/",
              "a current/latest folder moves to each new release",
              "the numbered or dated folder it points to today"),
    Rewritten("ftp.ensembl.org", r"^/pub/current_",
              "Ensembl's current_* folders move at each release", "/pub/release-<N>/"),
    Rewritten("ftp.ebi.ac.uk", r"/gencode/.*/latest_release/",
              "GENCODE's latest_release folder moves at each release", "release_<N>/"),
    Rewritten("ftp.uniprot.org", r"/current_release/",
              "UniProt's current_release is replaced every release",
              "previous_releases/release-<YYYY_MM>/"),
    Rewritten("huggingface.co", r"/resolve/main/",
              "a branch moves with every push",
              "the repository as an hf-model item (make pins resolves one commit)"),
)


def rewritten(url: str) -> Rewritten | None:
    """The rule a URL falls under when its host rewrites it in place, else None."""
    parts = urllib.parse.urlsplit(url)
    return next((r for r in REWRITTEN if parts.hostname == r.host and re.search(r.path, parts.path)),
                None)


def refuse_rewritten(entry: dict, files: list[dict]) -> None:
    """StagingError naming the first file a pin would not outlive, and what to pin instead."""
    for f in files:
        rule = rewritten(f["url"])
        if rule:
            raise StagingError(f"{label(entry)}: {f['url']} is rewritten in place ({rule.why}), "
                               f"so no pin of it outlives the next change: use {rule.instead}")


def label(entry: dict) -> str:
    return f"{entry['kind']} {entry['name']}"


def sources(entry: dict) -> list[str]:
    src = entry.get("source") or []
    return src if isinstance(src, list) else [src]


def read_lock(path: Path) -> dict[str, dict]:
    """{"kind/name": pin} from a lock file; empty when there is none."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise StagingError(f"{path}: not valid TOML: {exc}") from None
    return {item_key(p["kind"], p["name"]): p for p in data.get("pin", [])}


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def pin_lines(pin: dict) -> list[str]:
    """One `[[pin]]` table as TOML lines (files as an array of inline tables)."""
    lines = ["[[pin]]"]
    for key in ("kind", "name", "source", "revision", "pinned"):
        if key in pin:
            lines.append(f"{key} = {_toml(pin[key])}")
    lines.append("files = [")
    for f in pin["files"]:
        inner = ", ".join(f"{k} = {_toml(f[k])}" for k in ("path", "url", "sha256", "size", "md5")
                          if k in f)
        lines.append(f"  {{ {inner} }},")
    lines.append("]")
    return lines


def write_lock(path: Path, pins: dict[str, dict]) -> None:
    from biotool.cache import atomic_path

    out = ["# Pins of every production source: written by `make pins` (python -m biotool.staging",
           "# pin --sets production) on a host that reaches the sources, committed, and verified",
           "# byte for byte by every image build. Regenerate rather than edit by hand.", ""]
    for key in sorted(pins):
        out += pin_lines(pins[key]) + [""]
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(out))


# ---------------------------------------------------------------- resolving indirections

def _celltypist(entry: dict) -> list[dict]:
    index_url = sources(entry)[0]
    try:
        index = json.loads(read_bytes(index_url, label(entry)))
        models = index["models"]
    except (ValueError, KeyError, TypeError):
        raise StagingError(f"{label(entry)}: {index_url} is not a CellTypist model index "
                           "(no 'models' list)") from None
    for m in models:
        if m.get("filename") == entry["model_file"] and m.get("url"):
            return [{"path": entry.get("filename", entry["model_file"]), "url": m["url"]}]
    raise StagingError(f"{label(entry)}: {entry['model_file']} is not in {index_url}")


def _hugging_face(entry: dict) -> tuple[str, list[dict]]:
    repo = entry.get("repo") or sources(entry)[0].split("huggingface.co/", 1)[-1].strip("/")
    api = (f"https://huggingface.co/api/models/{repo}/revision/"
           f"{entry.get('revision', 'main')}?blobs=true")
    try:
        info = json.loads(read_bytes(api, label(entry)))
        revision, siblings = info["sha"], info["siblings"]
    except (ValueError, KeyError, TypeError):
        raise StagingError(f"{label(entry)}: {api} is not a Hugging Face model answer") from None
    include = entry.get("include", HF_INCLUDE)
    files = []
    for s in siblings:
        name = s.get("rfilename", "")
        if any(fnmatch.fnmatch(name, pat) for pat in include):
            f = {"path": name, "url": f"https://huggingface.co/{repo}/resolve/{revision}/{name}"}
            if (s.get("lfs") or {}).get("sha256"):
                f["expect_sha256"] = s["lfs"]["sha256"]
            files.append(f)
    if not files:
        raise StagingError(f"{label(entry)}: {repo}@{revision} has no file matching "
                           f"{', '.join(include)}")
    return revision, files


def resolve(entry: dict) -> tuple[str | None, list[dict]]:
    """(revision or None, [{"path", "url", ...}]): the files this item stages, resolved."""
    if entry.get("model_file"):
        return None, _celltypist(entry)
    if entry.get("prepare") == "hf-model":
        return _hugging_face(entry)
    srcs = sources(entry)
    if not srcs or not all(s.startswith(("https://", "http://")) for s in srcs):
        raise StagingError(f"{label(entry)}: production sources must be URLs")
    files = []
    for url in srcs:
        name = url.rsplit("/", 1)[-1]
        f = {"path": entry["filename"] if len(srcs) == 1 and entry.get("filename") else name,
             "url": url}
        if entry.get("md5_sidecar"):
            text = read_bytes(url + ".md5", label(entry), limit=4096).decode(errors="replace")
            f["md5"] = (text.split() or [""])[0].lower()
        if entry.get("md5_list"):
            f["md5"] = _listed_md5(entry, url)
        files.append(f)
    # An index the publisher built of this very file (NCBI's bwa index of the GRCh38 analysis
    # set): fetched beside it, checked against the FASTA at staging (prepare.use_prebuilt).
    for index, url in sorted((entry.get("prebuilt") or {}).items()):
        f = {"path": prebuilt_name(index), "url": url}
        if entry.get("md5_list"):
            f["md5"] = _listed_md5(entry, url)
        files.append(f)
    return None, files


def prebuilt_name(index: str) -> str:
    """The name a publisher's prebuilt `index` is fetched as, beside the item's source."""
    return f"prebuilt-{index}.tar.gz"


def _listed_md5(entry: dict, url: str) -> str:
    """The md5 the publisher lists for `url` in the checksum file beside it: NCBI's
    md5checksums.txt (`md5_list = true`; `<md5>  ./<name>` lines) or the file md5_list names
    (GENCODE's MD5SUMS: `<md5>  <name>` lines)."""
    folder, name = url.rsplit("/", 1)
    listed = entry["md5_list"] if isinstance(entry["md5_list"], str) else "md5checksums.txt"
    listing = f"{folder}/{listed}"
    text = read_bytes(listing, label(entry), limit=4 << 20).decode(errors="replace")
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].removeprefix("./") == name:
            return parts[0].lower()
    raise StagingError(f"{label(entry)}: {listing} does not list {name}: refused")


def _md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def fetch_resolved(entry: dict, revision: str | None, files: list[dict], into: Path) -> dict:
    """Download resolved files into `into` (unpinned), check the publisher's digests, and
    return the pin: {"kind", "name", "source", "revision"?, "pinned", "files": [...]}."""
    out = []
    for f in files:
        got = download(f["url"], into / f["path"], f"{label(entry)}: {f['path']}")
        rec = {"path": f["path"], "url": f["url"], "sha256": got["sha256"], "size": got["size"]}
        if f.get("expect_sha256") and f["expect_sha256"] != got["sha256"]:
            raise StagingError(f"{label(entry)}: {f['url']} has sha256 {got['sha256']}, the "
                               f"repository lists {f['expect_sha256']}: refused")
        if "md5" in f:
            md5 = _md5(into / f["path"])
            if md5 != f["md5"]:
                raise StagingError(f"{label(entry)}: {f['url']} has md5 {md5}, its publisher "
                                   f"lists {f['md5']}: refused")
            rec["md5"] = md5
        out.append(rec)
    pin = {"kind": entry["kind"], "name": entry["name"], "source": sources(entry)[0],
           "pinned": datetime.date.today().isoformat(), "files": out}
    if revision:
        pin["revision"] = revision
    return pin


def pin(refs_dir: Path, sets: list[str], lock_path: Path | None = None,
        only: list[str] | None = None, scratch: Path | None = None) -> dict[str, dict]:
    """Resolve and fetch every URL-sourced item of `sets` (or the `only` names) and write the
    lock; items that fail keep their old pin and are reported, and the run then fails."""
    import shutil
    import tempfile

    from biotool.staging import load_manifests

    lock_path = Path(lock_path or Path(refs_dir) / LOCK)
    pins = read_lock(lock_path)
    failed = []
    for entry in load_manifests(refs_dir):
        if entry.get("set", "production") not in sets or entry.get("builder"):
            continue
        if entry.get("sha256") or (only and entry["name"] not in only):
            continue
        work = Path(tempfile.mkdtemp(prefix="biotool-pin-", dir=scratch))
        try:
            sys.stderr.write(f"staging: pinning {label(entry)}\n")
            revision, files = resolve(entry)
            refuse_rewritten(entry, files)
            pins[entry.key] = fetch_resolved(entry, revision, files, work)
        except StagingError as exc:
            failed.append(str(exc))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    write_lock(lock_path, pins)
    if failed:
        raise StagingError("not pinned: " + "; ".join(failed))
    return pins
