"""Cost presets and where their figures come from: the overheads a parallel engine adds, per preset.

:class:`Overheads` (``o_event``, ``o_sync(P)``, ``o_msg``) prices the structural bounds
(:mod:`tickpar.perf.predict.bounds`); :class:`Preset` adds the work model and the GIL for the strategy model
(:mod:`tickpar.perf.predict.strategy_times`).  The sync cost is one function, :func:`sync_cost` (``a + b * log2 P``).
The ``cxx`` preset reads the native engine's calibration file (:func:`cxx_costs`); the Python
figures are measured by :mod:`tickpar.perf.predict.calibrate`.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tickpar.kernel.work import GIL_RELEASE_MIN_BYTES

__all__ = [
    "BACKENDS",
    "CALIBRATION_ENV",
    "FLOOR_OF",
    "PRESETS",
    "Overheads",
    "Preset",
    "beside_floor",
    "calibration_figures",
    "cxx_calibration",
    "cxx_costs",
    "cxx_overheads",
    "fit_sync",
    "preset",
    "sync_cost",
]

#: Where the ``cxx`` preset looks for the native engine's calibration (``tickpar calibrate --out FILE``).
CALIBRATION_ENV = "TICKPAR_CALIBRATION"
DEFAULT_CALIBRATION = "results/calibration.json"


def cxx_calibration(path: str | Path | None = None) -> dict[str, Any]:
    """The native engine's measured costs: ``path``, else ``$TICKPAR_CALIBRATION``, else ``results/calibration.json``.

    Without any file, and with the native engine built, they are measured now (``file`` says so).  The
    record is ``tickpar calibrate``'s JSON (``mutex_ns``, ``barrier_ns``, ``message_ns``, ``event_ns``,
    the machine and the date; newer files also ``tb_batch_ns``, ``pingpong_ns`` and ``heap_ns``) plus
    ``file``, the file it came from.
    """
    import os

    chosen = path or os.environ.get(CALIBRATION_ENV) or None
    candidate = Path(chosen) if chosen else Path(DEFAULT_CALIBRATION)
    if candidate.is_file():
        data = json.loads(candidate.read_text())
        missing = [k for k in ("mutex_ns", "barrier_ns", "message_ns", "event_ns") if k not in data]
        if missing:
            raise ValueError(f"{candidate}: not a tickpar calibration (no {', '.join(missing)})")
        return {**data, "file": str(candidate)}
    if chosen:
        raise ValueError(f"calibration file {chosen} does not exist: write it with `tickpar calibrate --out {chosen}`")
    from tickpar import native

    if not native.available():
        raise ValueError(
            f"the cxx preset needs the native engine's calibration: no {DEFAULT_CALIBRATION}, and {native.BUILD_HINT}"
        )
    return dict(measured_now())


@functools.cache
def measured_now() -> dict[str, Any]:
    """One live calibration per process: a table priced without a file is priced at one set of costs, not
    at a fresh (and different) measurement per row, each taking half a second."""
    from tickpar import native

    return {**native.calibrate(0.3), "file": "measured now (no calibration file)"}


#: The floor each native cost is read against (:func:`beside_floor`): a hand-off between two cores moves at
#: least one cache line each way (``pingpong_ns``), and a queue pops and pushes at least as a plain binary
#: heap does (``heap_ns``).
FLOOR_OF: dict[str, str] = {
    "mutex_ns": "pingpong_ns",
    "barrier_ns": "pingpong_ns",
    "message_ns": "pingpong_ns",
    "tb_batch_ns": "pingpong_ns",
    "tb_event_ns": "pingpong_ns",
    "event_ns": "heap_ns",
}


def _known(value: Any) -> float | None:
    """A positive, finite figure, else None (absent in an older file, or not measured)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def beside_floor(calibration: Mapping[str, Any], key: str) -> str:
    """``key`` of a native calibration and its multiple of its floor (:data:`FLOOR_OF`): for ``barrier_ns``
    ``"78.6 ns = 1.2 x pingpong"``; a floor itself is just ``"65.3 ns"``.

    The one place the CLI (``tickpar bounds --overheads cxx``) and the report format these figures.  A figure
    or floor the file lacks (written before it was measured) reads ``n/a``.
    """
    value = _known(calibration.get(key))
    if value is None:
        return "n/a"
    text = f"{value:.1f} ns"
    floor = FLOOR_OF.get(key)
    if floor is None:
        return text
    base = _known(calibration.get(floor))
    name = floor.removesuffix("_ns")
    if base is None:
        return f"{text} = n/a x {name}"
    ratio = value / base
    return f"{text} = {ratio:.2f} x {name}" if ratio < 1 else f"{text} = {ratio:.1f} x {name}"


