"""A wake-up signal between worker threads that spins briefly before it blocks.

Why it exists: a thread blocked in ``threading.Event.wait`` (a futex) takes a wake-up to run
again once another thread sets the event: the kernel must wake it and schedule it, and a
tick-barrier helper on the free-threaded build lost a noticeable share of its loop that way
(docs/measurements/2026-12-03-freethreaded.md).  Where two threads run in parallel on cores of
their own, the waiter can instead watch a counter for a while and see the ring almost at once.

Under the GIL a spinning thread would hold the lock that the thread it waits for needs, so there
the doorbell blocks at once (``spin_s == 0``), as ``threading.Event`` does.

A :class:`Doorbell` is a counter: :meth:`ring` adds one, :meth:`wait_past` returns once the
count differs from the one the waiter last saw.  A count (rather than a flag that the waiter
clears) cannot lose a ring or see one twice: a flag set by one thread and cleared by another
races with the next set.
"""

from __future__ import annotations

import threading
from time import perf_counter

from tickpar.host.affinity import gil_disabled

__all__ = ["SPIN_S", "Doorbell", "spin_budget"]

#: How long a waiter watches the count before it blocks, where threads run in parallel: longer than the
#: serial stretch between two batches or windows of a Python strategy (docs/measurements/2026-12-03-freethreaded.md),
#: short enough that a waiter whose partner is busy for long gives its core back.
SPIN_S = 0.002


def spin_budget(parallel_cores: bool) -> float:
    """The spin a waiter may use: :data:`SPIN_S` where the GIL is off and each worker has its own core, else 0."""
    return SPIN_S if parallel_cores and gil_disabled() else 0.0


class Doorbell:
    """A ring counter with a spin-then-block wait (see the module docstring)."""

    __slots__ = ("_cond", "_sleepers", "count", "spin_s")

    def __init__(self, spin_s: float = 0.0) -> None:
        if spin_s < 0:
            raise ValueError(f"Doorbell spin_s={spin_s!r} is not allowed: use a duration >= 0 (seconds)")
        self.count = 0
        self.spin_s = spin_s
        self._cond = threading.Condition(threading.Lock())
        self._sleepers = 0

    def ring(self) -> None:
        """Add one to the count and wake any thread blocked in :meth:`wait_past`."""
        with self._cond:
            self.count += 1
            if self._sleepers:
                self._cond.notify_all()

    def wait_past(self, seen: int, timeout: float | None = None) -> int | None:
        """Return the count once it differs from ``seen``; None if ``timeout`` seconds pass first.

        The count is read without the lock while spinning (a stale read only spins once more) and
        under it before blocking, so a ring between the two cannot be missed.
        """
        count = self.count
        if count != seen:
            return count
        if self.spin_s:
            deadline = perf_counter() + self.spin_s
            while perf_counter() < deadline:
                count = self.count
                if count != seen:
                    return count
        with self._cond:
            self._sleepers += 1
            try:
                if not self._cond.wait_for(lambda: self.count != seen, timeout):
                    return None
                return self.count
            finally:
                self._sleepers -= 1
