"""`biotool-sandbox`: run agent episodes in the enforced stack; every command prints one JSON object.

Exit codes follow biotool's: 0 success, 2 bad input or usage (unknown run, missing file),
4 docker or compose failed, 130 interrupted (Ctrl-C). `exec` itself exits 0 when the command ran, whatever its own exit
code (that is in the JSON as exit_code).
"""

from __future__ import annotations

import os

from commandline import program
from commandline.kinds import (Size, count, existing_file, existing_folder, output_file,
                               output_folder)
from commandline.spec import Argument, Command, Option

from .errors import EngineError, LauncherError
from .settings import CUDA_IMAGE, EGRESS_IMAGE, IMAGE
from .timeouts import SECONDS

PROG = "biotool-sandbox"

EPILOG = f"""\
\b
examples:
  run=$(biotool-sandbox up | python3 -c 'import json,sys; print(json.load(sys.stdin)["run"])')
  biotool-sandbox exec $run -- biotool doctor
  biotool-sandbox cp reads.fastq $run:/work/
  biotool-sandbox cp $run:/work/out.bam ./out.bam
  biotool-sandbox audit $run
  biotool-sandbox down $run

images: {IMAGE.name} (default {IMAGE.default}), {EGRESS_IMAGE.name}
(default {EGRESS_IMAGE.default}), {CUDA_IMAGE.name} for --mode gpu (default
{CUDA_IMAGE.default}, built by make image-cuda), or --image/--egress-image on up.
"""


def _env_pairs(pairs: list[str]) -> dict:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise LauncherError(f"--env {pair!r} must be KEY=VALUE")
        env[key] = value
    return env


def up(mode, image, egress_image, extra_ca, cpus, memory, work_size, compose_file, site,
       relay, relay_tls, runtime, blast) -> dict:
    from .backends import compose
    from .backends.spec import RunSpec
    from .engine.limits import Limits

    return compose.up(RunSpec(mode=mode, image=image, egress_image=egress_image,
                              extra_ca=extra_ca, compose=compose_file, site=site,
                              limits=Limits(cpus=cpus, memory=memory, work_size=work_size),
                              relay=relay, relay_tls=relay_tls, runtime=runtime, blast=blast))


def exec_(run, timeout, workdir, env, cmd) -> dict:
    from . import agent
    from .engine import runs

    runs.check_run_name(run)
    return agent.exec_(run, cmd, workdir=workdir, env=_env_pairs(env), timeout=timeout)


def cp(src, dest) -> dict:
    from . import agent

    return agent.cp(src, dest)


def audit(run) -> dict:
    from .engine import egress_audit, runs

    runs.check_run_name(run)
    return egress_audit.audit(run)


def down(run, keep_audit) -> dict:
    from .backends import compose

    return compose.down(run, keep_audit=keep_audit)


def ps() -> dict:
    from .engine import runs

    return {"runs": runs.runs()}


def k8s_values(rules, compose_file, image, egress_image, relay, pin, out) -> dict | str:
    from pathlib import Path

    from biotool.rules import REPO_RULES

    from .backends import k8s
    from .engine.composefile import compose_file as find_compose

    text = k8s.render(k8s.values(Path(rules) if rules else REPO_RULES,
                                 find_compose(compose_file), image=image,
                                 egress_image=egress_image, relay=relay, pin_digests=pin))
    if not out:
        return text
    dest = Path(out)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    try:  # written beside it and renamed: a reader never sees half of it
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, dest)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise LauncherError(f"--out {out}: cannot write it ({exc.strerror})") from None
    return {"written": out}


def harbor(out, image, egress_image, task, compose_file, sources, version, pin,
           network_mode) -> dict:
    from pathlib import Path

    from . import harbor_tasks
    from .backends import k8s
    from .backends.harbor import refuse_network_mode
    from .engine.client import client
    from .engine.composefile import compose_file as find_compose
    from .engine.schedule import ensure_schedule_volume

    refuse_network_mode(network_mode, "--network-mode")
    image = image or IMAGE.get()
    egress_image = egress_image or EGRESS_IMAGE.get()
    if pin or "@" in image:
        image = k8s.pin(image)
    if pin or "@" in egress_image:
        egress_image = k8s.pin(egress_image)
    written = harbor_tasks.write(Path(out), find_compose(compose_file), image,
                                 egress_image, only=list(task) or None, version=version,
                                 root=Path(sources) if sources else None)
    # The tasks' egress mounts the host-wide NCBI schedule volume (external): made here when
    # this engine is the one that will run them.
    try:
        volume = ensure_schedule_volume(client())
    except EngineError:
        volume = None
    return {"tasks": written, "image": image, "egress_image": egress_image,
            "schedule_volume": volume}