def calibration_figures(calibration: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, text)``: the floors, then every cost :data:`FLOOR_OF` names beside its floor (:func:`beside_floor`)."""
    floors = dict.fromkeys(FLOOR_OF.values())
    return [(key, beside_floor(calibration, key)) for key in (*floors, *FLOOR_OF)]


def cxx_costs(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The ``cxx`` preset's costs (seconds), each with where it was measured (:func:`cxx_calibration`).

    ``event_s``: the native queue's schedule + pop + replay bookkeeping per event; ``o_event_s``: one
    uncontended mutex lock/unlock per event (split's name mutex, gem5's async-insert lock);
    ``sync_a_s`` = 0 and ``sync_b_s``: one 2-thread round of the engine's spinning barrier per
    doubling of ``P`` (a tree barrier: measured at ``P = 2``, a model beyond); ``o_msg_s``: one
    cross-thread message.
    """
    cal = cxx_calibration(path)
    where = f"{cal['file']} ({cal.get('date', '?')}, {cal.get('machine', {}).get('cpu', '?')})"
    return {
        "event_s": {"value": cal["event_ns"] * 1e-9, "source": f"event_ns in {where}"},
        "o_event_s": {"value": cal["mutex_ns"] * 1e-9, "source": f"mutex_ns in {where}"},
        "sync_a_s": {"value": 0.0, "source": f"fit: o_sync(P) = b log2(P) through its one measured point, barrier_ns "
                     f"at P = 2 in {where} (one point: a = 0, b = barrier_ns)"},
        "sync_b_s": {"value": cal["barrier_ns"] * 1e-9, "source": f"barrier_ns (2 threads) in {where}"},
        "o_msg_s": {"value": cal["message_ns"] * 1e-9, "source": f"message_ns in {where}"},
        "file": {"value": 0.0, "source": str(cal["file"])},
        # Older calibration files have no tick-barrier batch cost: the barrier round stands in (NaN here).
        "tb_batch_s": {"value": cal["tb_batch_ns"] * 1e-9 if "tb_batch_ns" in cal else math.nan,
                       "source": f"tb_batch_ns in {where}" if "tb_batch_ns" in cal else "none"},
        # Files before the per-event fit: tb_batch_ns held both parts; nothing per event then.
        "tb_event_s": {"value": cal["tb_event_ns"] * 1e-9 if "tb_event_ns" in cal else 0.0,
                       "source": f"tb_event_ns in {where}" if "tb_event_ns" in cal else "none"},
    }  # fmt: skip


# -- overheads -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Overheads:
    """Per-event cost ``o_event``, per-synchronisation cost ``o_sync`` and per-message cost ``o_msg`` (seconds).

    ``o_sync`` is one number, or a table by worker count (calibrated), or a
    function of the worker count (a fitted model, :mod:`tickpar.perf.predict.prediction`).
    ``o_msg`` is paid by the receiving LP for each event that crosses LPs.
    """

    name: str
    o_event: float = 0.0
    o_sync: float | dict[int, float] | Callable[[int], float] = 0.0
    o_msg: float = 0.0
    source: str = ""
    """Where the figures come from (the ``cxx`` preset: its calibration file)."""

    def sync(self, workers: int) -> float:
        if callable(self.o_sync):
            return float(self.o_sync(workers))
        if isinstance(self.o_sync, dict):
            if workers in self.o_sync:
                return self.o_sync[workers]
            known = sorted(self.o_sync)
            below = [p for p in known if p <= workers]
            return self.o_sync[below[-1] if below else known[0]]
        return float(self.o_sync)


def cxx_overheads(path: str | Path | None = None) -> Overheads:
    """The native engine's measured overheads (:func:`cxx_costs`): a mutex per event, ``a + b log2 P`` per sync."""
    costs = cxx_costs(path)
    sync = sync_cost(costs["sync_a_s"]["value"], costs["sync_b_s"]["value"])
    return Overheads("cxx", costs["o_event_s"]["value"], sync, costs["o_msg_s"]["value"], costs["file"]["source"])

PRESETS = ("here", "cxx")
BACKENDS = ("threads", "processes", "mpi")
#: The engine whose measured speedups each preset is checked against: ``here`` is this machine's Python
#: costs, ``cxx`` the native engine's (a ``tickpar calibrate`` file).
PRESET_ENGINE = {"here": "python", "cxx": "native"}
#: A work_overlap size measured while a core was less available than this is left out: it measured the
#: sharing, not the hand-off (an idle core probes at 0.995 or more; figures in
#: docs/measurements/2026-12-06-perf-comments.md).
OVERLAP_MIN_CPU = 0.98


