"""biotool-sandbox end to end on the real engine: a run's round trip, and parallel runs isolated."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from biotool_testing import stack


def _project_resources(run_id: str) -> dict:
    import docker

    dc = docker.from_env()
    label = {"label": f"com.docker.compose.project={run_id}"}
    return {"containers": dc.containers.list(ignore_removed=True, all=True, filters=label),
            "networks": dc.networks.list(filters=label),
            "volumes": dc.volumes.list(filters=label)}


def test_up_exec_cp_audit_down_round_trip(tmp_path, images):
    up = stack.launcher("up")
    run = up["run"]
    try:
        assert set(up["containers"]) == {"sandbox", "egress"}
        ran = stack.launcher("exec", run, "--", "sh", "-c", "id -u; echo oops >&2; exit 7")
        assert (ran["exit_code"], ran["stdout"], ran["stderr"]) == (7, "1000\n", "oops\n")
        assert ran["duration_s"] >= 0

        src = tmp_path / "reads.txt"
        src.write_text("ACGT\n")
        assert stack.launcher("cp", str(src), f"{run}:/work/")["destination"] == "/work/reads.txt"
        ran = stack.launcher("exec", run, "--", "sh", "-c", "cat /work/reads.txt | tr ACGT TGCA > /work/out.txt")
        assert ran["exit_code"] == 0, ran
        out = stack.launcher("cp", f"{run}:/work/out.txt", str(tmp_path / "back.txt"))
        assert out["direction"] == "out" and (tmp_path / "back.txt").read_text() == "TGCA\n"

        timed = stack.launcher("exec", run, "--timeout", "1", "--", "sleep", "30")
        assert timed["timed_out"] and timed["exit_code"] == 124
        # The wrapper runs by its absolute path: the command's PATH has no say in it.
        bare = stack.launcher("exec", run, "--env", "PATH=/nowhere", "--timeout", "1", "--",
                              "/bin/sleep", "30")
        assert bare["timed_out"] and bare["exit_code"] == 124, bare

        stack.launcher("exec", run, "--", "python3", "-c", stack.PROBE, "connect", "example.net:443")
        records = stack.wait_for_record(up, lambda r: r["host"] == "example.net")
        assert records["decision"] == "denied"

        missing = stack.launcher("cp", f"{run}:/work/nope", str(tmp_path / "x"), check=False)
        assert missing["_code"] == 2 and "/work/nope" in missing["_stderr"]
    finally:
        down = stack.launcher("down", run)
    assert down["left"] == {"containers": 0, "networks": 0, "volumes": 0}
    assert not any(_project_resources(run).values())
    import docker
    docker.from_env().volumes.get("biotool-ncbi-schedule")  # the egress-only schedule survives
    gone = stack.launcher("exec", run, "--", "true", check=False)
    assert gone["_code"] == 2 and run in gone["_stderr"]


def test_parallel_runs_share_nothing(images):
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda _: stack.launcher("up"), range(2))
    try:
        assert a["run"] != b["run"]
        assert not set(a["networks"]) & set(b["networks"])
        marker = f"written-by-{a['run']}"
        stack.launcher("exec", a["run"], "--", "sh", "-c", f"echo {marker} > /work/mine")
        seen = stack.launcher("exec", b["run"], "--", "sh", "-c", "ls /work")
        assert "mine" not in seen["stdout"]

        # b's sandbox cannot reach a's proxy or sandbox, even by address.
        a_egress = stack.container(a["containers"]["egress"])
        a_ip = next(iter(n["IPAddress"] for k, n in a_egress.attrs["NetworkSettings"]["Networks"].items()
                         if k.endswith("_internal")))
        res = stack.probe(b, "tcp", a_ip, "3128")
        assert res.get("errname") in ("EHOSTUNREACH", "ENETUNREACH"), res
        stack.probe(b, "connect", "example.com:443")
        stack.wait_for_record(b, lambda r: r["host"] == "example.com")
        assert not [r for r in stack.audit(a) if r["host"] == "example.com"]
    finally:
        for run in (a, b):
            stack.launcher("down", run["run"])


def test_offline_mode_has_no_network_and_no_proxy(images):
    up = stack.launcher("up", "--mode", "offline")
    try:
        assert set(up["containers"]) == {"sandbox-offline"}
        ifaces = stack.launcher("exec", up["run"], "--", "cat", "/proc/net/dev")["stdout"]
        assert [l.split(":")[0].strip() for l in ifaces.splitlines()[2:]] == ["lo"]
        env = stack.launcher("exec", up["run"], "--", "sh", "-c", "echo ${HTTPS_PROXY:-none}")
        assert env["stdout"].strip() == "none"
        assert stack.launcher("audit", up["run"])["offline"] is True
    finally:
        stack.launcher("down", up["run"])


def test_the_host_memory_budget_refuses_a_run_with_the_figures_and_leaves_nothing(images):
    import docker

    from biotool_sandbox.engine import budget
    from biotool_sandbox.engine import runs as launcher_runs
    from biotool_sandbox.engine.composefile import PROJECT_LABEL

    dc = docker.from_env()
    host = dc.info()["MemTotal"]
    need = (8 << 30) + (512 << 20)  # compose.yaml's sandbox and egress limits
    used = budget.in_use(dc, launcher_runs.state_root(), PROJECT_LABEL)
    env = {budget.SHARE_ENV: f"{(used + need * 1.5) / host:.6f}"}  # one more run fits, not two
    first = stack.launcher("up", env=env)
    try:
        assert first["memory"]["run"] == need and first["memory"]["in_use"] >= used
        runs_before = launcher_runs.runs(dc)
        states_before = sorted(p.name for p in launcher_runs.state_root().iterdir())
        refused = stack.launcher("up", env=env, check=False)
        assert refused["_code"] == 2 and len(refused["_stderr"].strip().splitlines()) == 1
        err = refused["_stderr"]
        assert budget.SHARE_ENV in err and budget.shown(host) in err and "8.5g" in err, err
        assert launcher_runs.runs(dc) == runs_before
        assert sorted(p.name for p in launcher_runs.state_root().iterdir()) == states_before
    finally:
        stack.launcher("down", first["run"])
    # With the first run down, the same budget holds a run again.
    again = stack.launcher("up", env=env)
    stack.launcher("down", again["run"])


def test_declared_blast_runs_past_what_the_host_sustains_are_refused_at_up(images):
    # Issue 48 item 3c: at the default 30 s hold, NCBI's one request every 10.5 s serves a
    # round of 2 searching runs within every one's hold; a third declared run is refused at its
    # start with the count, leaving nothing, and a place frees as soon as a run goes down.
    import docker

    from biotool import ncbirule
    from biotool_sandbox.engine import runs as launcher_runs

    dc = docker.from_env()
    # Small runs (2.5g each with the egress), their tmpfs leaving the 1g processes need.
    small = ("--memory", "2g", "--work-size", "256m")
    env = {"BIOTOOL_TMP_SIZE": "256m", "BIOTOOL_VARTMP_SIZE": "64m"}
    assert ncbirule.sustained([ncbirule.DEFAULT_HOLD_S]) == 2
    first = stack.launcher("up", "--blast", *small, env=env)
    second = stack.launcher("up", "--blast", *small, env=env)
    try:
        runs_before = launcher_runs.runs(dc)
        refused = stack.launcher("up", "--blast", *small, check=False, env=env)
        lines = refused["_stderr"].strip().splitlines()
        assert refused["_code"] == 2 and len(lines) == 1, refused
        assert "already serves 2 run(s) that declared BLAST, and it sustains 2 at a hold of " \
               "30 s" in lines[0], lines
        assert launcher_runs.runs(dc) == runs_before  # the refused run left nothing
        # A run that did not declare starts beside them (served in the slots they leave).
        plain = stack.launcher("up", *small, env=env)
        stack.launcher("down", plain["run"])
    finally:
        stack.launcher("down", second["run"])
    again = stack.launcher("up", "--blast", *small, env=env)  # the place the second freed
    stack.launcher("down", again["run"])
    stack.launcher("down", first["run"])
