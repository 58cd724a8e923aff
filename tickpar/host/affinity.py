"""Pinning a parallel run's worker threads to cores of their own, for the length of the run (opt-in).

Why it exists: a thread started on a machine whose other cores are idle (halted) lands on its
parent's core, and Linux's load balancer moves it only after a scheduler tick.  Measured here (2
vCPUs): a native replay after a 50 ms idle spell took 1.4 ms instead of 0.5 ms, its two threads
taking turns on one core; the native engine therefore always pins its ``std::thread`` workers
(``pinned`` in its stats).  A Python run lasts hundreds of milliseconds, long enough for the
balancer, and pinning its threads measured no better here (free-threaded 3.13t, wide shapes at
work_us 300, 2 workers: within the rounds' spread either way), so Python thread strategies pin only
with ``TICKPAR_PIN_THREADS=1``.  Worker ``w`` of ``n`` goes to the ``w``-th CPU of the process's own
CPU set, where that set has at least ``n`` CPUs (with fewer, nothing is pinned).  The calling
thread's own mask is restored when its block ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PIN_ENV", "pinned", "pinning_requested", "worker_cpus"]

#: Set to ``1`` to pin the Python thread strategies' workers (the native engine always pins).
PIN_ENV = "TICKPAR_PIN_THREADS"


def pinning_requested() -> bool:
    """Whether :data:`PIN_ENV` asks for pinned Python workers; a value other than 0 or 1 is a ValueError."""
    value = os.environ.get(PIN_ENV, "0").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"{PIN_ENV}={value!r} is not allowed: use 1 (pin worker threads) or 0 (do not)")
    return value == "1"


def worker_cpus(workers: int) -> list[int] | None:
    """The CPUs that workers ``0 .. workers-1`` run on, in order; None: leave them unpinned.

    None for fewer than 2 workers, unless pinning is switched on (:data:`PIN_ENV` ``=1``), where the
    platform cannot pin threads, or where the process may use fewer CPUs than ``workers``.
    """
    if workers < 2 or not pinning_requested() or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[:workers] if len(allowed) >= workers else None


@contextmanager
def pinned(cpus: list[int] | None, worker: int) -> Iterator[None]:
    """Run the block with the calling thread on ``cpus[worker]`` (nothing when ``cpus`` is None).

    On Linux ``sched_setaffinity(0, ...)`` applies to the calling thread alone and moves it before
    it returns.
    """
    if cpus is None:
        yield
        return
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpus[worker]})
    try:
        yield
    finally:
        os.sched_setaffinity(0, saved)