# -- presets -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preset:
    """Costs of one preset for one backend and work mode (seconds)."""

    name: str
    backend: str
    work_mode: str
    overheads: Overheads
    event_s: float | None
    """Engine cost per event; ``None``: the DAG's recorded ``cost_s``."""
    work_per_call_s: float
    work_per_us_s: float
    gil: bool
    """Python threads: only GIL-releasing work runs in parallel."""
    gil_hold_below_us: float = 0.0
    """``gil-release`` work: a call shorter than this hashes fewer than the calibration's
    ``gil_release_bytes`` (:func:`gil_release_bytes`) and holds the GIL (from the calibrated hash
    rate; 0: unknown, every call releases it)."""
    work_overlap: tuple[tuple[float, float], ...] = ()
    """Threads, ``gil-release``: ``(call µs, inflation)`` pairs: how much longer a GIL-releasing work call
    takes a thread while another thread makes such calls too than alone (the GIL hand-off around each
    call, and whatever else the two share), measured by :func:`work_overlap`; empty: none (1)."""

    gil_excess: tuple[tuple[float, float], ...] = ()
    """Threads under the GIL: ``(call µs, seconds)`` pairs: how much longer an iteration of "hold the GIL,
    then one GIL-releasing call" takes a thread while a second thread does the same than the larger of
    its own time and both holds, measured by :func:`gil_handoff` (the GIL's hand-off to a sleeping
    thread); empty: not measured (:attr:`work_overlap` stands in)."""
    thread_excess: tuple[tuple[float, float], ...] = ()
    """Threads under the GIL, one strategy: ``(call µs, seconds)`` pairs: the excess per GIL-releasing call that
    the strategy's own 2-worker runs on the calibration shape show
    (:func:`tickpar.perf.predict.handoff.thread_handoff`);
    where non-empty it replaces :attr:`gil_excess`, priced the same way; empty: not calibrated for it."""
    tb_event_s: float = 0.0
    """Tick-barrier, ``P >= 2``: its batch machinery's own cost per event of a parallel batch (grouping,
    deferred insertions, the commit's replay), measured by :func:`tick_barrier_costs`; 0: none."""
    tb_batch_s: float | None = None
    """Tick-barrier, ``P >= 2``, threads: the cost of handing a batch to the helper threads and back, per
    parallel batch, at two workers (:func:`tick_barrier_costs`); ``None``: the threads exchange ``o_sync``."""

    def excess_s(self, per_call_us: np.ndarray) -> np.ndarray:
        """The excess per GIL-releasing call at each call size: :attr:`thread_excess` where calibrated, else
        :attr:`gil_excess` (log-linear between the measured sizes, flat beyond; 0 unmeasured)."""
        return _by_call_size(self.thread_excess or self.gil_excess, per_call_us, 0.0)

    def inflation(self, per_call_us: np.ndarray) -> np.ndarray:
        """:attr:`work_overlap` at each call size (log-linear between the measured sizes, flat beyond; 1 unmeasured)."""
        return _by_call_size(self.work_overlap, per_call_us, 1.0)


def _by_call_size(pairs: tuple[tuple[float, float], ...], per_call_us: np.ndarray, unmeasured: float) -> np.ndarray:
    """``(call µs, value)`` pairs at each call size: linear in log(size) between them, flat beyond."""
    if not pairs:
        return np.full_like(per_call_us, unmeasured, dtype=np.float64)
    xs = np.log([max(u, 1e-9) for u, _ in pairs])
    ys = np.asarray([v for _, v in pairs], dtype=np.float64)
    return np.interp(np.log(np.maximum(per_call_us, 1e-9)), xs, ys)


def fit_sync(points: Mapping[int, float]) -> tuple[float, float]:
    """``(a, b)`` of ``o_sync(P) = a + b * log2(P)``, least squares over the measured ``P`` (``b >= 0``)."""
    ps = sorted(int(p) for p in points)
    if not ps:
        raise ValueError("no sync measurements to fit")
    x = np.log2(np.asarray(ps, dtype=np.float64))
    y = np.asarray([float(points[p]) for p in ps], dtype=np.float64)
    if len(ps) == 1 or np.ptp(x) == 0:
        return float(y.mean()), 0.0
    b, a = np.polyfit(x, y, 1)
    if b < 0:
        return float(y.mean()), 0.0
    return float(a), float(b)


def sync_cost(a: float, b: float) -> Callable[[int], float]:
    """The sync cost of every preset: ``o_sync(P) = a + b * log2(P)`` (seconds per barrier or window) for
    ``P >= 2``, and 0 at ``P = 1`` (one worker synchronises with nobody).  ``(a, b)``: :func:`fit_sync`'s."""

    def sync(workers: int) -> float:
        return 0.0 if workers <= 1 else a + b * math.log2(workers)

    return sync


