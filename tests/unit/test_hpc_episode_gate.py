"""The pieces of an Apptainer episode's own gate that run without Apptainer (docs/hpc.md):
hpc/socketpipe.py, the byte pipe between loopback ports and UNIX sockets, and the audit read
from the gate's state folder (python3 -m biotool_sandbox.audit). The whole path runs in
tests/apptainer/test_remote_blast_under_apptainer.py."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import threading

import pytest

from biotool_testing.paths import REPO

spec = importlib.util.spec_from_file_location("socketpipe", REPO / "hpc" / "socketpipe.py")
socketpipe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(socketpipe)


def test_endpoints_are_unix_paths_or_tcp_host_ports_and_nothing_else():
    assert socketpipe.endpoint("unix:/run/x.sock") == (socket.AF_UNIX, "/run/x.sock")
    assert socketpipe.endpoint("tcp:127.0.0.1:3128") == (socket.AF_INET, ("127.0.0.1", 3128))
    for bad in ("tcp:127.0.0.1", "tcp:host:99999", "udp:h:1", "unix:", "/run/x.sock"):
        with pytest.raises(ValueError, match="is not unix:PATH or tcp:HOST:PORT"):
            socketpipe.endpoint(bad)


def test_a_bad_endpoint_is_one_line_and_exit_2():
    ran = subprocess.run([sys.executable, str(REPO / "hpc" / "socketpipe.py"), "--listen",
                          "tcp:nowhere", "--connect", "unix:/x"], capture_output=True, text=True)
    assert ran.returncode == 2
    assert ran.stderr.splitlines() == ["socketpipe: endpoint 'tcp:nowhere' is not unix:PATH or tcp:HOST:PORT"]


def test_bytes_go_both_ways_from_a_port_through_a_socket_and_from_the_source_given(tmp_path):
    """The episode's pipe (a port to a socket) and the gate's (a socket to a port, from
    127.0.0.2): the target sees the source address, the bytes come back, a half-close passes."""
    target = socket.create_server(("127.0.0.1", 0))
    peers = []

    def echo():
        conn, peer = target.accept()
        peers.append(peer[0])
        with conn:
            while data := conn.recv(1024):
                conn.sendall(data.upper())

    threading.Thread(target=echo, daemon=True).start()
    sock = str(tmp_path / "proxy.sock")
    inner = socketpipe.listen(socket.AF_UNIX, sock)
    assert (tmp_path / "proxy.sock").stat().st_mode & 0o077 == 0  # the owner's alone
    threading.Thread(target=socketpipe.serve, daemon=True, args=(
        inner, (socket.AF_INET, ("127.0.0.1", target.getsockname()[1])), "127.0.0.2")).start()
    outer = socketpipe.listen(socket.AF_INET, ("127.0.0.1", 0))
    threading.Thread(target=socketpipe.serve, daemon=True,
                     args=(outer, (socket.AF_UNIX, sock), None)).start()
    with socket.create_connection(outer.getsockname(), timeout=10) as client:
        client.sendall(b"connect blast")
        client.shutdown(socket.SHUT_WR)
        got = b""
        while data := client.recv(1024):
            got += data
    assert got == b"CONNECT BLAST" and peers == ["127.0.0.2"]


def test_a_target_that_is_not_there_closes_the_connection(tmp_path):
    server = socketpipe.listen(socket.AF_INET, ("127.0.0.1", 0))
    threading.Thread(target=socketpipe.serve, daemon=True,
                     args=(server, (socket.AF_UNIX, str(tmp_path / "none.sock")), None)).start()
    with socket.create_connection(server.getsockname(), timeout=10) as client:
        assert client.recv(10) == b""


def audit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "biotool_sandbox.audit", *args],
                          capture_output=True, text=True, cwd=REPO / "entrypoints")


def test_the_audit_of_a_gate_s_state_folder(tmp_path):
    record = {"event": "request", "decision": "allowed", "what": "put", "time": 1.0,
              "relay": "ncbi-relay:8443", "host": "blast.ncbi.nlm.nih.gov"}
    (tmp_path / "audit.jsonl").write_text('BIOTOOL_STORE {"holds": ["gate", "proxy"]}\n'
                                          f"BIOTOOL_GATE {json.dumps(record)}\n")
    (tmp_path / "run-id").write_text("0123456789abcdef\n")
    ran = audit(str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["run"] == "0123456789abcdef" and out["offline"] is False
    assert [(r["what"], r["relay"]) for r in out["records"]] == [("put", "ncbi-relay:8443")]


def test_a_gate_without_a_store_is_exit_4_in_one_line(tmp_path):
    ran = audit(str(tmp_path))
    assert ran.returncode == 4 and len(ran.stderr.splitlines()) == 1, ran.stderr
    assert ran.stderr.startswith("audit: the gate's store cannot be read")
    (tmp_path / "audit.jsonl").write_text("")
    ran = audit(str(tmp_path))
    assert ran.returncode == 4 and ran.stderr.strip() == f"audit: the gate's store in {tmp_path} is empty"
