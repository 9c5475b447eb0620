"""Helpers for image tests that need the enforced compose stack: runs, probes, an outside server.

Imported by the image tests that bring up runs (test_egress.py, test_launcher.py,
test_taxonomy_remote.py, test_harbor_blast_task.py, test_isolation.py, test_relay.py; fixtures
are defined in those modules from these plain functions; tests/image/conftest.py's `images`
fixture makes sure the images exist). Every run is brought up and torn down through the real launcher.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from biotool_testing import polling
from biotool_testing.images import EGRESS_IMAGE, SANDBOX_IMAGE, SESSION, TEST_LABEL
from biotool_testing.paths import REPO

PROBE = (Path(__file__).parent / "probe.py").read_text(encoding="utf-8")
ALLOWED_HOST = "blast.ncbi.nlm.nih.gov"


# Every run this process brought up: a test that fails before its `down` must not leave a run
# holding its memory limits, which the launcher counts against the next `up` (down_leftovers).
BROUGHT_UP: list[str] = []


def launcher(*args: str, check: bool = True, timeout: float = 600, env: dict | None = None) -> dict:
    """Run `biotool-sandbox ARGS` as a harness would (a subprocess) and parse its JSON;
    `timeout` only stops a launcher that hangs (an `up` on a slow host takes minutes)."""
    env = {**os.environ, "BIOTOOL_IMAGE": SANDBOX_IMAGE, "BIOTOOL_EGRESS_IMAGE": EGRESS_IMAGE,
           **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "biotool_sandbox", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=REPO)
    if check and proc.returncode != 0:
        raise AssertionError(f"biotool-sandbox {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    out = json.loads(proc.stdout) if proc.stdout.strip() else {}
    out["_code"], out["_stderr"] = proc.returncode, proc.stderr
    if args and args[0] == "up" and isinstance(out.get("run"), str):
        BROUGHT_UP.append(out["run"])
    return out


def down_leftovers() -> list[str]:
    """Take down every run brought up here that still has a container; the runs taken down."""
    import docker

    client, gone = docker.from_env(), []
    while BROUGHT_UP:
        run = BROUGHT_UP.pop()
        if client.containers.list(ignore_removed=True, all=True, filters={"label": f"com.docker.compose.project={run}"}):
            launcher("down", run, check=False)
            gone.append(run)
    return gone


PUTS = r'''
import os, socket, ssl, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
ctx = ssl.create_default_context(cafile=os.environ["REQUESTS_CA_BUNDLE"])
head = b"CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY="
body = BODY
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
    sock = socket.create_connection((proxy.hostname, proxy.port), timeout=120)
    sock.sendall(b"CONNECT HOST:443 HTTP/1.1\r\nHost: HOST:443\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        got += sock.recv(4096)
    tls = ctx.wrap_socket(sock, server_hostname="HOST")
    tls.sendall(b"POST /blast/Blast.cgi HTTP/1.1\r\nHost: HOST\r\nConnection: close\r\n"
                b"Content-Type: application/x-www-form-urlencoded\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body) + body)
    reply = b""
    while chunk := tls.recv(65536):
        reply += chunk
    print(reply.split(b"\r\n", 1)[0].decode(), flush=True)
'''


def put_script(body: str) -> str:
    """A script for the sandbox (`python3 -c SCRIPT [N]`): N raw BLAST Puts (default 1) through
    the proxy, each form `body` (a Python expression over `head`, the form up to QUERY=),
    printing each reply's status line."""
    return PUTS.replace("BODY", body).replace("HOST", ALLOWED_HOST)


def container(name: str):
    import docker

    return docker.from_env().containers.get(name)


def probe(run: dict, kind: str, *args: str, service: str = "sandbox") -> dict:
    """Run one probe from tests/biotool_testing/probe.py inside a container of the run."""
    c = container(run["containers"][service])
    res = c.exec_run(["python3", "-c", PROBE, kind, *args], demux=True)
    out, err = res.output
    if res.exit_code != 0:
        raise AssertionError(f"probe {kind} {args} crashed in {service}: {(err or b'').decode()}")
    return json.loads(out)


def audit(run: dict) -> list[dict]:
    return launcher("audit", run["run"])["records"]


def wait_for_record(run: dict, pred, limit_s: float = polling.LIMIT_S) -> dict:
    """The first audit record matching pred, polling (Squid logs when a request ends, and a
    flood's counts reach the store every few seconds)."""
    records = polling.until("an audit record that matches", lambda: audit(run),
                            lambda recs: any(pred(r) for r in recs), limit_s=limit_s)
    return next(r for r in records if pred(r))


def audit_when(run: dict, done, what: str, limit_s: float = polling.LIMIT_S) -> dict:
    """`biotool-sandbox audit RUN` (the whole answer) once done(it) holds: the gate writes a
    flood's counts every few seconds, and a record when its request ends, not when the
    client has its answer."""
    return polling.until(what, lambda: launcher("audit", run["run"]), done, limit_s=limit_s)


