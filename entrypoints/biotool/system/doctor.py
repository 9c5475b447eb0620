"""`biotool doctor`: this environment checked against the rules and the manifests."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

from biotool import family, settings, staging
from biotool import rules as rules_mod
from biotool.cache import cache_root
from biotool.output import ToolFailure
from biotool.staging.item import StagedItem

# Every cache a library may write, pointed somewhere writable so an arbitrary UID with an
# unwritable HOME works (Apptainer runs images that way).
CACHE_VARS = (settings.CACHE.name, "XDG_CACHE_HOME", "MPLCONFIGDIR", "NUMBA_CACHE_DIR", "HF_HOME",
              "CELLTYPIST_FOLDER")


def _check(name: str, ok: bool, detail: str, required: bool = True) -> dict:
    return {"check": name, "ok": bool(ok), "required": required, "detail": detail}


def _writable(path: Path) -> tuple[bool, str]:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-"):
            pass
        return True, f"{path} is writable"
    except OSError as exc:
        return False, f"{path} is not writable ({exc.strerror})"


def check_rules() -> dict:
    try:
        r = rules_mod.load()
    except rules_mod.RulesError as exc:
        return _check("rules", False, str(exc))
    allow = ", ".join(f"{h}:{p}" for h, p in r.egress_allow) or "nothing"
    return _check("rules", True, f"{r.path}: egress allows {allow}; "
                  f"{len(r.deny_categories)} denied tool categories")


def _check_item(key: str, item: StagedItem, verify_sha: bool) -> dict:
    if item.error:
        # A production item the build host could not reach is reported, not a failure.
        return _check(f"staged:{key}", False, item.error, required=False)
    problems = staging.verify(item) if verify_sha else []
    return _check(f"staged:{key}", not problems,
                  "; ".join(problems) or f"{len(item.files)} files, sha256 match")


class StagedChecks:
    """The staged items checked one at a time (`step`), so that their re-hashing, which
    keeps one core busy, runs while the toolbox's tools start on the others."""

    def __init__(self, verify_sha: bool = True):
        self._items = sorted(staging.inventory().items.items())
        self._verify = verify_sha
        self.checks = [] if self._items else [
            _check("staged", False, f"no staged inventory at {staging.home()}/staged.json")]

    def step(self) -> bool:
        """Check the next item; False once every item is checked."""
        if not self._items:
            return False
        key, item = self._items.pop(0)
        self.checks.append(_check_item(key, item, self._verify))
        return bool(self._items)

    def finish(self) -> list[dict]:
        while self.step():
            pass
        return self.checks


def check_staged(verify_sha: bool = True) -> list[dict]:
    return StagedChecks(verify_sha).finish()


def check_caches() -> list[dict]:
    out = []
    ok, detail = _writable(cache_root())
    out.append(_check("cache:biotool", ok, detail))
    for var in CACHE_VARS[1:]:
        value = os.environ.get(var)
        if value:
            ok, detail = _writable(Path(value))
            out.append(_check(f"cache:{var}", ok, f"{var}={detail}"))
    home = os.environ.get("HOME", "")
    home_ok = bool(home) and os.access(home, os.W_OK)
    out.append(_check("home", True, f"HOME={home or '(unset)'} is "
                      f"{'writable' if home_ok else 'not writable; caches are redirected'}",
                      required=False))
    return out


def check_network(timeout: float = 3.0) -> dict:
    """Enforced (only lo, or no way out but the egress proxy), and the proxy answers."""
    from biotool.system import enforcement

    st = enforcement.status()
    if not st["enforced"]:
        return _check("egress", False, f"network not enforced: {st['reason']}; {enforcement.HOW}")
    if st["mode"] == "offline" and not enforcement.proxy_setting():
        return _check("egress", True, "offline mode: only lo, no way out; remote BLAST "
                      "unavailable, local tools and the staged BLAST database work")
    # The client's own parser: doctor never calls usable a proxy the client would refuse.
    from biotool import net
    from biotool.output import ProgramError

    try:
        proxy = net.proxy_from_env()
    except ProgramError as exc:
        return _check("egress", False, f"HTTPS_PROXY is not usable by biotool's client: {exc}")
    if proxy is None:
        return _check("egress", False, "no HTTPS_PROXY, yet the network is not offline")
    try:
        with socket.create_connection((proxy.address, proxy.port), timeout=timeout):
            pass
    except OSError as exc:
        return _check("egress", False, f"no way out, but the egress proxy {proxy} is "
                      f"unreachable ({exc})")
    if st["mode"] == "offline":
        # Only lo, yet a proxy answers on it: an HPC episode's forwarder to its own gate,
        # through a socket the runtime bound in (hpc/run-apptainer.sh with a relay).
        return _check("egress", True, f"enforced: only lo, and the egress proxy {proxy} on it "
                      f"answers (an episode's way to its own gate)")
    if st["mode"] == "cluster-policy":  # the reason names the policy and the probes' results
        return _check("egress", True, f"enforced (cluster mode): {st['reason']}")
    return _check("egress", True, f"enforced: no way out but the egress proxy {proxy}, "
                  f"which is reachable")


