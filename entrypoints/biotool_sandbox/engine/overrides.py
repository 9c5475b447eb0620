"""The launcher's compose overrides of one run, each checked before anything of the run exists:
the egress's extra CA (tests: a mock NCBI), the site's NCBI relay, and the site overlay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .. import settings
from ..errors import LauncherError

EXTRA_CA_IN_EGRESS = "/etc/biotool/extra-ca.pem"
RELAY_TLS_IN_EGRESS = "/etc/biotool/relay"  # the gate's client certificate for the site relay
RELAY_TLS_FILES = ("site-ca.pem", "client.pem", "client.key")  # image/egress/upstream.py CLIENT_FILES


def write_override(path: Path, service: str, binds: dict[Path, str] | None = None,
                   environment: dict[str, str] | None = None) -> Path:
    """The one writer of the launcher's compose overrides: read-only long-form binds and
    environment for one service, written as JSON (which YAML reads), so no host path or value
    (a colon, a quote, a newline) can break the file."""
    spec: dict = {}
    if binds:
        spec["volumes"] = [{"type": "bind", "source": str(source), "target": target,
                            "read_only": True} for source, target in binds.items()]
    if environment:
        spec["environment"] = dict(environment)
    path.write_text(json.dumps({"services": {service: spec}}, indent=2) + "\n", encoding="utf-8")
    return path


def extra_ca_override(run_dir: Path, extra_ca: Path) -> Path:
    """A compose override giving egress a CA it trusts upstream (tests: a mock NCBI)."""
    ca = run_dir / "extra-ca.pem"
    shutil.copyfile(extra_ca, ca)
    ca.chmod(0o644)
    return write_override(run_dir / "override.yaml", "egress", {ca: EXTRA_CA_IN_EGRESS},
                           {settings.EGRESS_EXTRA_CA.name: EXTRA_CA_IN_EGRESS})


RELAY_ENV, RELAY_TLS_ENV = settings.NCBI_RELAY.name, settings.NCBI_RELAY_TLS.name


def check_extra_ca(path: str) -> None:
    """--extra-ca is a readable regular file holding a PEM certificate (an empty or foreign
    file would only fail in the egress, after the run's volumes and networks exist)."""
    from commandline.kinds import path_problem

    why = path_problem(path, "file")
    if why:
        raise LauncherError(f"--extra-ca {why}")
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except OSError as exc:
        raise LauncherError(f"--extra-ca {path}: cannot read it ({exc.strerror})") from None
    if b"-----BEGIN CERTIFICATE-----" not in head:
        raise LauncherError(f"--extra-ca {path}: no PEM certificate in it")


def relay_settings(relay: str | None, relay_tls: str | None) -> tuple[str | None, str | None]:
    """The site relay to use: as given, else BIOTOOL_NCBI_RELAY(_TLS), so one setting on a host
    covers every way a run starts (the CLI, Inspect's provider, the demo)."""
    return relay or settings.NCBI_RELAY.raw(), relay_tls or settings.NCBI_RELAY_TLS.raw()


def relay_sources(relay: str | None, relay_tls: str | None) -> tuple[str, str]:
    """What the refusals name for the relay's URL and certificates: the options when given,
    else the variables they came from."""
    return ("--relay" if relay else RELAY_ENV, "--relay-tls" if relay_tls else RELAY_TLS_ENV)


def check_relay(url: str, tls_dir: str | None,
                names: tuple[str, str] = ("--relay", "--relay-tls")) -> None:
    """--relay is https://HOST[:PORT] and --relay-tls holds the gate's certificates (checked
    before anything of the run exists); `names`: the option or variable each came from."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port out of range raises ValueError here
        ok = parts.scheme == "https" and bool(parts.hostname) and parts.path in ("", "/") \
            and not parts.query and not parts.username
    except ValueError:
        ok = False
    if not ok:
        raise LauncherError(f"{names[0]} {url!r} is not https://HOST[:PORT]")
    missing = [f for f in RELAY_TLS_FILES if not tls_dir or not (Path(tls_dir) / f).is_file()]
    if missing:
        held = f"{names[1]} {tls_dir}" if tls_dir else f"--relay-tls DIR (or {RELAY_TLS_ENV})"
        raise LauncherError(f"{names[0]} needs {held} holding {', '.join(RELAY_TLS_FILES)}"
                            f" (missing: {', '.join(missing)})")


def relay_override(run_dir: Path, url: str, tls_dir: str | None,
                   names: tuple[str, str] = ("--relay", "--relay-tls")) -> Path:
    """A compose override sending the run's NCBI traffic through the site's relay: the URL and
    a copy of the gate's client certificate, readable by the egress's proxy user only through
    the run's own 0700 directory."""
    check_relay(url, tls_dir, names)
    holder = run_dir / "relay"
    holder.mkdir(mode=0o700, exist_ok=True)
    tls = holder / "tls"
    tls.mkdir(mode=0o755, exist_ok=True)
    for name in RELAY_TLS_FILES:
        shutil.copyfile(Path(tls_dir) / name, tls / name)
        (tls / name).chmod(0o644)  # the egress runs as uid 13; the 0700 holder keeps others out
    return write_override(run_dir / "relay.yaml", "egress", {tls: RELAY_TLS_IN_EGRESS},
                           {RELAY_ENV: url, RELAY_TLS_ENV: RELAY_TLS_IN_EGRESS})


SITE_IN_SANDBOX = "/opt/biotool-site"  # the image's BIOTOOL_SITE_DIR


def check_site(site: str) -> Path:
    """A site directory staged by `python -m biotool.staging --dest DIR` (has staged.json)."""
    path = Path(site).resolve()
    if not (path / "staged.json").is_file():
        raise LauncherError(f"--site {site}: no staged.json there; stage it first with "
                            f"`python -m biotool.staging --dest {site} --sets production`")
    return path


def site_override(run_dir: Path, service: str, site: Path) -> Path:
    """A compose override mounting the site overlay read-only where the image looks for it."""
    return write_override(run_dir / "site.yaml", service, {site: SITE_IN_SANDBOX})
