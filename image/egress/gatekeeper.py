"""The NCBI gate's command line: every request to an allowlisted host, seen, checked, paced
and logged, by one process per run.

The gate is in parts, one job each, all beside this file in the egress image:
  tunnel.py       the CONNECTs Squid relays here, vetted before TLS, and the tunnel server
  clienthello.py  the TLS ClientHello's SNI, read before any handshake
  gate.py         one run's gate and the requests inside its tunnels: decide, pace, relay
  blastrequest.py the BLAST request policy (one canonical form of each request)
  blastreply.py   the reply filter (each answer rebuilt from checked values, reports cut)
  rids.py         the run's RIDs and NCBI's one-poll-per-RID-per-minute rule
  schedule.py     NCBI's interval held host-wide, fair between runs
  upstream.py     the HTTPS client to NCBI or to the site's relay (relay.py)
  serving.py      the TLS server pieces the gate and the relay share (deadlines, budgets)
  audit.py        the `BIOTOOL_GATE {json}` records; auditstore.py: the run's bounded store
  squidlog.py     Squid's own records (its denials), received on loopback into that store
and, copied from biotool by the Dockerfile, biotool/rules.py (the allowlist),
biotool/ncbirule.py (NCBI's interval rule) and biotool/lockedstate.py (the schedule's file).
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import signal
import ssl
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # its modules beside it (also in the repository)
import audit  # noqa: E402
import auditstore  # noqa: E402
import gate as gate_mod  # noqa: E402
import schedule as schedule_mod  # noqa: E402
import settings  # noqa: E402
import squidlog  # noqa: E402
import tunnel  # noqa: E402
from biotool import ncbirule  # noqa: E402 - copied beside it in the image
from biotool import rules as rules_mod  # noqa: E402 - copied beside it in the image
from render import GATE_PORT, SQUID_LOG_PORT  # noqa: E402 - squid.conf names the same ports
import auditwire  # noqa: E402


RUN_ID_FILE = "run-id"  # in --run-state: the run's id, the same for every gate of the run
_RUN_ID = re.compile(r"[0-9a-f]{16}")


def stable_run_id(run_state: str | None) -> str | None:
    """The run's id, kept in its state dir so that a restarted gate is the same run to the
    site's relay (which binds each RID to it); None without a state dir (the gate makes one)."""
    if not run_state:
        return None
    path = Path(run_state) / RUN_ID_FILE
    try:
        kept = path.read_text().strip()
        if _RUN_ID.fullmatch(kept):
            return kept
    except FileNotFoundError:
        pass
    run = secrets.token_hex(8)
    tmp = path.with_name(RUN_ID_FILE + ".tmp")  # written whole, then renamed: never half an id
    tmp.write_text(run + "\n")
    os.replace(tmp, path)
    return run


def keep_place(gate, hold_s: float) -> None:
    """Renew the run's place as a declared BLAST run for as long as the gate runs."""
    while True:
        time.sleep(schedule_mod.RENEW_S)
        try:
            gate.schedule.declare(gate.run, hold_s)
        except (schedule_mod.Full, schedule_mod.lockedstate.LockTimeout, OSError):
            pass  # lost for now (a stalled gate's place went to another run): asked again


