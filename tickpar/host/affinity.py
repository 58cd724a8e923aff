"""Pinning a parallel run's worker threads to cores of their own, for the length of the run.

Why it exists: a thread started on a machine whose other cores are idle (halted) lands on its
parent's core, and Linux's load balancer does not always move it.  Measured here (2 vCPUs): a
native replay after a 50 ms idle spell took 1.4 ms instead of 0.5 ms, its two threads taking turns
on one core; the native engine therefore always pins its ``std::thread`` workers (``pinned`` in its
stats).  The same happens to Python threads that never sleep: on the free-threaded build (3.13t,
GIL off) a null-message conservative run of phold ``wide`` at work_us 300 (gil-hold, 2 workers)
took 284-290 ms a loop with each thread idle 140 ms (two runs), and 157-170 ms pinned (idle 7-24
ms).  Under the GIL the threads hand the GIL over at every work call, and each wake-up lets the
scheduler place them, so there it is left to the scheduler.

:data:`PIN_ENV` (``TICKPAR_PIN_THREADS``): unset or empty pins where the GIL is off
(:func:`gil_disabled`), ``1`` always, ``0`` never.  Worker ``w`` of ``n`` goes to the ``w``-th CPU
of the process's own CPU set, where that set has at least ``n`` CPUs (with fewer, nothing is
pinned).  The calling thread's own mask is restored when its block ends.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PIN_ENV", "gil_disabled", "pinned", "pinning_requested", "worker_cpus"]

#: ``1``: pin the Python thread strategies' workers; ``0``: never; unset: where the GIL is off (the native
#: engine always pins).
PIN_ENV = "TICKPAR_PIN_THREADS"


def gil_disabled() -> bool:
    """Whether this interpreter runs Python threads in parallel (a free-threaded build with the GIL off)."""
    is_enabled = getattr(sys, "_is_gil_enabled", None)
    return is_enabled is not None and not is_enabled()


def pinning_requested() -> bool:
    """Whether Python workers are pinned: :data:`PIN_ENV` ``1``/``0``, unset: :func:`gil_disabled`.

    A value other than 0, 1 or empty is a ValueError (one line, naming it).
    """
    value = os.environ.get(PIN_ENV, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"{PIN_ENV}={value!r} is not allowed: use 1 (pin worker threads), 0 (do not) or unset")
    return gil_disabled() if value == "" else value == "1"


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