def preset(
    name: str, backend: str, work_mode: str, calibration: Mapping[str, Any] | None = None, strategy: str | None = None
) -> Preset:
    """The costs of preset ``name`` (``here`` needs :func:`calibrate`'s record) for a backend and work mode.

    ``strategy``: the strategy priced; on threads under ``gil-release`` its own hand-off excess per call
    (the calibration's ``thread_handoff``, :attr:`Preset.thread_excess`) is taken where it was measured.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is not allowed: one of {', '.join(BACKENDS)}")
    if name == "cxx":
        cxx = cxx_costs()
        batch = cxx["tb_batch_s"]["value"]
        return Preset("cxx", backend, work_mode, cxx_overheads(), cxx["event_s"]["value"], 0.0, 1e-6, gil=False,
                      tb_batch_s=None if math.isnan(batch) else batch,
                      tb_event_s=cxx["tb_event_s"]["value"])  # fmt: skip
    if name != "here":
        raise ValueError(f"preset {name!r} is not allowed: one of {', '.join(PRESETS)}")
    if calibration is None:
        raise ValueError("preset 'here' needs a calibration (tickpar.perf.predict.prediction.calibrate)")
    a, b = calibration["sync_model"][backend]
    sync = sync_cost(a, b)
    costs = Overheads("here", calibration["o_event_s"], sync, calibration["o_msg_s"][backend])
    per_call, per_us = calibration["work"].get(work_mode, (0.0, 0.0))
    rate = float(calibration.get("work_units_per_us", {}).get("gil-release", 0.0))
    # The smallest hash that lets another thread run, as measured (gil_release_bytes); older records: the
    # interpreter's documented threshold (provenance says which).
    release_bytes = calibration.get("gil_release_bytes", GIL_RELEASE_MIN_BYTES)
    release_bytes = math.inf if release_bytes is None else float(release_bytes)
    hold_below = release_bytes / rate if rate > 0 and work_mode == "gil-release" else 0.0
    overlap = calibration.get("work_overlap", {}) if work_mode == "gil-release" and backend == "threads" else {}
    sizes, factors = overlap.get("call_us", ()), overlap.get("inflation", ())
    free = overlap.get("cpu_available", [1.0] * len(sizes))
    pairs = tuple(sorted((float(u), max(1.0, float(f))) for u, f, a in zip(sizes, factors, free, strict=True)
                         if float(a) >= OVERLAP_MIN_CPU))  # fmt: skip  # measured while another process shared a core
    handoff = calibration.get("gil_handoff", {}) if work_mode == "gil-release" and backend == "threads" else {}
    excess = _excess_pairs(handoff.get("call_us", ()), handoff.get("excess_s", ()), handoff.get("cpu_available", ()))
    own = _thread_excess(calibration, strategy) if work_mode == "gil-release" and backend == "threads" else ()
    tb = calibration.get("tick_barrier") or {}
    tb_ok = bool(tb) and float(tb.get("cpu_available", 0.0)) >= OVERLAP_MIN_CPU
    return Preset("here", backend, work_mode, costs, None, per_call, per_us, gil=backend == "threads",
                  gil_hold_below_us=hold_below, work_overlap=pairs, gil_excess=excess, thread_excess=own,
                  tb_event_s=float(tb["event_s"]) if tb_ok else 0.0,
                  tb_batch_s=float(tb["batch_s"]) if tb_ok else None)  # fmt: skip


def _thread_excess(calibration: Mapping[str, Any], strategy: str | None) -> tuple[tuple[float, float], ...]:
    """``strategy``'s ``(call µs, excess s)`` pairs from the calibration's ``thread_handoff`` (sizes measured with a
    core less than :data:`OVERLAP_MIN_CPU` available left out); empty where it was not calibrated."""
    handoff = calibration.get("thread_handoff") or {}
    own = (handoff.get("strategies") or {}).get(strategy or "")
    if not own:
        return ()
    return _excess_pairs(handoff.get("call_us", ()), own["excess_s"], handoff.get("cpu_available", ()))


def _excess_pairs(
    sizes: Sequence[float], excess: Sequence[float], free: Sequence[float]
) -> tuple[tuple[float, float], ...]:
    """``(call µs, excess s)`` pairs by size, each at least 0; as with work_overlap, sizes measured with a core
    less than :data:`OVERLAP_MIN_CPU` available are left out (a shared core measures the sharing)."""
    return tuple(sorted((float(u), max(0.0, float(e))) for u, e, a in zip(sizes, excess, free, strict=True)
                        if float(a) >= OVERLAP_MIN_CPU))  # fmt: skip
