"""`biotool-sandbox`: run agent episodes in the enforced stack; every command prints one JSON object.

Exit codes follow biotool's: 0 success, 2 bad input or usage (unknown run, missing file),
4 docker or compose failed. `exec` itself exits 0 when the command ran, whatever its own exit
code (that is in the JSON as exit_code).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from biotool.output import EXIT_FAILED, UsageParser, fail_line

from .errors import LauncherError

PROG = "biotool-sandbox"

EPILOG = """\
examples:
  run=$(biotool-sandbox up | python3 -c 'import json,sys; print(json.load(sys.stdin)["run"])')
  biotool-sandbox exec $run -- biotool doctor
  biotool-sandbox cp reads.fastq $run:/work/
  biotool-sandbox cp $run:/work/out.bam ./out.bam
  biotool-sandbox audit $run
  biotool-sandbox down $run

images: BIOTOOL_IMAGE (default biotool-sandbox:latest), BIOTOOL_EGRESS_IMAGE
(default biotool-egress:latest), BIOTOOL_CUDA_IMAGE for --mode gpu (default
biotool-sandbox:cuda, built by make image-cuda), or --image/--egress-image on up.
"""


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(
        prog="biotool-sandbox", description=__doc__, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = sub.add_parser("up", help="start a fresh enforced stack (a new compose project); prints its run id")
    up.add_argument("--mode", default="default", choices=["default", "gpu", "offline"],
                    help="default: sandbox + egress proxy; gpu: same with the CUDA image and NVIDIA GPUs reserved; "
                         "offline: sandbox with no network at all")
    up.add_argument("--image", help="sandbox image (overrides BIOTOOL_IMAGE)")
    up.add_argument("--egress-image", help="egress proxy image (overrides BIOTOOL_EGRESS_IMAGE)")
    up.add_argument("--extra-ca", metavar="PEM",
                    help="a CA the egress gate trusts upstream for the allowlisted host (tests: a mock NCBI)")
    up.add_argument("--cpus", help="CPU limit of the sandbox (default 1.5, BIOTOOL_CPUS)")
    up.add_argument("--memory", help="memory limit of the sandbox, e.g. 8g (default 8g, BIOTOOL_MEM_LIMIT)")
    up.add_argument("--work-size", help="size cap of /work, a tmpfs, e.g. 4g (default 4g, BIOTOOL_WORK_SIZE)")
    up.add_argument("--compose-file", help="compose.yaml to use (default: BIOTOOL_COMPOSE_FILE, the checkout's)")
    up.add_argument("--site", metavar="DIR",
                    help="a site directory staged with `python -m biotool.staging --dest DIR`, "
                         "mounted read-only at /opt/biotool-site and merged into the inventory")
    up.add_argument("--relay", metavar="URL", default=os.environ.get("BIOTOOL_NCBI_RELAY") or None,
                    help="https://HOST:PORT of the site's NCBI relay: the run's gate sends BLAST "
                         "there, never to NCBI itself (default BIOTOOL_NCBI_RELAY)")
    up.add_argument("--relay-tls", metavar="DIR",
                    default=os.environ.get("BIOTOOL_NCBI_RELAY_TLS") or None,
                    help="the gate's relay certificates: site-ca.pem, client.pem, client.key "
                         "(default BIOTOOL_NCBI_RELAY_TLS)")

    ex = sub.add_parser("exec", help="run a command as the agent in a run's sandbox",
                        description="Run CMD as the agent (uid 1000) in /work; prints exit_code, "
                                    "stdout, stderr, duration_s and timed_out.")
    ex.add_argument("run")
    ex.add_argument("--timeout", type=float, help="kill the command after this many seconds (exit_code 124)")
    ex.add_argument("--workdir", default="/work", help="working directory in the sandbox (default /work)")
    ex.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="an environment variable for the command (repeatable)")
    ex.add_argument("cmd", nargs="*", help="-- then the command and its arguments")

    cp = sub.add_parser("cp", help="copy a file or directory into or out of a run's sandbox",
                        description="Exactly one side is RUN:/absolute/path. Into an existing "
                                    "directory (or a path ending in /) the name is kept.")
    cp.add_argument("src")
    cp.add_argument("dest")

    au = sub.add_parser("audit", help="every allowed and denied egress attempt of a run, from the proxy log")
    au.add_argument("run")

    dn = sub.add_parser("down", help="remove a run's containers, networks and volumes (not the host-wide NCBI schedule volume)")
    dn.add_argument("run")

    sub.add_parser("ps", help="list the runs on this engine")

    kv = sub.add_parser("k8s-values",
                        help="print the values file for Inspect's k8s sandbox (agent-env chart), "
                             "rendered from the rules file and compose.yaml's limits",
                        description="Print k8s/values.yaml's content: the sandbox and egress "
                                    "services with compose.yaml's hardening and limits, and the "
                                    "Cilium policies from the rules file's allowlist.")
    kv.add_argument("--rules", default=None, help="the rules file (default: the checkout's image/rules.toml)")
    kv.add_argument("--compose-file", help="compose.yaml whose defaults give the limits")
    kv.add_argument("--image", help="sandbox image as the cluster pulls it (default compose's BIOTOOL_IMAGE default)")
    kv.add_argument("--egress-image", help="egress image as the cluster pulls it")
    kv.add_argument("--relay", metavar="SERVICE.NAMESPACE[:PORT]",
                    help="the site's NCBI relay; the egress pod may then reach it only "
                         "(default: none, the egress pod goes to the allowlisted hosts itself)")
    kv.add_argument("--out", help="write the file here instead of printing it")

    de = sub.add_parser("demo", help="up, a short agent session with every landed tool, a blocked egress attempt, audit, down")
    de.add_argument("--image")
    de.add_argument("--egress-image")
    de.add_argument("--compose-file")
    de.add_argument("--keep", action="store_true", help="leave the run up afterwards")
    return p


def _env_pairs(pairs: list[str]) -> dict:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise LauncherError(f"--env {pair!r} must be KEY=VALUE")
        env[key] = value
    return env


def _k8s_values(args: argparse.Namespace) -> dict | str:
    from pathlib import Path

    from biotool.rules import REPO_RULES

    from . import k8s, stack

    text = k8s.render(k8s.values(Path(args.rules) if args.rules else REPO_RULES,
                                 stack.compose_file(args.compose_file), image=args.image,
                                 egress_image=args.egress_image, relay=args.relay))
    if not args.out:
        return text
    Path(args.out).write_text(text, encoding="utf-8")
    return {"written": args.out}


def dispatch(args: argparse.Namespace) -> dict | str:
    from . import agent, stack

    if args.command == "up":
        return stack.up(args.mode, image=args.image, egress_image=args.egress_image,
                        extra_ca=args.extra_ca, compose=args.compose_file, site=args.site,
                        limits={"cpus": args.cpus, "memory": args.memory, "work_size": args.work_size},
                        relay=args.relay, relay_tls=args.relay_tls)
    if args.command == "exec":
        stack.check_run_name(args.run)
        return agent.exec_(args.run, args.cmd, workdir=args.workdir, env=_env_pairs(args.env),
                           timeout=args.timeout)
    if args.command == "cp":
        return agent.cp(args.src, args.dest)
    if args.command == "audit":
        stack.check_run_name(args.run)
        return agent.audit(args.run)
    if args.command == "down":
        return stack.down(args.run)
    if args.command == "ps":
        return {"runs": stack.runs()}
    if args.command == "k8s-values":
        return _k8s_values(args)
    if args.command == "demo":
        from .demo import demo
        return demo(image=args.image, egress_image=args.egress_image,
                    compose=args.compose_file, keep=args.keep)
    raise LauncherError(f"unknown command {args.command}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is the command to exec, options included.
    tail: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, tail = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)  # usage errors: argparse prints one line and exits 2
    if tail:
        if args.command != "exec":
            parser.error(f"'--' only separates the command of exec, not of {args.command}")
        args.cmd = [*args.cmd, *tail]
    try:
        result = dispatch(args)
    except LauncherError as exc:
        fail_line(PROG, exc.message, exc.exit_code)
    except KeyboardInterrupt:
        fail_line(PROG, "interrupted", EXIT_FAILED)
    except Exception as exc:  # noqa: BLE001 - docker SDK errors too: one line, exit 4
        if os.environ.get("BIOTOOL_DEBUG"):
            raise
        fail_line(PROG, f"{type(exc).__name__}: {exc}", EXIT_FAILED)
    # k8s-values prints the values file itself (YAML), the one command whose output is not JSON.
    sys.stdout.write(result if isinstance(result, str)
                     else json.dumps(result, indent=None, sort_keys=False) + "\n")
    # The demo is what `make demo` runs: a step that failed must fail the target.
    if args.command == "demo" and not result.get("ok"):
        fail_line(PROG, f"demo failed: steps {result.get('failed_steps')}, forbidden egress "
                        f"denied in audit: {result['forbidden_egress']['denied_in_audit']}",
                  EXIT_FAILED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