def check_runtime() -> dict:
    """Which kernel runs this container, from its own evidence (runtime.py); required only
    where BIOTOOL_REQUIRE_RUNTIME asks for one."""
    from biotool.system import runtime

    st = runtime.status()
    try:
        want = runtime.required()
    except ValueError as exc:
        return _check("runtime", False, str(exc))
    ok = (want is None or st["runtime"] == want) and not st["defect"]
    detail = f"{st['runtime']}: {st['reason']}"
    if st["defect"]:
        detail += f"; but {st['defect']}"
    if want:
        detail += f" (BIOTOOL_REQUIRE_RUNTIME={want})" + ("" if st["runtime"] == want
                                                          else f"; {runtime.HOW}")
    return _check("runtime", ok, detail, required=want is not None or bool(st["defect"]))


def check_gpu() -> dict:
    """Not required (every tool has a CPU path): no GPU, or its driver against torch's CUDA."""
    from biotool.system.gpu import report

    r = report()
    return _check("gpu", r["ok"], r["detail"], required=False)


def check_user() -> dict:
    uid = os.geteuid()
    return _check("non-root", uid != 0, f"running as uid {uid}"
                  + ("" if uid else "; the sandbox must run the agent as a non-root user"))


def check_binaries() -> list[dict]:
    found = {b.name: shutil.which(b.name) for b in family.binaries()}
    return [_check(f"binary:{b}", path is not None, path or f"{b} not on PATH")
            for b, path in found.items()]


def check_toolbox(meanwhile=None) -> dict:
    """Every toolbox command starts (its version command exits as it should); one check, so
    the report stays small, naming each that does not. Required in the image, which promises
    the toolbox; biotool installed elsewhere (a developer's host) only reports it.
    `meanwhile`: other checks done a step at a time while the tools run."""
    from biotool.provenance import build_identity
    from biotool.system import toolbox

    box = toolbox.load()
    broken = toolbox.check_tools(meanwhile=meanwhile)
    n = len(box.tools) + sum(len(t.also) for t in box.tools)
    if not broken:
        return _check("toolbox", True, f"all {n} commands start ({staging.home() / toolbox.DOC})")
    if not build_identity():
        return _check("toolbox", False, f"not the image: {len(broken)} of {n} toolbox commands "
                      f"are not here", required=False)
    return _check("toolbox", False, f"{len(broken)} of {n} commands do not start: "
                  + "; ".join(f"{c}: {why}" for c, why in sorted(broken.items())))


def doctor(verify_sha: bool = True) -> dict:
    # The two checks that take time overlap, each check unchanged: the staged files are
    # re-hashed (one core) while the toolbox's tools start (CPU-bound: their starts are
    # doctor's floor), each in this thread (no fork beside another thread).
    staged = StagedChecks(verify_sha)
    first = [check_rules()]
    rest = [*check_caches(), check_network(), check_runtime(), check_user(), *check_binaries(),
            check_toolbox(meanwhile=staged.step), check_gpu()]
    checks = [*first, *staged.finish(), *rest]
    failed = [c for c in checks if c["required"] and not c["ok"]]
    result = {"ok": not failed, "checks": checks,
              "failed": [c["check"] for c in failed]}
    if failed:
        raise DoctorFailed(result)
    return result


class DoctorFailed(ToolFailure):
    """Exit 4 with the full report still printed: an agent needs to see every check."""

    def __init__(self, result: dict):
        failed = {c["check"]: c["detail"] for c in result["checks"] if c["check"] in result["failed"]}
        # An unenforced network is the one failure whose fix is how the container is started.
        why = f" ({failed['egress']})" if "egress" in failed else ""
        super().__init__("doctor: required checks failed: " + ", ".join(result["failed"]) + why)
        self.result = result
