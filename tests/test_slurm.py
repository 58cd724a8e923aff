"""make test-slurm: the sweep through config/profiles/slurm on a real one-node SLURM (tests/slurm/run.sh starts it).

Skipped without that cluster (``TICKPAR_SLURM_CLUSTER``).  The sweep is config/test-slurm.yaml; its outputs stay
in results-slurm/ (``summary.csv``, ``report.html``, the whole sweep under ``sweep/``, Snakemake's output in
``sweep.log``).  On a machine that others load, every timing round may stay contended after its re-times and the
cells lose their speedups, as they should: ``TICKPAR_SLURM_MIN_CPU_AVAILABLE=0 make test-slurm`` flags no round.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tickpar.host.paths import REPO_ROOT

CLUSTER = os.environ.get("TICKPAR_SLURM_CLUSTER")
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(not CLUSTER, reason="needs the one-node SLURM of make test-slurm (tests/slurm/run.sh)"),
]

OUT = REPO_ROOT / "results-slurm"
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
PROFILE = ["--profile", str(REPO_ROOT / "config/profiles/slurm")]
FAST = ["--slurm-init-seconds-before-status-checks", "2"]  # status every 2 s (then +10 s per quiet check)


def _snakemake(args: list[str], *, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Snakemake in its own process group; past ``timeout`` the group is killed and the test fails: it hung."""
    proc = subprocess.Popen(
        [SNAKEMAKE, *args], cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, env=env,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"snakemake {' '.join(args)} hung: killed after {timeout:g} s\n{(out + err)[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _run_id(text: str) -> str:
    found = re.search(r"SLURM run ID: (\S+)", text)
    assert found, text[-2000:]
    return found.group(1)


def _jobs_of(run_id: str, states: str = "all") -> list[str]:
    done = subprocess.run(
        ["squeue", "--noheader", "--format=%i|%T", f"--states={states}", "--name", run_id],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [line for line in done.stdout.splitlines() if line.strip()]


@pytest.mark.timeout(300)
def test_a_status_query_that_keeps_failing_stops_the_sweep_with_one_line(tmp_path: Path) -> None:
    """squeue and sacct fail on every call (stand-ins first on PATH): the sweep submits its first jobs, then stops
    within --slurm-status-attempts with one line naming the command and its error, and cancels its jobs."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, error in (
        ("squeue", "squeue: error: slurm_load_jobs error: Unable to contact slurm controller (connect failure)"),
        ("sacct", "sacct: error: Problem talking to the database: Connection refused"),
    ):
        (fake / name).write_text(f"#!/bin/sh\necho '{error}' >&2\nexit 1\n")
        (fake / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    started = time.monotonic()
    res = _snakemake(
        [*PROFILE, "--configfile", str(REPO_ROOT / "config/test.yaml"), "-d", str(tmp_path / "sweep"), *FAST,
         "--slurm-status-attempts", "3"],
        timeout=240, env=env,
    )  # fmt: skip
    wall = time.monotonic() - started
    text = res.stdout + res.stderr
    (tmp_path / "snakemake.log").write_text(text)
    assert res.returncode != 0, text[-3000:]
    assert "submitted with SLURM jobid" in text, text[-3000:]
    ours = [line for line in res.stderr.splitlines() if line.startswith("tickpar: SLURM job status unknown")]
    assert len(ours) == 1, text[-3000:]
    line = ours[0]
    assert "`sacct` failed 3 times in a row" in line and "Problem talking to the database" in line, line
    run_id = _run_id(text)
    assert f"its jobs were cancelled (scancel --name {run_id})" in line
    assert not _jobs_of(run_id, "PENDING,RUNNING,CONFIGURING"), "jobs left behind"
    # A cancelled job that was running passes through COMPLETING (its step's exit and epilog) for a few seconds.
    deadline = time.monotonic() + 60
    while _jobs_of(run_id, "COMPLETING") and time.monotonic() < deadline:
        time.sleep(1)
    assert not _jobs_of(run_id, "PENDING,RUNNING,CONFIGURING,COMPLETING"), "jobs left behind"
    print(f"status-query failure: stopped after {wall:.0f} s: {line}")


@pytest.fixture(scope="module")
def sweep() -> dict[str, object]:
    """The SLURM sweep, once: results-slurm/{summary.csv, report.html, sweep/, sweep.log}."""
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    config = REPO_ROOT / "config/test-slurm.yaml"
    threshold = os.environ.get("TICKPAR_SLURM_MIN_CPU_AVAILABLE")
    if threshold:  # a shared machine: see the module docstring
        data = yaml.safe_load(config.read_text())
        data["timing"]["min_cpu_available"] = float(threshold)
        config = OUT / "test-slurm.yaml"
        config.write_text(yaml.safe_dump(data, sort_keys=False))
    args = [*PROFILE, "--configfile", str(config), "-d", str(OUT / "sweep")]
    started = time.monotonic()
    res = _snakemake([*args, *FAST], timeout=540)
    wall = time.monotonic() - started
    log = res.stdout + res.stderr
    (OUT / "sweep.log").write_text(log)
    assert res.returncode == 0, log[-4000:]
    rep = _snakemake([*args, "--report", str(OUT / "report.html")], timeout=180)
    assert rep.returncode == 0, (rep.stdout + rep.stderr)[-3000:]
    shutil.copyfile(OUT / "sweep/results/summary.csv", OUT / "summary.csv")  # readable by all, unlike the 0600 original
    print(f"SLURM sweep: {wall:.0f} s; report: {OUT / 'report.html'}")
    return {"log": log, "wall_s": wall, "summary": pd.read_csv(OUT / "summary.csv")}


@pytest.mark.timeout(900)
def test_the_sweep_runs_through_slurm_with_exact_verdicts_and_speedups(sweep: dict[str, object]) -> None:
    """Every job but the light local ones was a SLURM job; every verdict is exact; every timed cell has its timed
    runs exact and a speedup; the pipeline said that it asks squeue, since this cluster keeps no accounting."""
    log, df = str(sweep["log"]), sweep["summary"]
    assert isinstance(df, pd.DataFrame)
    for rule in ("golden", "check", "bounds", "timing"):
        assert re.search(rf"rule_{rule}/\S+\.log", log), f"no SLURM job of rule {rule}"
    assert "tickpar: sacct does not work here (Slurm accounting storage is disabled)" in log
    assert (df["verdict"] == "exact").all(), df[["label", "workers", "verdict", "verdict_reason"]]
    assert df["slurm_job_id"].notna().all()  # every correctness record was written inside a SLURM job
    timed = df[df["timed"]]
    assert len(timed) == 3 and (timed["timing_status"] == "ok").all()
    assert timed["timed_exact"].all()
    show = ["label", "workers", "speedup", "loop_speedup", "n_retimed", "n_contended", "retime_reasons"]
    print(timed[show].to_string())
    assert timed["speedup"].notna().all() and timed["loop_speedup"].notna().all(), timed[show]
    assert "n_retimed" in df.columns and "retime_reasons" in df.columns


@pytest.mark.timeout(900)
def test_an_mpi_cell_ran_inside_the_allocation(sweep: dict[str, object]) -> None:
    """The conservative backend=mpi cell's ranks were started by mpiexec inside its SLURM job (-launcher fork),
    and its verdict is exact."""
    df = sweep["summary"]
    assert isinstance(df, pd.DataFrame)
    mpi = df[df["opt_backend"] == "mpi"]
    assert len(mpi) == 1
    row = mpi.iloc[0]
    assert row["verdict"] == "exact"
    assert str(row["stat_mpi_launch"]).endswith("mpiexec -launcher fork")
    job = int(row["slurm_job_id"])  # the check job's; the ranks report the same one
    assert int(row["stat_slurm_job_id"]) == job
    assert re.search(rf"submitted with SLURM jobid {job} \(log: \S+/rule_check/", str(sweep["log"]))


@pytest.mark.timeout(900)
def test_the_report_renders_and_says_what_was_retimed(sweep: dict[str, object]) -> None:
    """results-slurm/report.html (Snakemake's self-contained report) and the appendix with the timing line."""
    html = OUT / "report.html"
    assert html.stat().st_size > 50_000
    appendix = (OUT / "sweep/results/report/appendix.html").read_text()
    assert "Timing: " in appendix and ("re-timed" in appendix)
    assert (OUT / "sweep/results/report.pdf").stat().st_size > 0
