"""Which kernel runs the container (biotool.system.runtime), on markers written as each kernel
shows them; the image tier reads the real ones under runc and runsc."""

from __future__ import annotations

import pytest

from biotool.system import doctor, runtime

GVISOR_LOG = "[    0.000000] Starting gVisor...\n[    0.4] Checking naughty and nice process list...\n"
HOST_VERSION = "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian\n"


def _status(tmp_path, version: str, log: str | None, present: tuple[str, ...],
            statx: bool | None = True) -> dict:
    proc_version = tmp_path / "version"
    proc_version.write_text(version)
    return runtime.status(proc_version=proc_version, kernel_log=lambda: log,
                          exists=lambda p: p in present, statx=lambda: statx)


def test_gvisor_needs_every_marker(tmp_path):
    st = _status(tmp_path, runtime.GVISOR_VERSION + "\n", GVISOR_LOG, ())
    assert st["runtime"] == "gvisor" and "gVisor's fixed identity" in st["reason"]
    # An unreadable log is no evidence against gVisor; the other two markers still decide.
    assert _status(tmp_path, runtime.GVISOR_VERSION, None, ())["runtime"] == "gvisor"


@pytest.mark.parametrize("version,log,present", [
    (HOST_VERSION, None, ("/proc/kallsyms",)),                 # runc on a Debian host
    (runtime.GVISOR_VERSION, GVISOR_LOG, ("/proc/kallsyms",)),  # a host interface shows
    (runtime.GVISOR_VERSION, "[0.0] Linux version 6.1.0\n", ()),  # the log is a host's
    (HOST_VERSION, GVISOR_LOG, ()),                             # the identity is a host's
    ("", None, ()),                                             # /proc/version unreadable
])
def test_anything_short_of_every_marker_is_the_host_kernel(tmp_path, version, log, present):
    st = _status(tmp_path, version, log, present)
    assert st["runtime"] == "host-kernel"
    assert "host's kernel is shared" in st["reason"]


def test_a_gvisor_that_refuses_coreutils_statx_is_a_defect_doctor_fails_on(tmp_path,
                                                                            monkeypatch):
    st = _status(tmp_path, runtime.GVISOR_VERSION, GVISOR_LOG, (), statx=False)
    assert st["runtime"] == "gvisor" and "`ls -l` and `stat` fail" in st["defect"]
    assert _status(tmp_path, runtime.GVISOR_VERSION, GVISOR_LOG, ())["defect"] is None
    monkeypatch.delenv("BIOTOOL_REQUIRE_RUNTIME", raising=False)
    monkeypatch.setattr(runtime, "status", lambda: st)
    c = doctor.check_runtime()
    assert c["required"] and not c["ok"] and "install-runsc.sh" in c["detail"]


def test_statx_as_coreutils_calls_it_answers_on_this_host():
    assert runtime._statx_answers() is True


def test_the_marker_list_reads_this_host_as_a_host_kernel():
    # This test runs on a host kernel (the unit tier never runs under gVisor).
    assert runtime.status()["runtime"] == "host-kernel"


@pytest.mark.parametrize("value,expected", [("gvisor", "gvisor"), (" GVisor ", "gvisor"),
                                            ("", None)])
def test_require_runtime_setting(value, expected):
    assert runtime.required({"BIOTOOL_REQUIRE_RUNTIME": value}) == expected


def test_require_runtime_names_what_it_can_check():
    with pytest.raises(ValueError, match="'kata'.*choose from: gvisor"):
        runtime.required({"BIOTOOL_REQUIRE_RUNTIME": "kata"})


def test_cli_refuses_on_the_host_kernel_when_gvisor_is_required(monkeypatch, capsys):
    from biotool import cli

    monkeypatch.setenv("BIOTOOL_REQUIRE_RUNTIME", "gvisor")
    with pytest.raises(SystemExit) as exc:
        cli._refuse_where_required(["list"])
    assert exc.value.code == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "BIOTOOL_REQUIRE_RUNTIME=gvisor" in err
    assert "--runtime runsc" in err
    cli._refuse_where_required(["--help"])
    monkeypatch.setattr(runtime, "status", lambda: {"runtime": "gvisor", "reason": "gVisor"})
    cli._refuse_where_required(["list"])


def test_cli_refuses_an_unknown_required_runtime_as_bad_input(monkeypatch, capsys):
    from biotool import cli

    monkeypatch.setenv("BIOTOOL_REQUIRE_RUNTIME", "kata")
    with pytest.raises(SystemExit) as exc:
        cli._refuse_where_required(["list"])
    assert exc.value.code == 2 and "kata" in capsys.readouterr().err


def test_doctor_reports_the_runtime_and_requires_it_only_when_asked(monkeypatch):
    monkeypatch.delenv("BIOTOOL_REQUIRE_RUNTIME", raising=False)
    c = doctor.check_runtime()
    assert c["check"] == "runtime" and c["ok"] and not c["required"]
    assert c["detail"].startswith("host-kernel: ")
    monkeypatch.setenv("BIOTOOL_REQUIRE_RUNTIME", "gvisor")
    c = doctor.check_runtime()
    assert c["required"] and not c["ok"] and "--runtime runsc" in c["detail"]
