"""The local-run switch for Snakemake's job-rate limiter (tickpar/pipeline/scheduling.py)."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from tickpar.pipeline.scheduling import unthrottle_local


def _workflow(local: bool = True, max_jobs: int = 100, timespan: float = 1) -> SimpleNamespace:
    limiter = SimpleNamespace(max_jobs=max_jobs, timespan=timespan)
    return SimpleNamespace(local_exec=local, scheduler=SimpleNamespace(job_rate_limiter=limiter))


def test_a_local_run_at_the_default_rate_loses_its_limiter(capsys: pytest.CaptureFixture[str]) -> None:
    wf = _workflow()
    assert unthrottle_local(wf) is True
    assert wf.scheduler.job_rate_limiter is None
    assert "job-rate limiter off" in capsys.readouterr().err


@pytest.mark.parametrize(
    "wf",
    [
        _workflow(local=False),  # a cluster run: the limiter throttles submissions
        _workflow(max_jobs=5),  # a rate the user asked for
        _workflow(timespan=60),
    ],
    ids=["cluster", "user-rate", "user-timespan"],
)
def test_the_limiter_stays_where_it_limits_something(wf: SimpleNamespace) -> None:
    limiter = wf.scheduler.job_rate_limiter
    assert unthrottle_local(wf) is False
    assert wf.scheduler.job_rate_limiter is limiter


def test_a_snakemake_without_the_limiter_is_left_alone() -> None:
    assert unthrottle_local(SimpleNamespace(local_exec=True, scheduler=SimpleNamespace())) is False
    assert unthrottle_local(SimpleNamespace(local_exec=True)) is False


def test_the_installed_snakemake_still_has_the_attribute_it_switches() -> None:
    # A Snakemake that renames the limiter would make the switch a silent no-op (and the default
    # sweep ~50 s slower on 2 cores): fail here instead.
    job_scheduler = pytest.importorskip("snakemake.scheduling.job_scheduler")
    source = inspect.getsource(job_scheduler.JobScheduler)
    assert "self.job_rate_limiter = (" in source or "self.job_rate_limiter =" in source
    assert "if self.job_rate_limiter is not None" in source
    limits = pytest.importorskip("snakemake.settings.types").MaxJobsPerTimespan.parse_choice("100/1s")
    assert (limits.max_jobs, float(limits.timespan)) == (100, 1.0)