# The outside server: HTTPS on 443 (answering as the allowed host), raw TCP listeners on 80
# and 8443, and a UDP echo on 53. Every contact is printed, so a test can prove none came.
SERVER = textwrap.dedent(r'''
    import http.server, socket, socketserver, ssl, sys, threading

    def log(*a):
        print(*a, flush=True)

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            body = b"biotool-test-server: hello through the proxy\n"
            log("HTTPS", self.client_address[0], self.headers.get("Host"), self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def do_POST(self):
            n = len(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            body = (b"biotool-test-server: got %d bytes\n<!--QBlastInfoBegin\n    RID = TESTRID%d\n"
                    b"    RTOE = 1\nQBlastInfoEnd\n-->\n" % (n, n))
            log("HTTPS", self.client_address[0], self.headers.get("Host"), "POST", self.path, n)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass

    class TLSServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        def get_request(self):
            sock, addr = super().get_request()
            log("TCP 443", addr[0])
            return sock, addr

    def tcp(port):
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port)); s.listen()
        while True:
            c, a = s.accept(); log(f"TCP {port}", a[0]); c.close()

    def udp():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 53))
        while True:
            d, a = s.recvfrom(2048); log("UDP 53", a[0]); s.sendto(d, a)

    for target, args in ((tcp, (80,)), (tcp, (8443,)), (udp, ())):
        threading.Thread(target=target, args=args, daemon=True).start()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain("/certs/server.pem", "/certs/server.key")
    srv = TLSServer(("0.0.0.0", 443), H)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    log("READY")
    srv.serve_forever()
''')


def start_outside_server(run: dict, certs: dict, name: str = ALLOWED_HOST, net: str | None = None):
    """A server on the run's outside network (or `net`) that answers as `name` (an alias)."""
    import docker

    dc = docker.from_env()
    net = net or f"{run['run']}_outside"
    cert_dir = str(Path(certs["cert"]).parent)
    host_config = dc.api.create_host_config(binds={cert_dir: {"bind": "/certs", "mode": "ro"}})
    netcfg = dc.api.create_networking_config({net: dc.api.create_endpoint_config(aliases=[name])})
    created = dc.api.create_container(
        SANDBOX_IMAGE, command=["python3", "-c", SERVER], user="0",
        name=f"{run['run']}-{'outside' if net.endswith('_outside') else 'elsewhere'}",
        host_config=host_config, networking_config=netcfg,
        labels={"org.biotool.test": "outside-server"}, entrypoint=[])
    c = dc.containers.get(created["Id"])
    c.start()
    polling.until("the outside server's READY", c.logs, lambda logs: b"READY" in logs)
    c.reload()
    ip = c.attrs["NetworkSettings"]["Networks"][net]["IPAddress"]
    return c, ip


def server_log(server) -> list[str]:
    return server.logs().decode().splitlines()


def outside_gateway(run: dict) -> str:
    import docker

    net = docker.from_env().networks.get(f"{run['run']}_outside")
    return net.attrs["IPAM"]["Config"][0]["Gateway"]


def start_mock_ncbi(runs: list[dict], certs: dict, name: str, *args: str,
                    nets: list[str] | None = None):
    """The mock NCBI (tests/biotool_testing/mock_ncbi.py, TLS as blast.ncbi.nlm.nih.gov) on every run's
    outside network (or only on `nets`), so each run's egress reaches the same server as NCBI
    itself."""
    import docker

    dc = docker.from_env()
    nets = nets or [f"{r['run']}_outside" for r in runs]
    host_config = dc.api.create_host_config(binds={
        str(Path(certs["cert"]).parent): {"bind": "/certs", "mode": "ro"},
        str(REPO): {"bind": "/repo", "mode": "ro"}})
    netcfg = dc.api.create_networking_config({nets[0]: dc.api.create_endpoint_config(aliases=[ALLOWED_HOST])})
    created = dc.api.create_container(
        SANDBOX_IMAGE, user="0", entrypoint=[], name=name,
        command=["python3", "/repo/tests/biotool_testing/mock_ncbi.py", "--port", "443", *args,
                 "--tls-cert", "/certs/server.pem", "--tls-key", "/certs/server.key"],
        host_config=host_config, networking_config=netcfg, labels={"org.biotool.test": "mock-ncbi"})
    mock = dc.containers.get(created["Id"])
    for net in nets[1:]:
        dc.networks.get(net).connect(mock, aliases=[ALLOWED_HOST])
    mock.start()
    code = ("import ssl, urllib.request; ctx = ssl._create_unverified_context();"
            "urllib.request.urlopen('https://127.0.0.1/_mock/requests', context=ctx).read()")
    polling.until("the mock NCBI to answer", lambda: mock.exec_run(["python3", "-c", code]),
                  lambda ran: ran.exit_code == 0)
    return mock


def python_in_image(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`python ARGS` in the sandbox image as a Harbor task's draw and verifier services run it:
    no network, root, no capability, `folder` at /g."""
    return subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--user", "0", "--cap-drop", "ALL",
         "-e", "HOME=/tmp", "-v", f"{folder}:/g", "--label", f"{TEST_LABEL}={SESSION}",
         "--entrypoint", "python", SANDBOX_IMAGE, *args], capture_output=True, text=True,
        timeout=600)


def mock_requests(mock) -> dict:
    """The mock's own record of every request and every breach of NCBI's rules it saw."""
    code = ("import json, ssl, urllib.request; ctx = ssl._create_unverified_context();"
            "print(urllib.request.urlopen('https://127.0.0.1/_mock/requests', context=ctx).read().decode())")
    res = mock.exec_run(["python3", "-c", code])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def run_with_mock_ncbi(ca_dir: Path, *mock_args: str):
    """A run (`up --extra-ca`) whose egress reaches the mock NCBI under NCBI's name, over TLS
    with a test CA the gate trusts upstream: yields the run (its mock as run["mock"]), then
    removes both. A generator for a module fixture to `yield from`."""
    from biotool_testing import certificates

    certs = certificates.server_ca(ca_dir, ALLOWED_HOST)
    up = launcher("up", "--extra-ca", str(certs["ca"]))
    try:
        up["mock"] = start_mock_ncbi([up], certs, f"{up['run']}-ncbi", *mock_args)
        yield up
    finally:
        if up.get("mock"):
            up["mock"].remove(force=True)
        launcher("down", up["run"])
