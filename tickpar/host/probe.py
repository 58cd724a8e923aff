"""The CPU-availability probe: a short spin on each usable core, the share of the wall time it got.

The timing driver (:mod:`tickpar.perf.timing.driver`) probes before and after every timed round, and the
calibrations (:mod:`tickpar.perf.predict.calibrate`) around each measurement, to tell the machine's load from
what they measure.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

__all__ = [
    "cpu_availability",
]
#: Spin time per core of one CPU-availability probe (seconds); at most _PROBE_TOTAL_S over all cores.
_PROBE_PER_CORE_S = 0.05
_PROBE_TOTAL_S = 0.8


# ---------------------------------------------------------------- contention


def cpu_availability(per_core_s: float = _PROBE_PER_CORE_S, cores: Sequence[int] | None = None) -> dict[str, Any]:
    """The share of wall time a busy loop gets on each usable core (1.0: nobody else wants that core).

    The calling thread is pinned to each core in turn and spins for ``per_core_s``
    (shortened so that all cores together take at most 0.8 s); the CPU time it
    received over the wall time it spun is that core's availability.  Where the
    platform cannot pin threads, the probe spins unpinned once.  Returns
    ``{"min": ..., "per_core": {core: share}}``.
    """
    pinnable = hasattr(os, "sched_getaffinity") and hasattr(os, "sched_setaffinity")
    original = os.sched_getaffinity(0) if pinnable else None
    targets = list(cores) if cores is not None else (sorted(original) if original else [-1])
    spin = min(per_core_s, _PROBE_TOTAL_S / max(1, len(targets)))
    shares: dict[int, float] = {}
    try:
        for core in targets:
            if pinnable and core >= 0:
                os.sched_setaffinity(0, {core})
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            end = wall0 + spin
            while time.perf_counter() < end:
                pass
            wall = time.perf_counter() - wall0
            shares[core] = min(1.0, (time.thread_time() - cpu0) / wall) if wall > 0 else 1.0
    finally:
        if pinnable and original is not None:
            os.sched_setaffinity(0, original)
    return {"min": min(shares.values()), "per_core": shares}
