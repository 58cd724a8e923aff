"""Synthetic event work of a given duration, in three recorded modes.

* ``gil-release``: SHA-256 over a buffer sized to the duration.  CPython
  releases the GIL while hashing buffers above 2047 bytes, so threads truly
  overlap; below that size (a call of a microsecond or two) the call holds the GIL.
* ``gil-hold``: a calibrated pure-Python loop; threads serialise on the GIL,
  processes and MPI ranks do not.
* ``none``: no work; the run measures the engine and synchronisation alone.

Calibration runs once per process (a few tens of milliseconds) and its result
is recorded with every run, since it is what turns ``work_us`` into seconds.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["WORK_MODES", "WorkModel", "make_work", "set_rate", "thread_view"]

WORK_MODES = ("gil-release", "gil-hold", "none")

# CPython hashes inline (holding the GIL) below this many bytes (Modules/hashlib.h HASHLIB_GIL_MINSIZE).
GIL_RELEASE_MIN_BYTES = 2048


@dataclass(frozen=True)
class WorkModel:
    """How ``work(us)`` is done in this process; recorded with every result."""

    mode: str
    units_per_us: float
    """Bytes hashed (gil-release) or loop iterations (gil-hold) per microsecond."""

    def describe(self) -> dict[str, object]:
        unit = {"gil-release": "sha256 bytes", "gil-hold": "python loop iterations", "none": "-"}[self.mode]
        return {
            "mode": self.mode,
            "units_per_us": round(self.units_per_us, 3),
            "unit": unit,
            "gil_release_min_bytes": GIL_RELEASE_MIN_BYTES if self.mode == "gil-release" else None,
        }


_BUFFER = bytes(range(256)) * 4096  # 1 MiB; slices are views, so no copy per call
_calibrated: dict[str, float] = {}
_THREAD = threading.local()


def thread_view() -> memoryview:
    """The calling thread's own memoryview of the buffer (slices of it are what gil-release work hashes).

    One view per thread, never shared: on a free-threaded build (CPython 3.13t) a memoryview's export
    count is not atomic, so threads slicing one shared view at once can lose an update and release
    the view for good ("operation forbidden on released memoryview object"); under the GIL it was.
    """
    try:
        return _THREAD.view  # type: ignore[no-any-return]
    except AttributeError:
        view = _THREAD.view = memoryview(_BUFFER)
        return view


def _spin(n: int) -> int:
    acc = 0
    for i in range(n):
        acc ^= i
    return acc


def _median_rate(run: Callable[[int], object], size: int) -> float:
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        run(size)
        dt = time.perf_counter() - t0
        rates.append(size / (dt * 1e6))
    rates.sort()
    return rates[len(rates) // 2]


def calibrate(mode: str) -> float:
    """Units per microsecond for ``mode`` on this machine (cached per process)."""
    if mode not in WORK_MODES:
        raise ValueError(f"work mode {mode!r} is not allowed: choose one of {', '.join(WORK_MODES)}")
    if mode == "none":
        return 0.0
    if mode not in _calibrated:
        if mode == "gil-release":
            view = thread_view()
            rate = _median_rate(lambda n: hashlib.sha256(view[:n]).digest(), 512 * 1024)
        else:
            rate = _median_rate(_spin, 200_000)
        _calibrated[mode] = rate
    return _calibrated[mode]


def set_rate(mode: str, units_per_us: float) -> None:
    """Use ``units_per_us`` for ``mode`` in this process instead of calibrating here.

    A timing job calibrates once and gives every pyperf worker the same rate, so
    that every cell of a speedup does the same work per event (two processes'
    own calibrations differ by a few percent).
    """
    if mode not in WORK_MODES or mode == "none":
        raise ValueError(f"work mode {mode!r} has no rate: choose gil-release or gil-hold")
    if not units_per_us > 0:
        raise ValueError(f"work rate {units_per_us!r} is not allowed: units per microsecond > 0")
    _calibrated[mode] = float(units_per_us)


def make_work(mode: str) -> tuple[Callable[[float], None], WorkModel]:
    """A ``work(us)`` function for ``mode`` and the model that describes it."""
    rate = calibrate(mode)
    model = WorkModel(mode, rate)
    if mode == "none":

        def work(us: float) -> None:
            return None

    elif mode == "gil-release":
        limit = len(_BUFFER)
        sha256 = hashlib.sha256
        local = _THREAD

        def work(us: float) -> None:
            n = int(us * rate)
            try:
                view = local.view
            except AttributeError:
                view = thread_view()
            while n > limit:
                sha256(view).digest()
                n -= limit
            if n > 0:
                sha256(view[:n]).digest()

    else:

        def work(us: float) -> None:
            _spin(int(us * rate))

    return work, model
