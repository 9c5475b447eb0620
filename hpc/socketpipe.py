#!/usr/bin/env python3
"""A byte pipe from one listening endpoint to one fixed endpoint, for an Apptainer episode's
way to its own egress gate (hpc/run-apptainer.sh with a relay, docs/hpc.md).

    socketpipe.py --listen tcp:127.0.0.1:3128 --connect unix:/run/biotool-hpc/proxy.sock
    socketpipe.py --listen unix:E/agent/proxy.sock --connect tcp:127.0.0.1:3128 --source 127.0.0.2
    socketpipe.py --listen unix:E/relay/relay.sock --connect tcp:relay.example.org:8443

Every connection accepted is joined to a new connection to the one --connect endpoint and the
bytes are copied both ways unread (the TLS inside is end to end); nothing else can be reached
through it. Under `--net --network none` the episode and its gate each have only their own
loopback, so these pipes and the UNIX sockets (files in the job user's 0700 folder) are the
only ways between them and to the relay. Standard library only: it runs on the node and in
both SIFs, bound read-only from the checkout.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
from pathlib import Path

CONNECT_S = 10.0  # a target that does not answer in this long is not coming
MAX_CONNECTIONS = 64  # open pipes at once; the gate itself relays at most 32 tunnels a run
CHUNK = 1 << 16


def endpoint(text: str) -> tuple[int, object]:
    """(family, address) of `unix:PATH` or `tcp:HOST:PORT`; ValueError naming the text."""
    kind, _, rest = text.partition(":")
    if kind == "unix" and rest:
        return socket.AF_UNIX, rest
    host, _, port = rest.rpartition(":")
    if kind == "tcp" and host and port.isdigit() and 0 < int(port) < 65536:
        return socket.AF_INET, (host, int(port))
    raise ValueError(f"endpoint {text!r} is not unix:PATH or tcp:HOST:PORT")


def listen(family: int, address) -> socket.socket:
    """A listening socket; a UNIX socket's file is made owner-only (umask 077) in place of a
    stale one."""
    server = socket.socket(family, socket.SOCK_STREAM)
    if family == socket.AF_UNIX:
        Path(address).unlink(missing_ok=True)
        old = os.umask(0o077)
        try:
            server.bind(address)
        finally:
            os.umask(old)
    else:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(address)
    server.listen(MAX_CONNECTIONS)
    return server


def connect(family: int, address, source: str | None) -> socket.socket:
    """A connection to the target (a TCP name by any of its addresses); from `source` when
    given (a TCP target on loopback: Squid records every client but 127.0.0.1, its warm-up)."""
    if family == socket.AF_INET:
        conn = socket.create_connection(address, CONNECT_S, (source, 0) if source else None)
    else:
        conn = socket.socket(family, socket.SOCK_STREAM)
        try:
            conn.settimeout(CONNECT_S)
            conn.connect(address)
        except OSError:
            conn.close()
            raise
    conn.settimeout(None)
    return conn


def copy(src: socket.socket, dst: socket.socket) -> None:
    """src's bytes to dst until src ends, then dst's write side is shut (a half-close)."""
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def pipe(client: socket.socket, target: tuple[int, object], source: str | None,
         slots: threading.BoundedSemaphore) -> None:
    try:
        try:
            upstream = connect(*target, source)
        except OSError as exc:
            print(f"socketpipe: cannot reach {target[1]} ({exc})", file=sys.stderr, flush=True)
            return
        with upstream:
            back = threading.Thread(target=copy, args=(upstream, client), daemon=True)
            back.start()
            copy(client, upstream)
            back.join()
    finally:
        client.close()
        slots.release()


def serve(server: socket.socket, target: tuple[int, object], source: str | None) -> None:
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    while True:
        client, _ = server.accept()
        if not slots.acquire(blocking=False):  # over the bound: closed at once, never queued
            client.close()
            continue
        threading.Thread(target=pipe, args=(client, target, source, slots), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", required=True, help="unix:PATH or tcp:HOST:PORT")
    ap.add_argument("--connect", required=True, help="unix:PATH or tcp:HOST:PORT")
    ap.add_argument("--source", help="the source address of a TCP connect")
    ap.add_argument("--ready-file", help="created once listening")
    args = ap.parse_args(argv)
    try:
        here, target = endpoint(args.listen), endpoint(args.connect)
        server = listen(*here)
    except (ValueError, OSError) as exc:
        print(f"socketpipe: {exc}", file=sys.stderr)
        return 2
    if args.ready_file:
        Path(args.ready_file).write_text("listening\n")
    try:
        serve(server, target, args.source)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
