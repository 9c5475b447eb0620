"""Throw-away TLS material for the tests, made with the openssl CLI as an operator would make
it (docs/relay.md): P-256 keys, a CA that signs certificates only, leaf certificates that name
their host and their use. Every file is left readable by anyone (mode 0644), since containers
read them as other users (the egress image's proxy user is uid 13).

server_ca(dest, name) writes a CA and a server certificate for `name`; relay_site(dest,
relay_name, gates) writes a site CA, the relay's directory (its --tls) and one client
directory per gate (a gate's BIOTOOL_NCBI_RELAY_TLS).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]


def _ssl(cwd: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=cwd, timeout=60)


def _readable(d: Path) -> None:
    for f in d.iterdir():
        f.chmod(0o644)


def make_ca(dest: Path, cn: str) -> Path:
    """dest/ca.pem and dest/ca.key: a CA named `cn`."""
    dest.mkdir(parents=True, exist_ok=True)
    _ssl(dest, "req", "-x509", *EC, "-days", "2", "-subj", f"/CN={cn}",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
         "-keyout", "ca.key", "-out", "ca.pem")
    return dest


def issue(ca: Path, dest: Path, cn: str, ext: str, cert: str, key: str) -> None:
    """dest/cert and dest/key: a certificate named `cn` with extensions `ext`, signed by `ca`."""
    dest.mkdir(parents=True, exist_ok=True)
    _ssl(dest, "req", *EC, "-subj", f"/CN={cn}", "-keyout", key, "-out", "req.csr")
    (dest / "ext.cnf").write_text(ext)
    _ssl(dest, "x509", "-req", "-in", "req.csr", "-CA", str(ca / "ca.pem"), "-CAkey",
         str(ca / "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", cert)
    for f in ("req.csr", "ext.cnf"):
        (dest / f).unlink()


def server_ca(dest: Path, name: str, ca_name: str = "biotool test CA") -> dict[str, str]:
    """A CA and a server certificate for `name`: {"ca", "cert", "key"}, the files' paths."""
    make_ca(dest, ca_name)
    issue(dest, dest, name, f"subjectAltName=DNS:{name}\nextendedKeyUsage=serverAuth\n",
          "server.pem", "server.key")
    _readable(dest)
    return {"ca": str(dest / "ca.pem"), "cert": str(dest / "server.pem"),
            "key": str(dest / "server.key")}


def relay_site(dest: Path, relay_name: str, gates: tuple[str, ...] = ("gate-a",),
               ca_name: str = "biotool test site CA") -> dict[str, Path]:
    """dest/relay/{site-ca.pem,server.pem,server.key} and dest/<gate>/{site-ca.pem,client.pem,
    client.key} for each gate, signed by one site CA; the directories by name."""
    ca = make_ca(dest / "ca", ca_name)
    out = {}
    for name, files, ext in [("relay", ("server.pem", "server.key"),
                              f"subjectAltName=DNS:{relay_name}\nextendedKeyUsage=serverAuth\n"),
                             *[(g, ("client.pem", "client.key"), "extendedKeyUsage=clientAuth\n")
                               for g in gates]]:
        d = dest / name
        issue(ca, d, name, ext, *files)
        shutil.copyfile(ca / "ca.pem", d / "site-ca.pem")
        _readable(d)
        out[name] = d
    return out
