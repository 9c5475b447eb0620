"""What the build bakes in: every locked package at its pin, the rules, the build identity."""

import json
import re

from biotool_testing.paths import REPO


def _lock(variant: str) -> dict[str, str]:
    pins = {}
    for line in (REPO / "image" / f"requirements-{variant}.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def _build_json(sandbox) -> dict:
    ran = sandbox.run("cat /etc/biotool/build.json")
    assert ran.code == 0, ran
    return json.loads(ran.stdout)


def test_build_identity_is_recorded(sandbox, images):
    build = _build_json(sandbox)
    assert build["image"] == images["sandbox"]
    assert build["torch_variant"] in ("cpu", "cuda")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", build["created"])
    assert build["revision"] and build["base_image"]


def test_every_locked_package_is_installed_at_its_pin(sandbox):
    variant = _build_json(sandbox)["torch_variant"]
    ran = sandbox.run(["python", "-c",
                       "import json; from importlib import metadata; "
                       "print(json.dumps({d.metadata['Name']: d.version "
                       "for d in metadata.distributions()}))"])
    assert ran.code == 0, ran
    installed = {re.sub(r"[-_.]+", "-", k).lower(): v for k, v in ran.json.items()}
    wrong = {n: (v, installed.get(n)) for n, v in _lock(variant).items()
             if installed.get(n) != v}
    assert wrong == {}, f"lock pin vs installed: {wrong}"
    assert installed.get("biotool-sandbox")


def test_rules_file_is_the_repository_one(sandbox):
    ran = sandbox.run("cat /etc/biotool/rules.toml; stat -c '%U %a' /etc/biotool/rules.toml")
    assert ran.code == 0, ran
    assert ran.stdout.startswith((REPO / "image" / "rules.toml").read_text())
    assert ran.stdout.strip().endswith("root 644")


def test_bytecode_is_precompiled_and_current(sandbox):
    # PYTHONDONTWRITEBYTECODE stops run-time writes, so start-up relies on build-time .pyc
    # that still match their sources: hash-based (no source time in them, so two builds write
    # the same bytes; the venv's unchecked, Debian's standard library checked) holding the
    # source's hash, or timestamp-based holding the source's mtime and size.
    script = (
        "import importlib.util, os, struct, json, commandline.program, commandline.values, "
        "biotool.cli, biotool.output\n"
        "for m in (json, commandline.program, commandline.values, biotool.cli, biotool.output):\n"
        "    src = m.__file__; st = os.stat(src)\n"
        "    head = open(importlib.util.cache_from_source(src), 'rb').read(16)\n"
        "    flags, mtime, size = struct.unpack('<III', head[4:16])\n"
        "    hashed = flags & 1 and head[8:16] == importlib.util.source_hash(open(src, 'rb').read())\n"
        "    timed = flags == 0 and mtime == int(st.st_mtime) & 0xFFFFFFFF and size == st.st_size\n"
        "    print(m.__name__, bool(hashed or timed))\n"
        "print('PYTHONDONTWRITEBYTECODE', os.environ['PYTHONDONTWRITEBYTECODE'])\n"
    )
    ran = sandbox.run(["python", "-c", script])
    assert ran.code == 0, ran
    assert ran.stdout.split() == ["json", "True", "commandline.program", "True",
                                  "commandline.values", "True",
                                  "biotool.cli", "True", "biotool.output", "True",
                                  "PYTHONDONTWRITEBYTECODE", "1"]


def test_egress_image_has_squid_and_the_same_rules(docker_client, images):
    out = docker_client.containers.run(
        images["egress"], ["-c", "squid -v | head -1; cat /etc/biotool/rules.toml"],
        entrypoint="/bin/sh", network_mode="none", remove=True).decode()
    assert "Squid Cache: Version" in out
    assert (REPO / "image" / "rules.toml").read_text() in out


def test_image_ships_no_build_leftovers(sandbox):
    # A root-owned leftover in /tmp (say /tmp/.cache from staging) breaks the agent's caches.
    ran = sandbox.run("ls -A /tmp | wc -l; ls /src 2>&1; ls /var/lib/apt/lists | wc -l")
    tmp_entries, *middle, apt_lists = ran.stdout.split("\n")[:-1]
    assert tmp_entries == "0", ran
    assert "No such file" in " ".join(middle)
    assert apt_lists == "0"
