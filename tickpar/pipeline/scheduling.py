"""Snakemake's local scheduler without its job-rate limiter's timer chains (``rules/common.smk``).

Snakemake (checked on 9.27) always builds a job-rate limiter from ``--max-jobs-per-timespan``,
whose default is ``100/1s``. At the end of every pass of its scheduling loop it arms a
``threading.Timer`` for one timespan, and the timer releases the loop for one more pass. That pass
arms another timer, so every pass that a job's end starts runs on as a chain of its own, one
pass per second. After ``n`` small jobs, ``n`` chains select jobs ``n`` times a second, and each
pass stats the inputs of every waiting job and runs the job selector: a sweep of many short jobs
spends its cores on scheduling (what that cost the default sweep: "The limiter" in
docs/measurements/2026-12-03-default-sweep-budget.md). (The upstream thread is
snakemake/snakemake#3744, "Do not release lock when job finished".)

A local run is already bounded by its cores and resources, so the limiter limits nothing there.
:func:`unthrottle_local` switches it off for local runs (the ``onstart`` hook: after Snakemake has
built its scheduler, before the first pass). A cluster run keeps it, because there it throttles
submissions to the queue. So does a local run with a rate other than the default, which a user
asked for on purpose.
"""

from __future__ import annotations

import sys
from typing import Any

#: Snakemake's default ``--max-jobs-per-timespan`` (100 jobs per 1 s): the only rate this switches off.
DEFAULT_RATE = (100, 1.0)


def unthrottle_local(workflow: Any) -> bool:
    """Drop the job-rate limiter of a local run at Snakemake's default rate. Returns whether it did.

    A no-op where the run is not local, the rate was set by the user, or a Snakemake
    version has no such limiter (the attribute is looked up, never assumed)."""
    if not getattr(workflow, "local_exec", False):
        return False
    scheduler = getattr(workflow, "scheduler", None)
    limiter = getattr(scheduler, "job_rate_limiter", None)
    if limiter is None:
        return False
    rate = (getattr(limiter, "max_jobs", None), float(getattr(limiter, "timespan", 0) or 0))
    if rate != DEFAULT_RATE:
        return False
    scheduler.job_rate_limiter = None
    print("tickpar: local run, Snakemake's job-rate limiter off (tickpar/pipeline/scheduling.py)", file=sys.stderr)
    return True
