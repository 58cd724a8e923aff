"""tickpar.pipeline.slurm: the SLURM executor's job-status query falls back from sacct to squeue and stops the sweep
with one line after its attempts, never hangs; MPI ranks start inside a SLURM allocation. No SLURM needed here
(tests/test_slurm.py runs the real thing: make test-slurm)."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tickpar.pdes import launch
from tickpar.pipeline import slurm
from tickpar.pipeline.slurm import StatusGuard

RUN = "3f0c-run"
SACCT = f"sacct -X --parsable2 --clusters all --noheader --format=JobIdRaw,State --name {RUN}"
SQUEUE = f"squeue '--format=%i|%T' --states=all --noheader --name {RUN}"


class Settings:
    status_attempts = 3
    init_seconds_before_status_checks = 1
    status_command = "sacct"


def _guard(answers: dict[str, list[Any]], settings: Settings | None = None) -> tuple[StatusGuard, list[str]]:
    """A guard over a fake query: ``answers[program]`` are its results in turn (the last one repeats)."""
    calls: list[str] = []

    async def query(command: str, logger: Any) -> Any:
        calls.append(command)
        queue = answers[command.split()[0]]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        calls.append(" ".join(argv))
        if argv[0] == "scancel":
            return subprocess.CompletedProcess(argv, 0, "", "")
        return subprocess.CompletedProcess(argv, 1, "", f"{argv[0]}: error: Slurm accounting storage is disabled\n")

    settings = settings or Settings()
    guard = StatusGuard(query, lambda: settings, lambda run_id: SQUEUE.replace(RUN, run_id), run, io.StringIO())
    return guard, calls


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    pauses: list[float] = []

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)

    monkeypatch.setattr(slurm.asyncio, "sleep", sleep)
    return pauses


FAILED = (None, None)
OK = ({"41": "RUNNING"}, 0.01)


def test_sacct_without_accounting_falls_back_to_squeue() -> None:
    """sacct fails where accounting is off: the same query by squeue answers it, and every later sacct query is
    asked of squeue (the plugin's own sacct preference included); one line says so, the plugin's setting follows."""
    settings = Settings()
    guard, calls = _guard({"sacct": [FAILED], "squeue": [OK]}, settings)
    assert asyncio.run(guard(SACCT, None)) == OK
    assert settings.status_command == "squeue" and guard.failures == 0
    assert asyncio.run(guard(SACCT, None)) == OK
    assert calls[-1] == SQUEUE and not any(c.startswith("sacct") for c in calls[3:])
    assert guard.notes == [
        "tickpar: sacct does not work here (sacct: error: Slurm accounting storage is disabled): "
        "job status comes from squeue from now on"
    ]


def test_a_status_query_that_keeps_failing_stops_the_sweep_with_one_line(no_pause: list[float]) -> None:
    """Every query fails: the guard pauses before each retry and, at the configured attempts, cancels the run's jobs
    and raises one line naming the command and its error (Snakemake stops instead of waiting for ever)."""
    from snakemake_interface_common.exceptions import WorkflowError

    guard, calls = _guard({"sacct": [FAILED], "squeue": [FAILED]})
    assert asyncio.run(guard(SACCT, None)) == FAILED
    assert asyncio.run(guard(SACCT, None)) == FAILED
    with pytest.raises(WorkflowError, match="kept failing"):
        asyncio.run(guard(SACCT, None))
    assert len(guard.notes) == 1 and guard.err.getvalue() == guard.notes[0] + "\n"
    line = guard.notes[0]
    assert line.startswith("tickpar: SLURM job status unknown: `sacct` failed 3 times in a row")
    assert "Slurm accounting storage is disabled" in line
    assert f"its jobs were cancelled (scancel --name {RUN})" in line and f"scancel --name {RUN}" in calls
    assert no_pause == [1.0, 1.0]  # between attempts, none after the last


def test_a_short_outage_is_ridden_out() -> None:
    """Failures that end before the attempts do are forgotten at the next answer."""
    guard, _ = _guard({"squeue": [FAILED, FAILED, OK, FAILED, FAILED, OK]})
    results = [asyncio.run(guard(SQUEUE, None)) for _ in range(6)]
    assert results == [FAILED, FAILED, OK, FAILED, FAILED, OK] and guard.failures == 0


def test_install_wraps_the_plugins_query_once_and_only_in_the_main_process(monkeypatch: pytest.MonkeyPatch) -> None:
    async def query(command: str, logger: Any) -> Any:
        return OK

    fake = types.ModuleType(slurm.PLUGIN)
    fake.query_job_status = query
    monkeypatch.setitem(sys.modules, slurm.PLUGIN, fake)
    main = types.SimpleNamespace(is_main_process=True, executor_settings=Settings())
    assert slurm.install(types.SimpleNamespace(is_main_process=False)) is None
    guard = slurm.install(main)
    assert isinstance(guard, StatusGuard) and fake.query_job_status is guard and guard.query is query
    assert slurm.install(main) is guard  # a second Snakefile parse wraps nothing twice
    monkeypatch.delitem(sys.modules, slurm.PLUGIN)
    assert slurm.install(main) is None  # no plugin: nothing to guard


def test_mpi_ranks_start_inside_a_slurm_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside SLURM plain mpiexec; inside an allocation mpiexec -launcher fork (its srun would be a nested step that
    waits for ever for the CPUs the job holds), and the run's statistics name the job."""
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SLURM_JOBID", raising=False)
    outside = launch.mpi_command(2, Path("j.json"), Path("o.json"))
    assert outside[1:3] == ["-n", "2"] and launch.mpi_launch_stats()["slurm_job_id"] is None
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    inside = launch.mpi_command(2, Path("j.json"), Path("o.json"))
    assert inside[:5] == [str(launch.mpiexec_path()), "-launcher", "fork", "-n", "2"]
    stats = launch.mpi_launch_stats()
    assert stats["slurm_job_id"] == "42" and stats["mpi_launch"].endswith("mpiexec -launcher fork")