def harbor_check(tasks) -> dict:
    from pathlib import Path

    from . import harbor_tasks

    return {"checked": [harbor_tasks.check(Path(t)) for t in tasks]}


def verify_image(image, against, manifest, limit) -> dict:
    from commandline.errors import ProgramError

    from . import imagefiles

    report = imagefiles.verify(image, against=against, manifest=manifest, limit=limit)
    if not report["ok"]:
        parts = ([f"{report['manifest']['differences']} path(s) differ from its own manifest"]
                 if report["manifest"] else [])
        if "manifest_file" in report:
            parts.append(f"{report['manifest_file']['differences']} from {manifest}")
        if "against" in report:
            parts.append(f"{report['against']['differences']} from {against}")
        raise ProgramError(f"verify-image {image}: " + "; ".join(parts), result=report)
    return report


def verify_sif(sif, manifest, limit) -> dict:
    import hashlib
    import json
    from pathlib import Path

    from commandline.errors import ProgramError

    from . import imagefiles, siffiles

    if manifest:
        text, _ = imagefiles.read_manifest(manifest)
        expected_sha = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    else:  # the record image/hpc/build-sif.sh wrote beside the SIF, when there is one
        record, expected_sha = Path(f"{sif}.json"), None
        if record.is_file():
            try:
                expected_sha = json.loads(record.read_text()).get("manifest_sha256")
            except (OSError, ValueError, AttributeError):
                raise LauncherError(f"{record}: not the JSON record make sif writes; give the "
                                    "image's manifest with --manifest") from None
    report = siffiles.verify(sif, manifest_sha256=expected_sha, limit=limit)
    if not report["ok"]:
        m = report["manifest"]
        parts = [f"{m['differences']} path(s) differ from the manifest it holds"]
        if m["same_as_image's"] is False:
            parts.append("its manifest is not the image's")
        raise ProgramError(f"verify-sif {sif}: " + "; ".join(parts), result=report)
    return report


def demo(image, egress_image, compose_file, keep) -> dict:
    from .demo import demo as run_demo

    result = run_demo(image=image, egress_image=egress_image, compose_file=compose_file,
                      keep=keep)
    # The demo is what `make demo` runs: a step that failed must fail the target.
    if not result.get("ok"):
        raise EngineError(f"demo failed: steps {result.get('failed_steps')}, forbidden egress "
                          f"denied in audit: {result['forbidden_egress']['denied_in_audit']}",
                          result=result)
    return result


