"""The SIF under real Apptainer in the shape docs/hpc.md documents: the node's user (a UID the
image has never seen), a read-only root, the site overlay bound read-only, node-local /tmp and
/work, and doctor's verdict on the network Apptainer gives it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

from biotool_testing import hpc_node
from biotool_testing.contract import error_line
from biotool_testing.simulate import big_reference

NO_NET = ["--containall"]
READS = "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq"  # Apptainer's default: the host's (here: the node's) network


def _check(doctor: dict, name: str) -> dict:
    return next(c for c in doctor["checks"] if c["check"] == name)


def test_the_sif_is_the_one_its_record_names(node):
    record = hpc_node.sif_record()
    digest = hashlib.sha256()
    with open(hpc_node.SIF, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    assert record["sha256"] == digest.hexdigest()
    assert record["size"] == os.path.getsize(hpc_node.SIF) < record["image_size"]
    assert record["apptainer"] == node.sh("apptainer version").stdout.strip()


def test_verify_sif_finds_every_file_of_the_images_manifest_in_the_sif(node):
    ran = subprocess.run([sys.executable, "-m", "biotool_sandbox", "verify-sif", str(hpc_node.SIF)],
                         capture_output=True, text=True, timeout=3600)
    assert ran.returncode == 0, ran.stderr[-2000:] + ran.stdout[-3000:]
    report = json.loads(ran.stdout)
    assert report["manifest"]["differences"] == 0 and report["manifest"]["same_as_image's"] is True
    assert report["manifest"]["sha256"] == hpc_node.sif_record()["manifest_sha256"]
    # Apptainer's own additions, and the owners its non-root build gave to root (the agent's
    # home among them), are listed apart.
    assert {"/.singularity.d", "/environment", "/singularity"} <= set(report["apptainer_paths"])
    assert report["owners"]["collapsed_to_root"] and "/home/agent" in report["owners"]["listed"]


def test_doctor_is_enforced_with_no_network_and_refused_without_it(node):
    enforced = node.apptainer("biotool doctor --no-sha", env={"BIOTOOL_REQUIRE_ENFORCED": "1"})
    assert enforced.code == 0, enforced
    egress = _check(enforced.json, "egress")
    assert egress["ok"] and egress["detail"].startswith("offline mode: only lo"), egress

    shared = node.apptainer("biotool doctor --no-sha", shape=NO_NET)
    assert shared.code == 4, shared
    egress = _check(shared.json, "egress")
    assert not egress["ok"] and egress["required"], egress
    # With the node's network in reach, an agent could talk to anything: every command refuses,
    # each with the policy's exit 3, one line and the remedy in this shape.
    commands = ["list", "references", "version", "doctor", "align --help",
                f"taxonomy --local --fastq {READS}", "call variant_annotate '{}'"]
    refused = node.apptainer("; ".join(f"biotool {c} >/dev/null 2>/work/err; echo $? "
                                       "$(wc -l < /work/err) $(grep -c 'apptainer exec --net "
                                       "--network none' /work/err)" for c in commands),
                             shape=NO_NET, env={"BIOTOOL_REQUIRE_ENFORCED": "1"})
    assert refused.code == 0 and refused.stdout.splitlines() == ["3 1 1"] * len(commands), refused


def test_the_nodes_user_a_read_only_root_and_node_local_scratch(node, tmp_path):
    site = node.results / "shape-site"
    site.mkdir()
    (site / "staged.json").write_text('{"items": {}}\n')
    os.chmod(site, 0o777)  # anyone could write it: only the read-only bind keeps the episode out
    ran = node.apptainer(
        "id -u; getent passwd $(id -u) || echo no-passwd-entry; grep ^CapEff /proc/self/status; "
        "touch /opt/x 2>&1 || true; touch /opt/biotool-site/x 2>&1 || true; "
        "touch /work/w /tmp/t /var/tmp/v && echo writable; "
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; biotool list | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"site\"])'",
        binds=[f"{site}:/opt/biotool-site:ro"])
    assert ran.code == 0, ran
    lines = ran.stdout.splitlines()
    assert lines[0] == str(node.uid) and node.uid not in (0, 1000, 12345)
    # Apptainer adds the caller's own passwd line; the episode holds no capability at all.
    assert lines[1].startswith(f"{hpc_node.NODE_USER}:x:{node.uid}:"), lines
    assert lines[2].split() == ["CapEff:", "0000000000000000"], lines
    assert "Read-only file system" in lines[3] and "Read-only file system" in lines[4], lines
    # The episode's own network namespace holds only lo (/sys/class/net, which Apptainer does
    # not remount, still lists the node's interfaces: docs/hpc.md).
    assert lines[5:] == ["writable", "lo", "/opt/biotool-site"], lines
    assert not (site / "x").exists()


def test_the_episode_scratch_is_the_node_folder_it_was_given(node):
    # --workdir puts /tmp and /var/tmp on the episode's node-local folder, not a 64 MB memory disk.
    ran = node.sh(f"mkdir -p w t && apptainer --quiet exec {' '.join(hpc_node.OFFLINE)} "
                  f"--workdir $PWD/t --bind $PWD/w:/work --pwd /work {hpc_node.NODE_SIF} "
                  "sh -c 'head -c 100000000 /dev/zero > /tmp/big && echo 1 > /work/out' "
                  "&& ls -R t | grep -c big; cat w/out; rm -rf w t")
    assert ran.code == 0, ran
    lines = ran.stdout.splitlines()
    assert lines[-2:] == ["1", "1"], ran  # the 100 MB file in the episode's folder; /work's file


def test_no_background_index_is_promised_in_an_apptainer_exec(node):
    """Every process of an `apptainer exec` ends with it, so a large reference's index left
    to build in the background would never appear (issue 50's probe): the refusal says how to
    get it instead, and no half-built index is left in the cache kept between commands."""
    data, cache = node.results / "big-reference", node.results / "index-cache"
    data.mkdir()
    cache.mkdir()
    big_reference(data)
    for path in (data, cache, *data.iterdir()):
        path.chmod(0o777 if path == cache else 0o755 if path.is_dir() else 0o644)
    ran = node.apptainer("biotool align --fastq /data/reads.fastq --reference /data/big.fa",
                         binds=[f"{data}:/data:ro", f"{cache}:/cache"],
                         env={"BIOTOOL_CACHE": "/cache"})
    line = error_line(ran, "--reference /data/big.fa", "Apptainer", "biotool index --kind bwa",
                      "--timeout", code=2)
    assert "few minutes" not in line and "now being built" not in line, line
    assert not [p for p in cache.rglob("*") if p.name in ("bwa", "bwa.failed")]
