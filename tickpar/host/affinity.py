"""Pinning a parallel run's worker threads to cores of their own, for the length of the run.

Why it exists: a thread started on a machine whose other cores are idle (halted) lands on its
parent's core, and Linux's load balancer does not always move it.  Measured here (2 vCPUs): a
native replay after a 50 ms idle spell took 1.4 ms instead of 0.5 ms, its two threads taking turns
on one core; the native engine therefore always pins its ``std::thread`` workers (``pinned`` in its
stats).  The same happens to Python threads that never sleep: on the free-threaded build (3.13t,
GIL off) a null-message conservative run of phold ``wide`` at work_us 300 (gil-hold, 2 workers)
took 284-290 ms a loop with each thread idle 140 ms (two runs), and 157-170 ms pinned (idle 7-24
ms).  Under the GIL it happens too, though the threads hand the GIL over at every work call: a
process's first 3-5 runs of conservative window-threads on phold ``wide`` lps 32 at work_us 30
(gil-release, 2 workers) took 19-26 ms a loop, later ones 14.7 ms; pinned, 15.0-16.9 ms from the first
run on.  In ``tickpar time`` (one process, 3 values, fixed work rate) pinning took that cell from 17.4 to
15.2 ms and multicore ``wide`` cores 32 from 30.7 to 24.0 ms; at work_us 10, where the run is bound by
GIL hand-offs that now cross cores, some cells lost 4-23% (tick-barrier on phold ``wide``: 18.2 to
20.7 ms).  Of two whole sweeps, the pinned one had higher GIL thread speedups (held-out work_us 30 cells
1.55-1.65x against 1.21-1.32x), so workers are pinned by default everywhere; the GIL hand-off calibration
(``tickpar.perf.prediction``) pins its two threads the same way, so the model prices the runs it predicts.

:data:`PIN_ENV` (``TICKPAR_PIN_THREADS``): unset, empty or ``1`` pins, ``0`` never.  Worker ``w``
of ``n`` goes to the ``w``-th CPU of the process's own CPU set, where that set has at least ``n`` CPUs
(with fewer, nothing is pinned).  The calling thread's own mask is restored when its block ends.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PIN_ENV", "gil_disabled", "pinned", "pinning_requested", "worker_cpus"]

#: ``0``: leave the Python thread strategies' workers to the scheduler; unset, empty or ``1``: pin them (the
#: native engine always pins).
PIN_ENV = "TICKPAR_PIN_THREADS"


def gil_disabled() -> bool:
    """Whether this interpreter runs Python threads in parallel (a free-threaded build with the GIL off)."""
    is_enabled = getattr(sys, "_is_gil_enabled", None)
    return is_enabled is not None and not is_enabled()


def pinning_requested() -> bool:
    """Whether Python workers are pinned: :data:`PIN_ENV` ``0`` no; unset, empty or ``1`` yes.

    A value other than 0, 1 or empty is a ValueError (one line, naming it).
    """
    value = os.environ.get(PIN_ENV, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"{PIN_ENV}={value!r} is not allowed: use 1 (pin worker threads), 0 (do not) or unset")
    return value != "0"


def worker_cpus(workers: int) -> list[int] | None:
    """The CPUs that workers ``0 .. workers-1`` run on, in order; None: leave them unpinned.

    None for fewer than 2 workers, where pinning is off (:func:`pinning_requested`), where the
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