def release_place(state_dir: str, run_state: str) -> int:
    """Free the run's place as a declared BLAST run (the launcher's `down`, before it kills the
    egress: a killed gate cannot free it, and the place would hold for schedule.LEASE_S)."""
    try:
        run = (Path(run_state) / RUN_ID_FILE).read_text().strip()
        if _RUN_ID.fullmatch(run):
            schedule_mod.Schedule(Path(state_dir)).release(run)
    except (OSError, schedule_mod.lockedstate.LockTimeout) as exc:
        print(f"egress gate: the run's BLAST place was not freed ({exc}); it frees after "
              f"{schedule_mod.LEASE_S:.0f} s", file=sys.stderr)
        return 4
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="/etc/biotool/rules.toml")
    ap.add_argument("--listen", default=f"127.0.0.1:{GATE_PORT}")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--extra-ca", help="an extra CA the gate trusts upstream (tests only)")
    ap.add_argument("--ready-file")
    ap.add_argument("--audit", help="this run's bounded audit store (auditstore.py)")
    ap.add_argument("--squid-log", default=f"127.0.0.1:{SQUID_LOG_PORT}",
                    help="with --audit: where Squid's records come in to the store (squidlog.py)")
    ap.add_argument("--run-state", help="this run's own state dir (its RIDs), kept across restarts")
    ap.add_argument("--relay", default=settings.NCBI_RELAY.raw(),
                    help=f"https://HOST:PORT of the site's NCBI relay (default "
                         f"{settings.NCBI_RELAY.name})")
    ap.add_argument("--relay-tls", default=settings.NCBI_RELAY_TLS.raw(),
                    help="directory with site-ca.pem, client.pem, client.key "
                         f"(default {settings.NCBI_RELAY_TLS.name})")
    ap.add_argument("--hold", default=settings.HOLD.raw(),
                    help=f"seconds a request waits for its turn at NCBI's slot before a 429 "
                         f"(default {settings.HOLD.name}, else {ncbirule.DEFAULT_HOLD_S:.0f})")
    ap.add_argument("--blast", action="store_true", default=settings.BLAST.get(),
                    help=f"this run declares BLAST: counted at its start against what the host's "
                         f"NCBI schedule sustains, refused past it (default {settings.BLAST.name})")
    ap.add_argument("--release", action="store_true",
                    help="free the run's place as a declared BLAST run (--state-dir, "
                         "--run-state) and exit")
    args = ap.parse_args(argv)
    if args.release:
        return release_place(args.state_dir, args.run_state or "")
    if not (args.cert and args.key):
        ap.error("--cert and --key are required")
    try:
        hold_s = ncbirule.hold_from(args.hold, settings.HOLD.name)
    except ValueError as exc:
        print(f"egress gate: {exc}", file=sys.stderr)
        return 2
    try:
        allow = rules_mod.load(args.rules).egress_allow
    except rules_mod.RulesError as exc:
        print(f"egress gate: {exc}", file=sys.stderr)
        return 2
    extra = args.extra_ca if args.extra_ca and os.path.isfile(args.extra_ca) else None
    try:
        probe = Path(args.state_dir) / ".writable"
        probe.write_text("ok\n")
        probe.unlink()
    except OSError as exc:
        print(f"egress gate: state dir {args.state_dir} is not writable ({exc})", file=sys.stderr)
        return 2
    try:
        run = stable_run_id(args.run_state)
    except OSError as exc:
        print(f"egress gate: cannot keep the run's id in {args.run_state} ({exc})",
              file=sys.stderr)
        return 2
    store = auditstore.Store(args.audit, holds=("gate", "proxy")) if args.audit else None
    records = audit.Records(audit.GATE, store)
    try:
        gate = gate_mod.Gate(allow, args.cert, args.key, args.state_dir, extra,
                             run=run, run_state=args.run_state, relay=args.relay,
                             relay_tls=args.relay_tls, records=records, hold_s=hold_s)
    except (OSError, ValueError, ssl.SSLError) as exc:  # a relay set but unusable: no egress
        print(f"egress gate: the NCBI relay is not usable ({exc})", file=sys.stderr)
        return 2
    if records.store is not None and records.store.reopened:  # a restart: the audit says so
        gate.log({"event": auditwire.GATE_RESTART, "decision": "allowed",
                  "rids_kept": len(gate.rids.known),
                  "reason": "the gate started again in this run; its RIDs, CA and audit were kept"})
    # With a relay, the site's relay is the queue (docs/relay.md): the host's is never used.
    declared = args.blast and gate.relay is None
    if declared:
        try:
            placed = gate.schedule.declare(gate.run, hold_s)
        except schedule_mod.Full as exc:
            print(f"{auditwire.GATE_REFUSED}{exc}", file=sys.stderr)
            return 2
        except (schedule_mod.lockedstate.LockTimeout, OSError) as exc:
            print(f"{auditwire.GATE_REFUSED}the host's NCBI schedule cannot be read to count "
                  f"this run's BLAST ({exc})", file=sys.stderr)
            return 2
        threading.Thread(target=keep_place, args=(gate, hold_s), name="blast-place",
                         daemon=True).start()
    host, _, port = args.listen.rpartition(":")
    server = tunnel.GateServer((host, int(port)), gate)
    if store is not None:
        log_host, _, log_port = args.squid_log.rpartition(":")
        try:  # bound before the ready file: Squid starts only after it
            squidlog.start((log_host, int(log_port)), store)
        except OSError as exc:
            print(f"egress gate: cannot listen for Squid's records on {args.squid_log} ({exc})",
                  file=sys.stderr)
            return 2
        threading.Thread(target=auditstore.flush_every, args=(store, threading.Event()),
                         name="store-flush", daemon=True).start()

    def stop(signum, frame):
        # The container stopping: what a flood's counters hold is kept, and a declared run's
        # place is free at once for the next run.
        if store is not None:
            store.flush()
        if declared:
            try:
                gate.schedule.release(gate.run)
            except (schedule_mod.lockedstate.LockTimeout, OSError):
                pass  # it frees after schedule.LEASE_S
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    if args.ready_file:
        Path(args.ready_file).write_text("gate up\n")
    via = f", through the site's NCBI relay {args.relay}" if gate.relay else \
        f", holding a request at most {hold_s:g} s for its NCBI slot"
    if declared:
        via += f", a declared BLAST run ({placed} on this host)"
    print(f"egress gate: listening on {args.listen} for {sorted(gate.allow)}{via}",
          file=sys.stderr, flush=True)
    server.serve_forever(poll_interval=0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
