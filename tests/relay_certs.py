"""Throw-away TLS material for the NCBI relay's tests: a site CA, the relay's certificate and
gates' client certificates, made with the openssl CLI (what an operator would run).

make(dest, relay_name, gates) writes dest/relay/{site-ca.pem,server.pem,server.key} (the
relay's --tls directory) and dest/<gate>/{site-ca.pem,client.pem,client.key} (a gate's
BIOTOOL_NCBI_RELAY_TLS directory) for each gate name.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def _ssl(cwd: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=cwd, timeout=60)


def _signed(ca: Path, out: Path, cn: str, ext: str) -> None:
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    _ssl(out, "req", *ec, "-nodes", "-subj", f"/CN={cn}", "-keyout", "key.pem", "-out", "req.csr")
    (out / "ext.cnf").write_text(ext)
    _ssl(out, "x509", "-req", "-in", "req.csr", "-CA", str(ca / "ca.pem"), "-CAkey",
         str(ca / "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf",
         "-out", "cert.pem")


def make_ca(dest: Path, cn: str) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    _ssl(dest, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-days", "2", "-subj", f"/CN={cn}", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign", "-keyout", "ca.key", "-out", "ca.pem")
    return dest


def make(dest: Path, relay_name: str, gates: tuple[str, ...] = ("gate-a",),
         ca_name: str = "biotool test site CA") -> dict[str, Path]:
    ca = make_ca(dest / "ca", ca_name)
    out = {}
    for name, files, ext in [("relay", ("server.pem", "server.key"),
                              f"subjectAltName=DNS:{relay_name}\nextendedKeyUsage=serverAuth\n"),
                             *[(g, ("client.pem", "client.key"), "extendedKeyUsage=clientAuth\n")
                               for g in gates]]:
        d = dest / name
        d.mkdir(parents=True, exist_ok=True)
        _signed(ca, d, name, ext)
        (d / "cert.pem").rename(d / files[0])
        (d / "key.pem").rename(d / files[1])
        for f in ("req.csr", "ext.cnf"):
            (d / f).unlink()
        shutil.copyfile(ca / "ca.pem", d / "site-ca.pem")
        for f in d.iterdir():
            f.chmod(0o644)  # the egress image's proxy user (uid 13) reads them in a container
        out[name] = d
    return out