def commands() -> list[Command]:
    run = Argument("run", required=True)
    image = Option(("--image",), "sandbox image (overrides BIOTOOL_IMAGE)")
    egress = Option(("--egress-image",), "egress proxy image (overrides BIOTOOL_EGRESS_IMAGE)")
    return [
        Command("up", up, short_help="start a fresh enforced stack (a new compose project); "
                "prints its run id", options=(
                    Option(("--mode",), "default: sandbox + egress proxy; gpu: same with the "
                           "CUDA image and NVIDIA GPUs reserved; offline: sandbox with no network "
                           "at all", default="default", choices=("default", "gpu", "offline")),
                    image, egress,
                    Option(("--extra-ca",), "a CA the egress gate trusts upstream for the "
                           "allowlisted host (tests: a mock NCBI)", metavar="PEM",
                           kind=existing_file()),
                    Option(("--cpus",), "CPU limit of the sandbox (default 1.5, BIOTOOL_CPUS)"),
                    Option(("--memory",), "memory limit of the sandbox, e.g. 8g (default 8g, "
                           "BIOTOOL_MEM_LIMIT)", kind=Size()),
                    Option(("--work-size",), "size cap of /work, a tmpfs, e.g. 4g (default 4g, "
                           "BIOTOOL_WORK_SIZE)", kind=Size()),
                    Option(("--compose-file",), "compose.yaml to use (default: "
                           "BIOTOOL_COMPOSE_FILE, the checkout's)", kind=existing_file()),
                    Option(("--site",), "a site directory staged with `python -m "
                           "biotool.staging --dest DIR`, mounted read-only at /opt/biotool-site "
                           "and merged into the inventory", kind=existing_folder()),
                    Option(("--relay",), "https://HOST:PORT of the site's NCBI relay: the run's "
                           "gate sends BLAST there, never to NCBI itself (default "
                           "BIOTOOL_NCBI_RELAY)", metavar="URL"),
                    Option(("--relay-tls",), "the gate's relay certificates: site-ca.pem, "
                           "client.pem, client.key (default BIOTOOL_NCBI_RELAY_TLS)",
                           kind=existing_folder()),
                    Option(("--runtime",), "the sandbox's OCI runtime as registered with the "
                           "engine, e.g. runsc (gVisor); egress keeps the default (default "
                           "BIOTOOL_RUNTIME, else the engine's default)", metavar="NAME"),
                    Option(("--blast",), "declare that the run will search NCBI BLAST: counted "
                           "against the searching runs this host's NCBI schedule sustains "
                           "(refused past it) and served before runs that did not declare",
                           flag=True))),
        Command("exec", exec_, tail=True, short_help="run a command as the agent in a run's "
                "sandbox", help="Run CMD as the agent (uid 1000) in /work; prints exit_code, "
                "stdout, stderr, duration_s and timed_out.",
                arguments=(run, Argument("cmd", "-- then the command and its arguments",
                                         many=True)),
                options=(Option(("--timeout",), "kill the command after this many seconds "
                                "(exit_code 124; 0, as for timeout(1), is no limit)",
                                kind=SECONDS),
                         Option(("--workdir",), "working directory in the sandbox",
                                default="/work"),
                         Option(("--env",), "an environment variable for the command "
                                "(repeatable)", multiple=True, default=(), metavar="KEY=VALUE"))),
        Command("cp", cp, short_help="copy a file or directory into or out of a run's sandbox",
                help="Exactly one side is RUN:/absolute/path. Into an existing directory (or a "
                "path ending in /) the name is kept.",
                arguments=(Argument("src", required=True), Argument("dest", required=True))),
        Command("audit", audit, short_help="every allowed and denied egress attempt of a run, "
                "from the gate's store and the proxy log; read from the store's volume when the "
                "egress is stopped, dead or restarting; exit 4 when it cannot be read",
                arguments=(run,)),
        Command("down", down, short_help="remove a run's containers, networks and volumes (not "
                "the host-wide NCBI schedule volume)", arguments=(run,),
                options=(Option(("--keep-audit",), "keep the run's egress state volume (its "
                                "audit store) for a later `audit RUN`; a later `down RUN` "
                                "removes it", flag=True),)),
        Command("ps", ps, short_help="list the runs on this engine"),
        Command("k8s-values", k8s_values, short_help="print the values file for Inspect's k8s "
                "sandbox (agent-env chart), rendered from the rules file and compose.yaml's "
                "limits",
                help="Print k8s/values.yaml's content: the sandbox and egress services with "
                "compose.yaml's hardening and limits, and the Cilium policies from the rules "
                "file's allowlist.",
                options=(Option(("--rules",), "the rules file (default: the checkout's "
                                "image/rules.toml)", kind=existing_file()),
                         Option(("--compose-file",), "compose.yaml whose defaults give the "
                                "limits", kind=existing_file()),
                         Option(("--image",), "sandbox image as the cluster pulls it (default "
                                "compose's BIOTOOL_IMAGE default)"),
                         Option(("--egress-image",), "egress image as the cluster pulls it"),
                         Option(("--relay",), "the site's NCBI relay; the egress pod may then "
                                "reach it only (default: none, the egress pod goes to the "
                                "allowlisted hosts itself)", metavar="SERVICE.NAMESPACE[:PORT]"),
                         Option(("--pin",), "write both images as digest references "
                                "(NAME@sha256:...), from the registry digests this engine knows "
                                "for them (a digest reference given is kept either way)",
                                flag=True),
                         Option(("--out",), "write the file here instead of printing it",
                                kind=output_file()))),
        Command("harbor", harbor, short_help="write Harbor tasks (the enforced stack as their "
                "environment, the image as their offline verifier) for one pair of images",
                help="Write each task of harbor/tasks in Harbor's format under OUT: task.toml, "
                "instruction.md, environment/docker-compose.yaml rendered from compose.yaml, "
                "solution/solve.sh, tests/ (the grader's key, test.sh and the verifier's "
                "compose file). Run them with `harbor run -p OUT/TASK -a oracle` (docs/harbor.md).",
                options=(Option(("--out",), "the folder to write the tasks in (made when "
                                "missing)", required=True, kind=output_folder()),
                         Option(("--image",), "sandbox image the tasks run (default "
                                f"{IMAGE.name}, else {IMAGE.default})"),
                         Option(("--egress-image",), "egress image (default "
                                f"{EGRESS_IMAGE.name}, else {EGRESS_IMAGE.default})"),
                         Option(("--task",), "only this task (repeatable; default all)",
                                multiple=True, default=(), metavar="NAME"),
                         Option(("--compose-file",), "compose.yaml to render from",
                                kind=existing_file()),
                         Option(("--sources",), "task sources (default the checkout's "
                                "harbor/tasks)", kind=existing_folder()),
                         Option(("--version",), "the tasks' version in task.toml",
                                default="1"),
                         Option(("--pin",), "write both images as digest references "
                                "(NAME@sha256:...), as k8s-values --pin does", flag=True),
                         Option(("--network-mode",), "Harbor's network_mode for the tasks: "
                                "public only (allowlist and no-network are refused: the stack "
                                "enforces the rule, docs/harbor.md)", default="public",
                                metavar="MODE"))),
        Command("harbor-check", harbor_check, short_help="check Harbor task folders keep the "
                "rule (network modes public, `main` on the internal network alone, the "
                "sidecar guard, an offline verifier)",
                help="Read each TASK folder written by `biotool-sandbox harbor` (perhaps edited "
                "since) and refuse, exit 2, the first that would weaken the stack's rule.",
                arguments=(Argument("tasks", "task folders", required=True, many=True),)),
        Command("verify-image", verify_image, short_help="check an image's files against "
                "the manifest its build wrote (and another image's files)",
                help="Read IMAGE's layers (docker save) and compare every file with "
                "/etc/biotool/files.tsv, the manifest its build wrote: nothing added, changed or "
                "removed since. --against IMAGE2 lists every file that differs between the two "
                "(a rebuild of the same commit: none). Exit 0 when all agree, 4 when any path "
                "differs (listed), 2 when an image is missing, or has no manifest and nothing else "
                "to compare with (an image built before manifests is compared with --against).",
                arguments=(Argument("image", required=True),),
                options=(Option(("--against",), "a second image (a rebuild) to compare every "
                                "file with", metavar="IMAGE2"),
                         Option(("--manifest",), "a manifest written beside the image at build "
                                "time (out/images/<name>/files.tsv) to check it against too",
                                kind=existing_file()),
                         Option(("--limit",), "list at most this many differing paths per "
                                "comparison (the counts are always whole)", kind=count(0),
                                default=200))),
        Command("verify-sif", verify_sif, short_help="check a SIF's files against the manifest "
                "of the image it was built from",
                help="Unpack SIF's root filesystem on the host (unsquashfs; nothing in it is run) "
                "and compare every file with /etc/biotool/files.tsv, the manifest the image's "
                "build wrote, which must be the image's own: the one --manifest names, else the "
                "one SIF.json records (make sif writes it). What Apptainer adds to every SIF "
                "(/.singularity.d and its links), and the owners a non-root build gives to root, "
                "are listed apart. Exit 0 when all agree, 4 when "
                "any path differs (listed) or the manifest is not the image's, 2 when SIF is no "
                "SIF or holds no manifest.",
                arguments=(Argument("sif", required=True),),
                options=(Option(("--manifest",), "the image's manifest, written beside it at "
                                "build time (out/images/<name>/files.tsv)", kind=existing_file()),
                         Option(("--limit",), "list at most this many differing paths (the "
                                "count is always whole)", kind=count(0), default=200))),
        Command("demo", demo, short_help="up, a short agent session with every landed tool, a "
                "blocked egress attempt, audit, down",
                options=(Option(("--image",)), Option(("--egress-image",)),
                         Option(("--compose-file",), kind=existing_file()),
                         Option(("--keep",), "leave the run up afterwards", flag=True))),
    ]


def main(argv: list[str] | None = None) -> None:
    program.main(PROG, commands(), help=__doc__, epilog=EPILOG, argv=argv)


if __name__ == "__main__":
    main()
