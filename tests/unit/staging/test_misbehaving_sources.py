"""Staging when the source misbehaves: a cut connection, a server ignoring ranges, a wrong
byte, a redirect, a 404, and items that are not pinned at all."""

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
    from biotool.staging import build


    home = tmp_path / "home"
    return home, build.stage(REPO / "refs", home, ["production"], lock=pinned, only=list(only), **kw)


def _clean(home):
    """Nothing half-staged: no partial download, work folder or item folder of a failed item."""
    assert not list(home.rglob("*.part")) and not list(home.rglob(".*.staging"))


def test_a_cut_connection_is_resumed_with_a_range_request(server, pinned, tmp_path, world):
    server.faults[server.path_of(GENOME)] = "cut-once"
    home, inv = _stage(tmp_path, pinned)
    assert not inv["items"]["reference/GRCh38"].get("error")
    ranges = [r for p, r in server.requests if p == server.path_of(GENOME)]
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
    assert len([p for p, _ in server.requests if p == path]) == 2
    _clean(home)


def test_a_connection_cut_every_time_fails_naming_the_item(server, pinned, tmp_path):
    from biotool.staging import StagingError

    server.faults[server.path_of(GENOME)] = "cut"
    with pytest.raises(StagingError, match=r"reference/GRCh38: .*failed after 4 attempts"):
        _stage(tmp_path, pinned)
    _clean(tmp_path / "home")
    assert not (tmp_path / "home/references/GRCh38").exists()


def test_a_wrong_byte_is_refused_in_one_line_naming_the_item(server, pinned, tmp_path):
    from biotool.staging import StagingError

    model = ("https://celltypist.cog.sanger.ac.uk/models/Healthy_COVID19_PBMC/v2/"
             "Healthy_COVID19_PBMC.pkl")
    server.faults[server.path_of(model)] = "wrong-byte"
    with pytest.raises(StagingError) as err:
        _stage(tmp_path, pinned, only=("Healthy_COVID19_PBMC", "Immune_All_High"),)
    msg = str(err.value)
    assert "\n" not in msg and "model Healthy_COVID19_PBMC" in msg and "refused" in msg
    assert "Immune_All_High" not in msg
    home = tmp_path / "home"
    inv = json.loads((home / "staged.json").read_text())
    assert inv["items"]["model/Healthy_COVID19_PBMC"]["error"]
    assert not inv["items"]["model/Immune_All_High"].get("error")
    assert not (home / "models/Healthy_COVID19_PBMC").exists()
    _clean(home)


def test_a_redirect_is_followed_and_the_real_url_recorded(server, pinned, tmp_path):
    server.faults[server.path_of(GENOME)] = "redirect"
    home, inv = _stage(tmp_path, pinned)
    rec = inv["items"]["reference/GRCh38"]
    assert not rec.get("error") and rec["fetched_from"] == [GENOME]
    assert any(p.startswith("/moved/") for p, _ in server.requests)


def test_a_404_fails_the_build_in_one_line(server, pinned, tmp_path):

    server.faults[server.path_of(GENOME)] = "404"
    proc = subprocess.run([sys.executable, "-m", "biotool.staging", "--refs", str(REPO / "refs"),
                           "--dest", str(tmp_path / "home"), "--sets", "production",
                           "--lock", str(pinned), "--only", "GRCh38"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("staging: error: 1 item(s) not staged: reference/GRCh38:")
    assert "HTTP 404" in last
    assert "not staged  reference/GRCh38" in proc.stderr  # the summary says so too


def test_keep_going_records_the_failure_and_succeeds(server, pinned, tmp_path):
    server.faults[server.path_of(GENOME)] = "404"
    home, inv = _stage(tmp_path, pinned, keep_going=True)
    assert "HTTP 404" in inv["items"]["reference/GRCh38"]["error"]


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
