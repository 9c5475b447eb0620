"""Reader of the one rules file (`image/rules.toml`, `/etc/biotool/rules.toml` in the image).

Standard library only: the egress proxy's start-up renders its Squid config with this module
(the Dockerfile copies it into the egress image). The allowlist is validated here and only
here: every consumer (biotool's HTTP client, Squid's config, the gate, the Kubernetes
policies) takes `Rules.egress_allow` as proved plain DNS names and TCP ports, without repeats.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from biotool.settings import RULES

IMAGE_RULES = Path("/etc/biotool/rules.toml")
REPO_RULES = Path(__file__).resolve().parents[2] / "image" / "rules.toml"
# A plain DNS host name: labels of letters, digits and inner hyphens, the last not all digits
# (no name that reads as an address). Anything else (spaces, quotes, wildcards, a leading dot,
# a newline) could change the meaning of a rendered Squid or Kubernetes line.
HOSTNAME = re.compile(r"(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*"
                      r"(?![0-9]+$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


class RulesError(ValueError):
    """The rules file is missing or malformed; the message names the file and field."""


@dataclass(frozen=True)
class Rules:
    path: str
    egress_allow: tuple[tuple[str, int], ...]
    deny_categories: tuple[str, ...] = ()
    deny_patterns: tuple[str, ...] = ()
    allow_tools: tuple[str, ...] = ()

    def egress_allows(self, host: str, port: int = 443) -> bool:
        """True only for an allowlisted (host, port); IP literals are never allowed."""
        host = normalise_host(host)
        if is_ip_literal(host):
            return False
        return (host, int(port)) in self.egress_allow


def normalise_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def is_ip_literal(host: str) -> bool:
    """Whether `host` is an IP address however written: the one test the allowlist, biotool's
    client (net.py) and doctor's probes use."""
    try:
        ipaddress.ip_address(normalise_host(host))
        return True
    except ValueError:
        return False


def rules_path() -> Path:
    return RULES.get() or (IMAGE_RULES if IMAGE_RULES.exists() else REPO_RULES)


def _parse_allow(entries, path: Path) -> tuple[tuple[str, int], ...]:
    out: list[tuple[str, int]] = []
    for entry in entries:
        if not isinstance(entry, str) or ":" not in entry:
            raise RulesError(f"{path}: egress.allow entry {entry!r} must be 'host:port'")
        host, _, port = entry.rpartition(":")
        host = normalise_host(host)
        if is_ip_literal(host):
            raise RulesError(f"{path}: egress.allow entry {entry!r} is an IP literal; name a host")
        if not HOSTNAME.fullmatch(host):
            raise RulesError(f"{path}: egress.allow entry {entry!r} is not a plain DNS host name")
        if not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
            raise RulesError(f"{path}: egress.allow entry {entry!r} has no valid TCP port")
        if (host, int(port)) not in out:
            out.append((host, int(port)))
    return tuple(out)


def parse(text: str, path: Path | str = "<rules>") -> Rules:
    path = Path(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{path}: not valid TOML: {exc}") from None
    egress = raw.get("egress", {})
    tools = raw.get("tools", {})
    for key, value in (("egress.allow", egress.get("allow", [])),
                       ("tools.deny_categories", tools.get("deny_categories", [])),
                       ("tools.deny_patterns", tools.get("deny_patterns", [])),
                       ("tools.allow", tools.get("allow", []))):
        if not isinstance(value, list):
            raise RulesError(f"{path}: {key} must be a list")
    return Rules(
        path=str(path),
        egress_allow=_parse_allow(egress.get("allow", []), path),
        deny_categories=tuple(str(c).lower() for c in tools.get("deny_categories", [])),
        deny_patterns=tuple(str(p).lower() for p in tools.get("deny_patterns", [])),
        allow_tools=tuple(str(t) for t in tools.get("allow", [])),
    )


@lru_cache(maxsize=4)
def _load(path: str) -> Rules:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesError(f"{p}: cannot read the rules file ({exc.strerror})") from None
    return parse(text, p)


def load(path: str | Path | None = None) -> Rules:
    return _load(str(path or rules_path()))
