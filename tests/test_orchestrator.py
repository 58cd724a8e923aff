"""The timing job pauses the workflow engine that launched it, and never leaves it stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tickpar.host.orchestrator import is_workflow_engine, paused


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _wait_state(pid: int, want: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    state = _state(pid)
    while (state == "T") != (want == "T") and time.monotonic() < deadline:
        time.sleep(0.02)
        state = _state(pid)
    return state


@pytest.fixture
def fake_engine(tmp_path: Path):
    """A process whose command line looks like Snakemake's (``python .../snakemake``)."""
    script = tmp_path / "snakemake"
    script.write_text("import time\nwhile True:\n    time.sleep(0.05)\n")
    proc = subprocess.Popen([sys.executable, str(script)])
    # Right after the fork /proc/<pid>/cmdline can still be empty (seen on a loaded machine): wait for the exec.
    deadline = time.monotonic() + 10.0
    while not Path(f"/proc/{proc.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)
    yield proc
    proc.kill()
    proc.wait()


def test_only_a_workflow_engine_is_paused(fake_engine: subprocess.Popen) -> None:
    assert is_workflow_engine(fake_engine.pid)
    assert not is_workflow_engine(os.getpid())  # pytest is no engine
    with paused(os.getpid()) as stopped:
        assert not stopped
    with paused(fake_engine.pid, enabled=False) as stopped:
        assert not stopped and _state(fake_engine.pid) != "T"


def test_the_engine_is_stopped_inside_and_continued_after(fake_engine: subprocess.Popen) -> None:
    with paused(fake_engine.pid) as stopped:
        assert stopped and _wait_state(fake_engine.pid, "T") == "T"
    assert _wait_state(fake_engine.pid, "S") != "T"
    with pytest.raises(RuntimeError), paused(fake_engine.pid):
        raise RuntimeError("a failing measurement")
    assert _wait_state(fake_engine.pid, "S") != "T"


def _pausing_job(engine: int) -> subprocess.Popen:
    """A timing job that has paused ``engine`` (stopped, checked) and then waits inside the pause."""
    job = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom tickpar.host.orchestrator import paused\n"
         f"with paused({engine}) as s:\n    print(s, flush=True)\n    time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert job.stdout is not None and job.stdout.readline().strip() == "True"
    assert _wait_state(engine, "T") == "T"
    return job


def test_a_killed_timing_job_leaves_no_stopped_engine(fake_engine: subprocess.Popen) -> None:
    """SIGKILL skips every finally: the watchdog's pipe closes and it continues the engine."""
    job = _pausing_job(fake_engine.pid)
    job.send_signal(signal.SIGKILL)
    job.wait()
    assert _wait_state(fake_engine.pid, "S") != "T"


def test_a_signal_to_the_whole_job_leaves_no_stopped_engine(fake_engine: subprocess.Popen) -> None:
    """scancel (or ^C) signals every process of a job at once, the watchdog included: it ignores SIGTERM, so it
    outlives the job and continues the engine, which then takes its own SIGTERM and ends."""
    job = _pausing_job(fake_engine.pid)
    children = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(int(p.name)) == job.pid]
    assert children, "no watchdog process found"
    for pid in (job.pid, *children, fake_engine.pid):  # as SLURM signals a job's cgroup
        os.kill(pid, signal.SIGTERM)
    job.wait(10)
    assert fake_engine.wait(10) == -signal.SIGTERM  # continued, so its SIGTERM was delivered


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
