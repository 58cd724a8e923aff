"""Pinning a parallel run's worker threads to cores of their own, for the length of the run.

Why it exists: a thread started on a machine whose other cores are idle (halted) lands on its
parent's core, and Linux's load balancer does not always move it, so two workers take turns on one
core; this hit native replays, free-threaded threads and GIL threads alike, and pinning gained more
than it lost (docs/measurements/2026-12-03-thread-pinning.md).  The native engine always pins its
``std::thread`` workers (``pinned`` in its stats); Python workers are pinned by default, and the GIL
hand-off calibration (``tickpar.perf``) pins its two threads the same way, so the model prices the
runs it predicts.

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
