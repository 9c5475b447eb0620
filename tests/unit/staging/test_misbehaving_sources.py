"""Staging when the source misbehaves: a cut connection, a server ignoring ranges, a wrong
byte, a redirect (to another host too), a 404, a file rewritten since it was pinned, and
items that are not pinned at all. A run that cannot stage as pinned stops before any index."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

REPO = __import__("pathlib").Path(__file__).resolve().parents[3]

GENOME = ("https://ftp.ncbi.nlm.nih.gov/genomes/all/GCA/000/001/405/GCA_000001405.15_GRCh38/"
          "seqs_for_alignment_pipelines.ucsc_ids/GCA_000001405.15_GRCh38_no_alt_analysis_set.fna.gz")


def _stage(tmp_path, pinned, only=("GRCh38",), **kw):
    from biotool.stagebuild import build


    home = tmp_path / "home"
    return home, build.stage(REPO / "refs", home, ["production"], lock=pinned, only=list(only), **kw)


def _gets(server, path=None):
    return [(p, r) for p, r in server.requests if r != "HEAD" and (path is None or p == path)]


@pytest.fixture
def rewrite(world):
    """Rewrite a served file (a daily file recalculated, a database updated in place); every
    file is put back afterwards, since the served tree is shared by the session."""
    root, _ = world
    saved = {}

    def change(url: str, data: bytes) -> None:
        path = root / url.split("://", 1)[1]
        saved.setdefault(path, path.read_bytes())
        path.write_bytes(data)

    yield change
    for path, data in saved.items():
        path.write_bytes(data)


def _clean(home):
    """Nothing half-staged: no partial download, work folder or item folder of a failed item."""
    assert not list(home.rglob("*.part")) and not list(home.rglob(".*.staging"))


def test_a_cut_connection_is_resumed_with_a_range_request(server, pinned, tmp_path, world):
    server.faults[server.path_of(GENOME)] = "cut-once"
    home, inv = _stage(tmp_path, pinned)
    assert not inv["items"]["reference/GRCh38"].get("error")
    ranges = [r for _, r in _gets(server, server.path_of(GENOME))]
    assert ranges[0] is None and ranges[1].startswith("bytes=") and ranges[1] != "bytes=0-"
    _, truth = world
    seq = "".join(l for l in (home / "references/GRCh38/GRCh38.fa").read_text().splitlines()
                  if not l.startswith(">"))
    assert seq == truth["genomes"]["GRCh38"]["sequence"]
    _clean(home)


def test_a_server_ignoring_ranges_gets_a_clean_retry(server, pinned, tmp_path):
    path = server.path_of(GENOME)
    server.faults[path] = "cut-once-no-range"
    home, inv = _stage(tmp_path, pinned)
    assert not inv["items"]["reference/GRCh38"].get("error")
    assert len(_gets(server, path)) == 2
    _clean(home)


def test_a_connection_cut_every_time_fails_naming_the_item(server, pinned, tmp_path):
    from biotool.staging import StagingError

    server.faults[server.path_of(GENOME)] = "cut"
    with pytest.raises(StagingError, match=r"^reference GRCh38: .*failed after 4 attempts"):
        _stage(tmp_path, pinned)
    _clean(tmp_path / "home")
    assert not (tmp_path / "home/references/GRCh38").exists()


MODEL = "https://celltypist.cog.sanger.ac.uk/models/Healthy_COVID19_PBMC/v2/Healthy_COVID19_PBMC.pkl"


def test_a_wrong_byte_stops_the_run_before_any_index_in_one_line(server, pinned, tmp_path,
                                                                monkeypatch):
    # The same size, other bytes: only the download can tell, and it tells before any item
    # is unpacked or indexed (GRCh38 would be indexed with bwa and samtools).
    from biotool.staging import StagingError
    from biotool.stagebuild import build

    prepared = []
    monkeypatch.setattr(build, "prepare", lambda *a: prepared.append(a) or {})
    server.faults[server.path_of(MODEL)] = "wrong-byte"
    with pytest.raises(StagingError) as err:
        _stage(tmp_path, pinned, only=("GRCh38", "Healthy_COVID19_PBMC", "Immune_All_High"))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("model Healthy_COVID19_PBMC: ") and MODEL in msg
    assert "changed since it was pinned on" in msg and "has sha256" in msg
    assert "make pins PINS_ONLY=Healthy_COVID19_PBMC" in msg and "GRCh38" not in msg
    assert prepared == []
    home = tmp_path / "home"
    assert not (home / "models/Healthy_COVID19_PBMC").exists()
    assert not (home / "references/GRCh38").exists() and not (home / "staged.json").exists()
    _clean(home)


def test_keep_going_records_a_wrong_byte_and_stages_the_rest(server, pinned, tmp_path):
    server.faults[server.path_of(MODEL)] = "wrong-byte"
    home, inv = _stage(tmp_path, pinned, only=("Healthy_COVID19_PBMC", "Immune_All_High"),
                       keep_going=True)
    assert "changed since it was pinned" in inv["items"]["model/Healthy_COVID19_PBMC"]["error"]
    assert not inv["items"]["model/Immune_All_High"].get("error")
    assert not (home / "models/Healthy_COVID19_PBMC").exists()
    _clean(home)


def test_a_source_rewritten_since_its_pin_fails_before_any_download(server, pinned, tmp_path,
                                                                     rewrite):
    # A rewrite of another size is seen by the HEAD requests that start the run: nothing at
    # all is downloaded, so the build fails in seconds, not after the other items' gigabytes.
    from biotool.staging import StagingError

    gff = ("https://ftp.ncbi.nlm.nih.gov/refseq/H_sapiens/annotation/annotation_releases/"
           "GCF_000001405.40-RS_2024_08/GCF_000001405.40_GRCh38.p14_genomic.gff.gz")
    rewrite(gff, b"\x1f\x8b" + b"recalculated" * 40)
    with pytest.raises(StagingError) as err:
        _stage(tmp_path, pinned, only=("GRCh38", "Immune_All_High", "human-gene-annotation"))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("database human-gene-annotation: " + gff)
    assert "changed since it was pinned on" in msg and "bytes now" in msg
    assert "make pins PINS_ONLY=human-gene-annotation" in msg
    assert _gets(server) == []  # HEAD requests only
    assert not (tmp_path / "home/references/GRCh38").exists()
    _clean(tmp_path / "home")


def test_a_server_that_changes_the_size_without_head_is_refused_at_the_first_bytes(
        server, pinned, tmp_path, rewrite, monkeypatch):
    # Where HEAD tells nothing, the GET's Content-Length does: the body is not read.
    from biotool.staging import StagingError
    from biotool.stagebuild import fetch

    monkeypatch.setattr(fetch, "head_size", lambda url: None)
    monkeypatch.setattr("biotool.stagebuild.build.head_size", lambda url: None)
    rewrite(GENOME, b"\x1f\x8b" + b"x" * 100)
    with pytest.raises(StagingError, match=r"^reference GRCh38: .*is 102 bytes now, the lock "
                                           r"pins \d+.*make pins PINS_ONLY=GRCh38"):
        _stage(tmp_path, pinned)
    _clean(tmp_path / "home")


def test_a_redirect_is_followed_and_the_real_url_recorded(server, pinned, tmp_path):
    server.faults[server.path_of(GENOME)] = "redirect"
    home, inv = _stage(tmp_path, pinned)
    rec = inv["items"]["reference/GRCh38"]
    assert not rec.get("error") and rec["fetched_from"][0] == GENOME
    assert any(p.startswith("/moved/") for p, _ in server.requests)


def test_a_404_fails_the_build_in_one_line(server, pinned, tmp_path):

    server.faults[server.path_of(GENOME)] = "404"
    proc = subprocess.run([sys.executable, "-m", "biotool.staging", "--refs", str(REPO / "refs"),
                           "--dest", str(tmp_path / "home"), "--sets", "production",
                           "--lock", str(pinned), "--only", "GRCh38"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("staging: error: reference GRCh38: ") and GENOME in last
    assert "HTTP 404" in last and "stopped before any index was built" in last
    assert not (tmp_path / "home/references/GRCh38").exists()


def test_keep_going_records_the_failure_and_succeeds(server, pinned, tmp_path):
    server.faults[server.path_of(GENOME)] = "404"
    home, inv = _stage(tmp_path, pinned, keep_going=True)
    assert "HTTP 404" in inv["items"]["reference/GRCh38"]["error"]


def test_hugging_face_files_redirected_to_another_host_are_fetched_and_recorded(
        server, pinned, tmp_path, world):
    _, truth = world
    lock = tomllib.loads(pinned.read_text())
    hf = next(p for p in lock["pin"] if p["name"] == "C2S-Pythia-410m-cell-type-prediction")
    for f in hf["files"]:
        server.faults[server.path_of(f["url"])] = "cdn"
    home, inv = _stage(tmp_path, pinned, only=("C2S-Pythia-410m-cell-type-prediction",))
    rec = inv["items"]["model/C2S-Pythia-410m-cell-type-prediction"]
    assert not rec.get("error") and rec["fetched_from"] == [f["url"] for f in hf["files"]]
    assert len([p for p, _ in _gets(server) if p.startswith("/cdn-lfs.hf.co/")]) == len(hf["files"])


def test_an_unpinned_item_fails_with_how_to_pin_it(server, tmp_path):

    empty = tmp_path / "empty.lock.toml"
    empty.write_text("")
    proc = subprocess.run([sys.executable, "-m", "biotool.staging", "--refs", str(REPO / "refs"),
                           "--dest", str(tmp_path / "home"), "--sets", "production",
                           "--lock", str(empty), "--only", "Human_Lung_Atlas"],
                          capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "BIOTOOL_TOFU": ""})
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert "model Human_Lung_Atlas: not pinned in refs/pins.lock.toml" in last
    assert "make pins" in last and "BIOTOOL_TOFU=1" in last
    assert not (tmp_path / "home/models/Human_Lung_Atlas").exists()


def test_trust_on_first_use_stages_and_prints_the_lock_lines(server, pinned, tmp_path):

    empty = tmp_path / "empty.lock.toml"
    empty.write_text("")
    home = tmp_path / "home"
    proc = subprocess.run([sys.executable, "-m", "biotool.staging", "--refs", str(REPO / "refs"),
                           "--dest", str(home), "--sets", "production", "--lock", str(empty),
                           "--only", "Healthy_COVID19_PBMC"],
                          capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "BIOTOOL_TOFU": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "trust on first use" in proc.stderr and "[[pin]]" in proc.stderr
    rec = json.loads((home / "staged.json").read_text())["items"]["model/Healthy_COVID19_PBMC"]
    assert rec["tofu"] is True
    printed = tomllib.loads((home / "pins.tofu.toml").read_text())["pin"][0]
    locked = {p["name"]: p for p in tomllib.loads(pinned.read_text())["pin"]}
    assert printed["files"] == locked["Healthy_COVID19_PBMC"]["files"]


def test_a_directory_staged_item_by_item_keeps_every_item(server, pinned, tmp_path):
    home, _ = _stage(tmp_path, pinned, only=("GRCh38",))
    _, inv = _stage(tmp_path, pinned, only=("Immune_All_High",))
    assert {"reference/GRCh38", "model/Immune_All_High"} <= set(inv["items"])
    on_disk = json.loads((home / "staged.json").read_text())["items"]
    assert not on_disk["reference/GRCh38"].get("error")
