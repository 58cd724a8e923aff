"""Cost presets, each strategy's bound and its predicted scaling, per workload shape (DESIGN §9).

One event DAG per shape (and order) is recorded with *metered* work
(:func:`tickpar.perf.bounds.record_dag`, ``meter_work=True``: the engine and handler
cost of each event, and the ``work_us`` it asked for), so a shape costs one
work-free sequential run whatever its ``work_us``.  A cost preset turns it into
seconds:

``here`` (:func:`calibrate`, measured once per sweep on this machine)
    engine cost per event: the recorded ``cost_s``; synthetic work: the work
    model's ``per_call_s + per_us_s * us``, fitted from timed calls;
    ``o_event``: the sequential engine's own per-event cost with no work;
    sync per batch/window ``o_sync(P) = a + b * log2(P)`` (0 at ``P = 1``),
    fitted (least squares, ``b >= 0``) to window exchanges measured at
    ``2 <= P <= cores`` only, never oversubscribed, and extrapolated beyond:
    each of ``P`` LPs sends a packet to every other and waits for theirs, over
    the strategy's own transports (:class:`tickpar.pdes.transport.ThreadTransport` between
    threads, :class:`tickpar.pdes.transport.SocketTransport` between forked processes);
    MPI takes the processes figure (no ``mpiexec`` during calibration; MPICH's
    spinning exchange is faster, so an MPI run may beat its "bound"); a tick-barrier
    batch is charged the threads exchange; ``o_msg`` per cross-LP event: a locked deque hand-off (threads) or a
    pickle round trip of a message tuple (processes, MPI).  With a threads
    backend the GIL serialises everything but GIL-releasing work, so a
    threads run also takes at least the sum of the engine costs plus
    ``o_event`` per event (plus the work under ``gil-hold``).
``cxx`` (the native C++ engine's costs, :func:`tickpar.perf.bounds.cxx_costs`: a ``tickpar calibrate`` file)
    engine cost per event replaced by the native engine's, work as requested, no GIL.

Per strategy (:func:`strategy_time`): ``sequential`` is the reference (1);
``split`` pops every event under one queue lock (``max(work / P, events *
o_event)``); ``tick-barrier`` and ``conservative`` (``sync=window`` or
``null-message``, ``P`` LPs) are :mod:`tickpar.perf.bounds`' structural models
(tick-barrier groups by component, also for ``lock_key=name``, which is exact
only where names and components coincide).
Two things, never confused (DESIGN §9):

the *bound* (``bound_speedup``; ``bound`` in ``prediction.csv``; preset ``here``)
    the DAG's zero-overhead limit under the strategy's *actual* assignment: no
    ``o_event``, ``o_sync``, ``o_msg`` or GIL floor at any ``P``; tick-barrier's
    bins with each batch's makespan ``max(largest group, work / P)``;
    conservative's windows over the partition its own plan makes
    (:func:`strategy_partition`: ``partition``, ``partition_weights``); split
    ``max(work / P, critical path)``.  Exactly 1 at ``P = 1``.  The DAG is
    recorded several times and each event keeps its least cost.  A measured
    exact speedup above it is a defect (``above_bound``; the report lists it).
the *model* (``predicted_speedup``; ``model`` in ``prediction.csv``; both presets, ``P = 1, 2, 4, ... 64``)
    the same assignment with the preset's overheads added, groups scheduled
    longest first (LPT).  ``model_sources``/``bound_sources`` say where each
    figure comes from (:func:`provenance`: calibration file, fit or DAG).  Both are loop-only: process and rank
start-up are not modelled, so they compare with ``loop_speedup`` where the
summary has it.  ``ideal_speedup`` is the unconstrained critical-path bound,
``min(P, work / critical path)``, without overheads.

Fitted and calibrated beyond that (issue #17): conservative's ``o_event`` from its own 1-worker runs
(:func:`one_worker_fits`; the table step prices the model again from the DAGs each shape record
keeps, :func:`model_rows`), the GIL-release hash size (``gil_release_bytes``, measured) and, on threads
at ``P >= 2``, what two threads lose to the GIL's hand-offs per GIL-releasing call (``gil_handoff``:
added to each thread's time, half of it to the GIL floor; older calibrations: the two-thread work
overlap, ``work_overlap``) and tick-barrier's own costs (``tick_barrier``: its batch
machinery per event and its hand-off per batch, measured on a work-free shape of its own).
``validation`` in ``prediction.csv`` says whether a measured point was fitted on (``fit``), predicted
(``sweep``) or on a held-out shape.

Outputs: one JSON per shape (:func:`shape_bounds`, ``results/bounds/{workload}/{shape}.json``),
the summary columns (:func:`bound_columns`) and ``results/prediction.csv``
(:func:`prediction_table`).
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import pickle
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tickpar.kernel.work import GIL_RELEASE_MIN_BYTES
from tickpar.kernel.work import calibrate as work_rate
from tickpar.native.engine import TB_CALIBRATION_SHAPE
from tickpar.perf.bounds import (
    Dag,
    Overheads,
    balanced_partition,
    calibrate_event_cost,
    critical_path,
    cxx_costs,
    cxx_overheads,
    null_message_time,
    record_dag,
    tick_barrier_time,
    window_time,
)
from tickpar.plugins import BASELINE, LookaheadError, RunSpec

__all__ = [
    "BACKENDS",
    "BOUND_TOLERANCE",
    "MODELLED",
    "PREDICTION_COLUMNS",
    "PREDICT_WORKERS",
    "PRESETS",
    "VALIDATION",
    "Preset",
    "bound_columns",
    "calibrate",
    "fit_sync",
    "gil_release_bytes",
    "least_cost_dag",
    "measured_speedups",
    "model_rows",
    "one_worker_fits",
    "prediction_table",
    "preset",
    "provenance",
    "shape_bounds",
    "strategy_partition",
    "strategy_time",
]

PRESETS = ("here", "cxx")
#: Strategies with a structural model (:func:`strategy_time`); others get no bound (their cells: NaN).
MODELLED = (BASELINE, "split", "tick-barrier", "conservative")
PREDICT_WORKERS = (1, 2, 4, 8, 16, 32, 64)
BACKENDS = ("threads", "processes", "mpi")
PREDICTION_COLUMNS = (
    "workload", "shape", "strategy", "variant", "preset", "workers",
    "predicted_speedup", "measured_speedup", "rel_error", "order", "work",
    "bound", "model", "above_bound", "bound_sources", "model_sources", "engine",
    "validation", "measured_lo", "measured_hi", "above_bound_point",
)  # fmt: skip
"""``prediction.csv``'s columns.  ``model`` is ``predicted_speedup`` (the preset's overheads added) and
``rel_error`` its error; ``bound`` the zero-overhead limit under the strategy's own assignment (preset
``here`` only; NaN for ``cxx``); ``above_bound`` whether the measured point exceeds it (a defect);
``bound_sources``/``model_sources``: JSON, where each figure comes from (:func:`provenance`); ``engine``
the engine whose measurements the row is checked against (:data:`PRESET_ENGINE`); ``validation``: what the
measured point is to the model (:data:`VALIDATION`); ``measured_lo``/``measured_hi``: the measured speedup's
95% interval (``loop_speedup_lo``/``_hi``, median over seeds); ``above_bound`` is judged with it: the whole
interval above the bound, while ``above_bound_point`` says only that the point estimate is."""
#: ``validation`` values: ``fit`` (a 1-worker point an overhead was fitted on: its error says nothing),
#: ``sweep`` (a point of the sweep the model predicts, never fitted on), ``held-out`` (a point on a held-out
#: shape: a sweep with ``held_out: true``, config/README.md), ``none`` (nothing measured).
VALIDATION = ("fit", "sweep", "held-out", "none")
#: The engine whose measured speedups each preset is checked against: ``here`` is this machine's Python
#: costs, ``cxx`` the native engine's (a ``tickpar calibrate`` file).
PRESET_ENGINE = {"here": "python", "cxx": "native"}
SHAPE_FORMAT = "tickpar.shape-bounds/1"
#: A work_overlap size measured while a core was less available than this is left out: it measured the
#: sharing, not the hand-off.  An idle core probes at 0.995 or more; at 0.91 (a core shared part of the
#: time) two threads' 1000 us calls measured 1.74x slower than one's, while the sweep's exact 2-worker runs
#: at work_us 1000 reached 1.74-1.81x: such a figure is not the hand-off.
OVERLAP_MIN_CPU = 0.98
#: A measured speedup counts as above its bound beyond this relative margin (float rounding only:
#: a point above its bound is a defect of the bound or of the measurement, never noise to allow for).
BOUND_TOLERANCE = 1e-9


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
    call, and whatever else the two share), measured by :func:`_work_overlap`; empty: none (1)."""

    gil_excess: tuple[tuple[float, float], ...] = ()
    """Threads under the GIL: ``(call µs, seconds)`` pairs: how much longer an iteration of "hold the GIL,
    then one GIL-releasing call" takes a thread while a second thread does the same than the larger of
    its own time and both holds, measured by :func:`_gil_handoff` (the GIL's hand-off to a sleeping
    thread); empty: not measured (:attr:`work_overlap` stands in)."""
    thread_excess: tuple[tuple[float, float], ...] = ()
    """Threads under the GIL, one strategy: ``(call µs, seconds)`` pairs: the excess per GIL-releasing call that
    the strategy's own 2-worker runs on the calibration shape show (:func:`tickpar.perf.handoff.thread_handoff`);
    where non-empty it replaces :attr:`gil_excess`, priced the same way; empty: not calibrated for it."""
    tb_event_s: float = 0.0
    """Tick-barrier, ``P >= 2``: its batch machinery's own cost per event of a parallel batch (grouping,
    deferred insertions, the commit's replay), measured by :func:`_tick_barrier_costs`; 0: none."""
    tb_batch_s: float | None = None
    """Tick-barrier, ``P >= 2``, threads: the cost of handing a batch to the helper threads and back, per
    parallel batch, at two workers (:func:`_tick_barrier_costs`); ``None``: the threads exchange ``o_sync``."""

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


def _sync_fn(a: float, b: float, one_free: bool) -> Callable[[int], float]:
    def sync(p: int) -> float:
        if one_free and p <= 1:
            return 0.0
        return a + b * math.log2(max(p, 1))

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
                      tb_batch_s=None if math.isnan(batch) else batch)  # fmt: skip
    if name != "here":
        raise ValueError(f"preset {name!r} is not allowed: one of {', '.join(PRESETS)}")
    if calibration is None:
        raise ValueError("preset 'here' needs a calibration (tickpar.perf.prediction.calibrate)")
    a, b = calibration["sync_model"][backend]
    sync = _sync_fn(a, b, one_free=True)
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


# -- calibration -------------------------------------------------------------------------------
def _work_cost(mode: str) -> tuple[float, float]:
    """``(per_call_s, per_us_s)`` of the work model ``mode``: best-of timings at 2 and 50 µs, a line through them."""
    from tickpar.kernel.work import make_work

    work, _ = make_work(mode)
    sizes = (2.0, 50.0)
    took = []
    for us in sizes:
        reps = max(20, int(2000 / us))
        best = math.inf
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(reps):
                work(us)
            best = min(best, (time.perf_counter() - started) / reps)
        took.append(best)
    per_us = max(0.0, (took[1] - took[0]) / (sizes[1] - sizes[0]))
    return max(0.0, took[0] - per_us * sizes[0]), per_us


def _work_overlap(
    sizes_us: Sequence[float] = (3.0, 10.0, 30.0, 100.0, 300.0, 1000.0),
    min_cpu_available: float = OVERLAP_MIN_CPU, tries: int = 2, pause_s: float = 0.5,
) -> dict[str, list[float]]:  # fmt: skip
    """Per ``gil-release`` call size: a thread's time per call while a second thread makes the same calls, over
    one thread's alone (best of 3 each).  1 where the two overlap perfectly; about 2 where they do not at all.

    Each size is measured between two CPU-availability probes (:func:`tickpar.perf.timing.cpu_availability`),
    again after a pause where one saw less than ``min_cpu_available`` (up to ``tries`` times); the lower
    probe is recorded (``cpu_available``), and :func:`preset` leaves out a size measured below it.
    """
    from tickpar.kernel.work import make_work

    work, _ = make_work("gil-release")

    def calls(us: float, n: int) -> None:
        for _ in range(n):
            work(us)

    def both(us: float, n: int) -> float:
        other = threading.Thread(target=calls, args=(us, n), daemon=True)
        started = time.perf_counter()
        other.start()
        calls(us, n)
        other.join()
        return (time.perf_counter() - started) / n

    from tickpar.perf.timing import cpu_availability

    out: dict[str, list[float]] = {"call_us": [], "alone_s": [], "beside_s": [], "inflation": [], "cpu_available": []}
    for us in sizes_us:
        n = max(20, int(20_000 / us))
        for attempt in range(tries):
            free = float(cpu_availability(0.05)["min"])
            alone = min(_timed(lambda us=us, n=n: calls(us, n)) for _ in range(3)) / n
            beside = min(both(us, n) for _ in range(3))
            free = min(free, float(cpu_availability(0.05)["min"]))
            if free >= min_cpu_available or attempt == tries - 1:
                break
            time.sleep(pause_s)  # another process wants a core: its figure would be the sharing, not the hand-off
        out["call_us"].append(float(us))
        out["alone_s"].append(alone)
        out["beside_s"].append(beside)
        out["inflation"].append(beside / alone if alone > 0 else 1.0)
        out["cpu_available"].append(free)
    return out


#: What :func:`_gil_handoff`'s threads hold the GIL with: Python that updates objects of a working set far
#: larger than the caches, about an event's engine and handler cost here (3-6 µs), not a tight loop.  A tight
#: loop hides most of the hand-off: measured here, with a 2 µs spin the two threads lost 8 µs an iteration at
#: 10 µs calls and 3 µs at 30 µs, with 4-6 µs of this churn 28 and 10 µs.
HANDOFF_OBJECTS = 200_000
HANDOFF_UPDATES = 12


class _Churned:
    __slots__ = ("count", "last")

    def __init__(self) -> None:
        self.count = 0
        self.last = 0


def _gil_handoff(
    calls_us: Sequence[float] = (3.0, 10.0, 30.0, 100.0, 300.0), budget_us: float = 60_000.0,
    min_cpu_available: float = OVERLAP_MIN_CPU, tries: int = 2, pause_s: float = 0.5,
) -> dict[str, Any]:  # fmt: skip
    """What two threads lose to the GIL's hand-offs: each loops "hold the GIL (Python), one ``gil-release`` call".

    Per call size ``r``: one thread's time per iteration alone (``alone_s``, ``h + r``), and beside a second
    thread doing the same (``beside_s``), best of 3; ``excess_s`` is what the second thread adds beyond the
    larger of ``h + r`` and ``2 h`` (both holds, serialised by the GIL): where a call is short the two threads
    alternate and each hand-off waits for the sleeping thread to wake (bench/gil_handoff.py shows the grid
    of holds and calls).  The hold is :data:`HANDOFF_UPDATES` updates of random objects of
    :data:`HANDOFF_OBJECTS` (``hold_s``, measured alone).  CPU availability is probed around each size as in
    :func:`_work_overlap`.  The two threads are pinned as the thread strategies pin their workers
    (:mod:`tickpar.host.affinity`): unpinned, the excess at 30 µs calls was 3.8-14.2 µs over three
    calibrations here, as the scheduler placed the threads; pinned, 0.2-4.9 µs.  Empty where the GIL is off.
    """
    import random

    from tickpar.host.affinity import gil_disabled, pinned, worker_cpus
    from tickpar.kernel.work import make_work
    from tickpar.perf.timing import cpu_availability

    if gil_disabled():
        return {}
    work, _ = make_work("gil-release")
    objects = [_Churned() for _ in range(HANDOFF_OBJECTS)]
    cpus = worker_cpus(2)  # None where the strategies leave their threads unpinned

    def loop(r: float, n: int, seed: int) -> None:
        pick = random.Random(seed).randrange
        size = len(objects)
        for _ in range(n):
            for _ in range(HANDOFF_UPDATES):
                o = objects[pick(size)]
                o.count += 1
                o.last = o.count
            if r:
                work(r)

    def iterations(r: float) -> int:  # about budget_us of loop alone
        return max(300, int(budget_us / (r + 5.0)))

    def alone(r: float) -> float:
        n = iterations(r)
        with pinned(cpus, 0):  # where a strategy's worker 0 runs
            return min(_timed(lambda: loop(r, n, 1)) for _ in range(3)) / n

    def second(r: float, n: int) -> None:
        with pinned(cpus, 1):
            loop(r, n, 2)

    def both(r: float) -> float:
        n = iterations(r)
        other = threading.Thread(target=second, args=(r, n), daemon=True)
        with pinned(cpus, 0):
            started = time.perf_counter()
            other.start()
            loop(r, n, 1)
            other.join()
            return (time.perf_counter() - started) / n

    hold = alone(0.0)
    out: dict[str, Any] = {"hold_s": hold, "call_us": [], "alone_s": [], "beside_s": [], "excess_s": [],
                           "cpu_available": []}  # fmt: skip
    for r in calls_us:
        for attempt in range(tries):
            free = float(cpu_availability(0.05)["min"])
            one = alone(r)
            two = min(both(r) for _ in range(3))
            free = min(free, float(cpu_availability(0.05)["min"]))
            if free >= min_cpu_available or attempt == tries - 1:
                break
            time.sleep(pause_s)
        out["call_us"].append(float(r))
        out["alone_s"].append(one)
        out["beside_s"].append(two)
        out["excess_s"].append(max(0.0, two - max(one, 2 * hold)))
        out["cpu_available"].append(free)
    return out


def _tick_barrier_costs(repeats: int = 5) -> dict[str, Any]:
    """Tick-barrier's own overheads at two workers, from :data:`TB_CALIBRATION_SHAPE` (work none) run three ways.

    ``event_s``: per event of a parallel batch, the batch machinery's cost (two workers with the inline
    executor, which groups, defers and replays as the threads do but on one thread, against the plain
    sequential loop).  ``batch_s``: per parallel batch, the hand-off to the helper thread and back
    (threads against inline).  Best of ``repeats`` loops each; CPU availability probed around it.
    """
    from tickpar.perf.timing import cpu_availability
    from tickpar.plugins.registry import get_registry
    from tickpar.runner import resolve_cell

    def best(strategy: str, workers: int, options: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        cell = resolve_cell("phold", TB_CALIBRATION_SHAPE, strategy, options, workers, seed=1, work="none")
        runner = get_registry().strategy(cell.strategy)()
        runs = [runner.run(cell.spec, cell.workers, dict(cell.options)).stats for _ in range(repeats)]
        return min(float(r["loop_s"]) for r in runs), runs[0]

    free = float(cpu_availability(0.05)["min"])
    plain, _ = best(BASELINE, 1, {})
    inline, stats = best("tick-barrier", 2, {"executor": "inline"})
    threads, _ = best("tick-barrier", 2, {"executor": "threads"})
    free = min(free, float(cpu_availability(0.05)["min"]))
    events, batches = int(stats["parallel_events"]), int(stats["parallel_batches"])
    return {
        "shape": dict(TB_CALIBRATION_SHAPE),
        "sequential_s": plain, "inline_s": inline, "threads_s": threads,
        "parallel_events": events, "parallel_batches": batches,
        "event_s": max(0.0, inline - plain) / max(events, 1),
        "batch_s": max(0.0, threads - inline) / max(batches, 1),
        "cpu_available": free,
    }  # fmt: skip


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _exchange_rounds(transport: Any, peers: Sequence[int], rounds: int) -> float:
    """``rounds`` window exchanges as an LP makes them: a packet to every peer, then one from every peer."""
    packet = ("data", [], 12345)
    started = time.perf_counter()
    for _ in range(rounds):
        for p in peers:
            transport.send(p, packet)
        for _ in peers:
            transport.recv(10.0)
    return (time.perf_counter() - started) / rounds


def _thread_exchange(workers: int, rounds: int = 60) -> float:
    """Seconds per window exchange between ``workers`` LP threads (:class:`tickpar.pdes.transport.ThreadTransport`)."""
    from tickpar.pdes.transport import ThreadTransport

    if workers < 2:
        return 0.0
    group = ThreadTransport.group(workers)
    peers = [[q for q in range(workers) if q != p] for p in range(workers)]
    threads = [
        threading.Thread(target=_exchange_rounds, args=(group[p], peers[p], rounds + 1), daemon=True)
        for p in range(1, workers)
    ]
    for t in threads:
        t.start()
    _exchange_rounds(group[0], peers[0], 1)  # everyone started
    took = _exchange_rounds(group[0], peers[0], rounds)
    for t in threads:
        t.join(10)
    return took


def _socket_lp(index: int, socks: dict[int, Any], rounds: int) -> None:
    from tickpar.pdes.transport import SocketTransport

    _exchange_rounds(SocketTransport(index, socks), sorted(socks), rounds)


def _process_exchange(workers: int, rounds: int = 60) -> float:
    """Seconds per window exchange between ``workers`` forked LPs over :class:`tickpar.pdes.transport.SocketTransport`
    (socket pairs, as ``conservative backend=processes`` wires them)."""
    import socket

    from tickpar.pdes.transport import SocketTransport

    if workers < 2:
        return 0.0
    pairs = {(i, j): socket.socketpair() for i in range(workers) for j in range(i + 1, workers)}
    socks: list[dict[int, Any]] = [{} for _ in range(workers)]
    for (a, b), (sa, sb) in pairs.items():
        socks[a][b], socks[b][a] = sa, sb
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_socket_lp, args=(p, socks[p], rounds + 1), daemon=True) for p in range(1, workers)]
    for proc in procs:
        proc.start()
    mine = SocketTransport(0, socks[0])
    _exchange_rounds(mine, sorted(socks[0]), 1)
    took = _exchange_rounds(mine, sorted(socks[0]), rounds)
    for proc in procs:
        proc.join(10)
    for sa, sb in pairs.values():
        sa.close()
        sb.close()
    return took


def _threads_message(n: int = 20_000) -> float:
    """Seconds to hand one message to another LP's inbox under a lock and take it out."""
    box: deque[tuple[int, int, int, int]] = deque()
    lock = threading.Lock()
    msg = (3, 1000, 7, 1 << 41)
    started = time.perf_counter()
    for _ in range(n):
        with lock:
            box.append(msg)
        with lock:
            box.popleft()
    return (time.perf_counter() - started) / n


def _pickled_message(n: int = 20_000) -> float:
    """Seconds to pickle and unpickle one message tuple (processes and MPI ship them pickled)."""
    msg = (3, 1000, (7, 11, 13), 1 << 41)
    dumps, loads = pickle.dumps, pickle.loads
    started = time.perf_counter()
    for _ in range(n):
        loads(dumps(msg))
    return (time.perf_counter() - started) / n


def _waiter_runs(size: int, calls: int) -> int:
    """How often a thread waiting for the GIL ran while this one hashed ``size`` bytes ``calls`` times.

    The switch interval is set long (5 s) meanwhile, so the waiter never gets the GIL by a forced switch:
    only while a hash call releases it.  Not a timing: a count, near zero unless the hash releases it.
    """
    import hashlib
    import sys

    view = memoryview(bytes(range(256)) * 256)
    state = {"stop": False, "hits": 0}
    ready = threading.Event()

    def waiter() -> None:
        ready.set()
        while not state["stop"]:
            state["hits"] += 1
            time.sleep(0)  # lets the GIL go at once, so the hashing thread is never held up

    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    thread = threading.Thread(target=waiter, daemon=True)
    try:
        thread.start()
        ready.wait(5)
        time.sleep(0.001)
        before = state["hits"]
        sha256 = hashlib.sha256
        for _ in range(calls):
            sha256(view[:size]).digest()
        return int(state["hits"]) - int(before)
    finally:
        state["stop"] = True
        sys.setswitchinterval(old)
        thread.join(5)


def gil_release_bytes(largest: int = 1 << 16, calls: int = 4000, min_runs: int = 2, tries: int = 3) -> int | None:
    """The smallest buffer whose SHA-256 (the ``gil-release`` work model's call) releases the GIL, in bytes.

    Bisected over ``1 .. largest`` with :func:`_waiter_runs`: a size releases it where a waiting thread
    ran at least ``min_runs`` times during ``calls`` hashes in any of ``tries`` attempts.  A call that
    holds the GIL never lets the waiter run, so a miss can only come from a waiter woken too late on a
    busy machine, hence several tries and not a majority.  ``None``: not even ``largest`` bytes did.
    """

    def releases(size: int) -> bool:
        return any(_waiter_runs(size, calls) >= min_runs for _ in range(tries))

    if not releases(largest):
        return None
    lo, hi = 0, largest  # lo holds (or is 0), hi releases
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if releases(mid):
            hi = mid
        else:
            lo = mid
    return hi


def calibrate(cores: int | None = None, work_modes: Iterable[str] = ("gil-release", "gil-hold")) -> dict[str, Any]:
    """The ``here`` preset's figures, measured in this process (about a second).

    Sync costs are measured at ``P = 1 .. cores`` (threads) and ``2 .. cores``
    (processes), never more workers than cores, and fitted by :func:`fit_sync`.
    """
    import os

    cores = cores or len(os.sched_getaffinity(0))
    cores = max(1, int(cores))
    # Processes first: never fork while measuring threads are alive.
    procs = {p: min(_process_exchange(p) for _ in range(3)) for p in range(2, cores + 1)} or {1: 0.0}
    threads = {p: min(_thread_exchange(p) for _ in range(3)) for p in range(2, cores + 1)} or {1: 0.0}
    process_model = fit_sync(procs)
    msg_threads = min(_threads_message() for _ in range(3))
    msg_pickled = min(_pickled_message() for _ in range(3))
    record: dict[str, Any] = {
        "format": "tickpar.calibration/1",
        "cores": cores,
        "o_event_s": calibrate_event_cost(),
        "work": {mode: list(_work_cost(mode)) for mode in work_modes},
        # The smallest hash that releases the GIL, measured; the hash rate places it in microseconds.
        "gil_release_bytes": gil_release_bytes() if "gil-release" in work_modes else None,
        # Two threads' GIL-releasing calls against one's: the hand-off around each call (threads, P >= 2).
        "work_overlap": _work_overlap() if "gil-release" in work_modes and cores >= 2 else {},
        # What a second thread's GIL hand-offs add per GIL-releasing call, by call size (threads under the GIL).
        "gil_handoff": _gil_handoff() if "gil-release" in work_modes and cores >= 2 else {},
        # Tick-barrier's batch machinery per event, and its hand-off per batch (P = 2, threads).
        "tick_barrier": _tick_barrier_costs() if cores >= 2 else {},
        "work_units_per_us": {mode: work_rate(mode) for mode in work_modes},
        "sync_measured": {
            "threads": {str(p): v for p, v in threads.items()},
            "processes": {str(p): v for p, v in procs.items()},
        },
        "sync_model": {
            "threads": list(fit_sync(threads)),
            "processes": list(process_model),
            "mpi": list(process_model),
        },
        "sync_model_text": "o_sync(P) = a + b*log2(P), least squares over the measured P (<= cores); "
        "mpi takes the processes figure",
        "o_msg_s": {"threads": msg_threads, "processes": msg_pickled, "mpi": msg_pickled},
    }
    if "gil-release" in work_modes and cores >= 2:
        from tickpar.perf.handoff import thread_handoff

        # Each thread strategy's own hand-off excess per call, solved against the model priced by the rest.
        model = {"least_cost_dag": least_cost_dag, "preset": preset, "strategy_time": strategy_time}
        record["thread_handoff"] = thread_handoff(record, model)
    else:
        record["thread_handoff"] = {}
    return record


# -- one strategy on one DAG -----------------------------------------------------------------------
def _backend(strategy: str, options: Mapping[str, Any]) -> str:
    if strategy == "conservative":
        return str(options.get("backend", "threads"))
    return "threads"


def _zero_overhead_time(
    dag: Dag,
    strategy: str,
    options: Mapping[str, Any],
    plain: np.ndarray,
    ps: Sequence[int],
    partition: Callable[[int], Sequence[int] | None] | None,
) -> dict[int, float]:
    """``{P: time}`` of the *bound*: the DAG's limits under the strategy's own assignment, no overhead at all.

    No ``o_event``, ``o_sync``, ``o_msg`` or GIL floor: each is a cost the run pays on top, so leaving
    them out can only raise the speedup.  At ``P = 1`` it is the sequential work itself (speedup 1).
    """
    t1 = float(plain.sum())
    priced = Dag(dag.events.assign(cost_s=plain), dag.components, dag.lookahead, dag.meta)
    out: dict[int, float] = {}
    if strategy == "split":
        return {p: t1 if p == 1 else max(t1 / p, critical_path(priced)) for p in ps}
    if strategy == "tick-barrier":
        min_parallel = max(2, int(options.get("min_parallel", 2)))
        zero = Overheads("zero")
        spans = tick_barrier_time(priced, plain, ps, zero, min_parallel, True)
        return {p: t1 if p == 1 else span for p, (span, _b) in spans.items()}  # P = 1: T1 itself, not re-summed
    if strategy == "conservative":
        sync = str(options.get("sync", "window"))
        for p in ps:
            if p == 1:
                out[p] = t1
                continue
            given = partition(p) if partition is not None else None
            part = list(given) if given is not None else balanced_partition(priced, p)
            if sync == "null-message":
                out[p] = null_message_time(priced, part, plain)
            else:
                out[p] = window_time(priced, part, plain)[0]
        return out
    raise ValueError(f"strategy {strategy!r}: no structural model (known: {', '.join(MODELLED)})")


def strategy_time(
    dag: Dag,
    strategy: str,
    options: Mapping[str, Any],
    costs: Preset,
    workers: Sequence[int],
    optimistic: bool,
    partition: Callable[[int], Sequence[int] | None] | None = None,
) -> tuple[float, dict[int, float]]:
    """``(T1, {P: time})`` of ``strategy`` with ``options`` on a metered ``dag`` under ``costs``.

    ``T1`` is the sequential run's time under the same preset (engine cost plus work).
    ``optimistic``: the *bound* (:func:`_zero_overhead_time`: the preset's event and work costs, no
    overheads; a true upper bound of speedup, exactly 1 at ``P = 1``); else the *model* (the
    preset's overheads added).  ``partition(P)``: the LP of every component under the strategy's
    own plan (conservative; :func:`strategy_partition`); ``None``: a cost-balanced split.
    """
    ps = sorted({int(p) for p in workers})
    engine = (
        dag.events["cost_s"].to_numpy(dtype=np.float64)
        if costs.event_s is None
        else np.full(len(dag), costs.event_s, dtype=np.float64)
    )
    work = (
        dag.events["work_calls"].to_numpy(dtype=np.float64) * costs.work_per_call_s
        + dag.events["work_us"].to_numpy(dtype=np.float64) * costs.work_per_us_s
    )
    plain = engine + work
    t1 = float(plain.sum())
    if strategy == BASELINE:
        return t1, dict.fromkeys(ps, t1)
    if optimistic:
        return t1, _zero_overhead_time(dag, strategy, options, plain, ps, partition)
    priced = Dag(dag.events.assign(cost_s=plain), dag.components, dag.lookahead, dag.meta)
    over = costs.overheads
    cost = plain + over.o_event
    gil_work = _gil_held_work(dag, work, costs)
    held = engine + over.o_event + gil_work
    calls = dag.events["work_calls"].to_numpy(dtype=np.float64)
    per_call_us = dag.events["work_us"].to_numpy(dtype=np.float64) / np.maximum(calls, 1.0)
    released = np.where(np.asarray(gil_work) > 0, 0.0, work) if costs.gil else np.zeros_like(work)
    one_floor = float(held.sum()) if costs.gil else 0.0
    if costs.gil and (costs.thread_excess or costs.gil_excess):
        # Beside another thread (P >= 2, threads under the GIL) each GIL-releasing call costs its thread the
        # calibrated excess (the strategy's own thread_handoff where measured, else gil_handoff), and the GIL's
        # floor half of it (one iteration holds two events).
        excess = np.where(released > 0, calls * costs.excess_s(per_call_us), 0.0)
        beside = cost + excess
        gil_floor = one_floor + 0.5 * float(excess.sum())
    else:
        # Older calibrations: a GIL-releasing call takes its thread longer beside another (work_overlap).
        beside = cost + released * (costs.inflation(per_call_us) - 1.0)
        gil_floor = one_floor
    out: dict[int, float] = {}
    if strategy == "split":
        for p in ps:
            out[p] = t1 if p == 1 else max(float(beside.sum()) / p, len(dag) * over.o_event, gil_floor)
        return t1, out
    if strategy == "tick-barrier":
        min_parallel = max(2, int(options.get("min_parallel", 2)))
        # Its own calibrated costs where measured: the machinery per event and the hand-off per batch (at
        # P = 2; beyond, growing as the threads exchange does), both also held under the GIL.
        batch = costs.tb_batch_s
        tb_over = over if batch is None else replace(over, o_sync=lambda p: batch + over.sync(p) - over.sync(2))
        mine = beside + costs.tb_event_s
        tb_floor = gil_floor + costs.tb_event_s * len(dag) if costs.gil else 0.0
        for p, (span, barriers) in tick_barrier_time(priced, mine, ps, tb_over, min_parallel, False).items():
            out[p] = span if p == 1 else max(span, tb_floor + barriers * tb_over.sync(p))
        return t1, out
    if strategy == "conservative":
        sync = str(options.get("sync", "window"))
        for p in ps:
            given = partition(p) if partition is not None else None
            part = list(given) if given is not None else balanced_partition(priced, p, over.o_event)
            mine = cost if p == 1 else beside
            if sync == "null-message":
                span, syncs = null_message_time(priced, part, mine, over.o_msg), 0
            else:
                span, syncs, _look = window_time(priced, part, mine, over.o_msg)
                span += syncs * over.sync(p)
            out[p] = max(span, (one_floor if p == 1 else gil_floor) + syncs * over.sync(p))
        return t1, out
    raise ValueError(
        f"strategy {strategy!r}: no structural model (known: sequential, split, tick-barrier, conservative)"
    )


def strategy_partition(spec: RunSpec, strategy: str, options: Mapping[str, Any]) -> Callable[[int], list[int]] | None:
    """``P -> LP of every component`` as ``strategy`` partitions ``spec`` (``None``: it has no partition).

    The plan is :func:`tickpar.pdes.plan.make_plan` with the strategy's own ``partition`` and
    ``partition_weights`` options, so the bound and the model see the assignment the run uses.
    Where no plan exists at ``P`` (more LPs than the partitioner can make) the cost-balanced split
    stands in: the record lists those ``P`` under ``partition_fallback``.
    """
    if strategy != "conservative":
        return None
    from tickpar.pdes.plan import DEFAULT_PARTITION_WEIGHTS, make_plan, partition_weights, partition_window_loads

    weighted_by = str(options.get("partition_weights", DEFAULT_PARTITION_WEIGHTS))
    weights = partition_weights(spec, weighted_by)
    window_loads = partition_window_loads(spec, weighted_by)
    model = spec.build_model(work="none")
    method = str(options.get("partition", "auto"))
    cache: dict[int, list[int]] = {}

    def lp_of(p: int) -> list[int]:
        if p not in cache:
            plan, _part = make_plan(model, p, method=method, order=spec.order, sync="window", weights=weights,
                                    weighted_by=weighted_by, window_loads=window_loads)  # fmt: skip
            cache[p] = list(plan.lp_of)
        return cache[p]

    return lp_of


def _gil_held_work(dag: Dag, work: np.ndarray, costs: Preset) -> np.ndarray | float:
    """Per event, the work seconds that hold the GIL: all of ``gil-hold``; ``gil-release`` calls below the threshold."""
    if costs.work_mode == "gil-hold":
        return work
    if costs.work_mode != "gil-release" or costs.gil_hold_below_us <= 0:
        return 0.0
    calls = dag.events["work_calls"].to_numpy(dtype=np.float64)
    per_call_us = dag.events["work_us"].to_numpy(dtype=np.float64) / np.maximum(calls, 1.0)
    return np.where((calls > 0) & (per_call_us < costs.gil_hold_below_us), work, 0.0)


def _partition_or_fallback(
    spec: RunSpec, strategy: str, options: Mapping[str, Any], fallback: dict[str, list[int]]
) -> Callable[[int], list[int]] | None:
    """:func:`strategy_partition`, with the ``P`` where no plan exists noted in ``fallback`` (and ``None`` there)."""
    plan_of = strategy_partition(spec, strategy, options)
    if plan_of is None:
        return None

    def lp_of(p: int) -> list[int] | None:
        try:
            return plan_of(p)
        except (ValueError, LookaheadError):  # a P it cannot plan: the cost-balanced split stands in
            fallback.setdefault(strategy, []).append(p)
            return None

    return lp_of  # type: ignore[return-value]


def least_cost_dag(spec: RunSpec, recordings: int) -> Dag:
    """The metered DAG of ``spec``, each event's ``cost_s`` the least over ``recordings`` runs.

    The event sequence is deterministic, so the runs line up row by row; the least cost is the one
    least disturbed by whatever else ran (a noisy recording inflates the work, never shrinks it).
    """
    dag = record_dag(spec, meter_work=True)
    cost = dag.events["cost_s"].to_numpy(dtype=np.float64).copy()
    for _ in range(max(1, recordings) - 1):
        again = record_dag(spec, meter_work=True)
        if len(again) != len(dag):  # not the same run: keep the first
            break
        np.minimum(cost, again.events["cost_s"].to_numpy(dtype=np.float64), out=cost)
    events = dag.events.assign(cost_s=cost)
    return Dag(events, dag.components, dag.lookahead, {**dag.meta, "recordings": recordings})


def provenance(
    calibration_file: str, preset_name: str, fit: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """Where each figure of the bound and the model of ``preset_name`` comes from (``fit``: a 1-worker ``o_event``)."""
    if preset_name == "cxx":
        costs = cxx_costs()
        model = {
            "event": costs["event_s"]["source"],
            "o_event": costs["o_event_s"]["source"],
            "o_sync": f"{costs['sync_b_s']['source']} x log2(P)",
            "o_msg": costs["o_msg_s"]["source"],
            "work": "work_us as requested (the native engine's calibrated spin)",
            "tick_barrier": costs["tb_batch_s"]["source"] + " (tick-barrier's sync per parallel batch at P = 2)",
        }
    else:
        model = {
            "event": "DAG: each event's least recorded cost_s",
            "o_event": f"calibration {calibration_file}: o_event_s (calibrate_event_cost)",
            "o_sync": f"fit: a + b log2(P) to {calibration_file} sync_measured (fit_sync)",
            "o_msg": f"calibration {calibration_file}: o_msg_s",
            "work": f"fit: per_call + per_us x work_us, {calibration_file} work",
            "work_overlap": f"calibration {calibration_file}: work_overlap (threads, P >= 2: a gil-release call's "
            "time beside a second thread's over its time alone, per call size, _work_overlap; sizes measured with "
            f"a core less than {OVERLAP_MIN_CPU} available are left out, and with none left it is 1)",
            "gil_handoff": f"calibration {calibration_file}: gil_handoff (threads under the GIL, P >= 2: per "
            "gil-release call size, what a second thread looping 'hold the GIL, one call' adds to a thread's "
            "iteration beyond max(hold + call, 2 holds), _gil_handoff; added to each such call, half of it to "
            "the GIL floor; where it is absent, work_overlap inflates the calls instead)",
            "thread_handoff": f"calibration {calibration_file}: thread_handoff (threads under the GIL, P >= 2, "
            "tick-barrier and conservative: the excess per gil-release call, by call size, that makes this model "
            "give the speedup the strategy's own 2-worker run measured on the calibration's PHOLD shape "
            "(HANDOFF_SHAPE, not a sweep or held-out shape; conservative's o_event from its own 1-worker run "
            "there), tickpar.perf.handoff.thread_handoff; where present it replaces gil_handoff for that strategy)",
            "tick_barrier": f"calibration {calibration_file}: tick_barrier (_tick_barrier_costs: the batch "
            "machinery per event, inline executor against the sequential loop, and the hand-off per parallel "
            "batch, threads against inline, on a work-free PHOLD shape of its own at P = 2; tick-barrier only)",
            "gil_threshold": f"calibration {calibration_file}: gil_release_bytes (measured: the smallest hash a "
            "waiting thread runs beside, gil_release_bytes) / work_units_per_us (gil-release calls below it hold "
            "the GIL)",
        }
    if fit is not None:
        model["o_event"] = str(fit["source"])
    bound = {"event": model["event"], "work": model["work"], "o_event": "none", "o_sync": "none", "o_msg": "none",
             "gil": "none"}  # fmt: skip
    return {"bound": json.dumps(bound, sort_keys=True), "model": json.dumps(model, sort_keys=True)}


# -- per shape ----------------------------------------------------------------------------------------
def shape_bounds(
    workload: str,
    shape: str,
    spec: RunSpec,
    cells: Sequence[Mapping[str, Any]],
    calibration: Mapping[str, Any],
    workers: Iterable[int] = PREDICT_WORKERS,
    calibration_file: str = "results/bounds/calibration.json",
    recordings: int = 3,
) -> dict[str, Any]:
    """The bounds record of one shape: ideal, bound and model (predicted) speedups of each timed (strategy, variant).

    ``spec``: the shape's sequential spec (seed and order are replaced per
    cell).  ``cells``: ``{strategy, variant, options, order, work}`` per timed
    strategy variant at this shape.  The DAG is recorded ``recordings`` times
    and each event keeps its least cost (:func:`least_cost_dag`); ``calibration_file``
    names ``calibration`` in each row's ``model_sources``.  The record keeps the
    DAGs, the cells and each strategy's partition, so that :func:`model_rows` can
    price the model again with overheads fitted later (:func:`one_worker_fits`).
    """
    from dataclasses import replace

    ps = sorted({int(p) for p in workers} | {1})
    started = time.perf_counter()
    dags: dict[str, Dag] = {}
    ideal: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str, str]] = set()
    kept: list[dict[str, Any]] = []
    unmodelled: list[str] = []
    fallback: dict[str, list[int]] = {}
    partitions: dict[str, dict[str, list[int] | None]] = {}
    for cell in cells:
        key = (str(cell["strategy"]), str(cell["variant"]), str(cell["order"]), str(cell["work"]))
        if key in seen:
            continue
        seen.add(key)
        order, work_mode = key[2], key[3]
        if order not in dags:
            dags[order] = least_cost_dag(replace(spec, order=order), recordings)
            here = preset("here", "threads", work_mode, calibration)
            priced = dags[order].with_work(here.work_per_call_s, here.work_per_us_s)
            cp = critical_path(priced)
            t1 = priced.t1_s
            for p in ps:
                ideal.append({"order": order, "work": work_mode, "workers": p,
                              "ideal_speedup": min(float(p), t1 / cp) if cp > 0 else float(p)})  # fmt: skip
        if key[0] not in MODELLED:
            unmodelled.append(key[0])
            continue
        options = dict(cell.get("options") or {})
        kept.append({"strategy": key[0], "variant": key[1], "order": order, "work": work_mode, "options": options})
        lp_of = _partition_or_fallback(replace(spec, order=order), key[0], options, fallback)
        if lp_of is not None:
            partitions[_partition_key(key[0], key[1], order)] = {str(p): lp_of(p) for p in ps}
    record: dict[str, Any] = {
        "format": SHAPE_FORMAT,
        "workload": workload,
        "shape": shape,
        "spec": spec.to_dict(),
        "workers": ps,
        "calibration": dict(calibration),
        "calibration_file": calibration_file,
        "cells": kept,
        "partitions": partitions,
        "dags": {order: dag.to_dict() for order, dag in dags.items()},
    }
    rows = model_rows(record, dags=dags)
    first = next(iter(dags.values()), None)
    return {
        **record,
        "events": len(first) if first is not None else 0,
        "components": len(first.components) if first is not None else 0,
        "seconds": time.perf_counter() - started,
        "ideal": ideal,
        "rows": rows,
        "unmodelled": sorted(set(unmodelled)),
        "partition_fallback": fallback,
        "recordings": recordings,
    }


def _partition_key(strategy: str, variant: str, order: str) -> str:
    return f"{strategy}|{variant}|{order}"


#: Strategies whose 1-worker run goes through the same per-event machinery as a parallel one, so that
#: its loop time minus the sequential one's, per event, is their ``o_event`` (:func:`one_worker_fits`).
#: Conservative runs one LP with its windows at P = 1.  Tick-barrier is not one: at P = 1 it serves every
#: bin with the plain loop (:func:`tickpar.perf.bounds.tick_barrier_time`), which says nothing of the
#: per-event cost of a parallel batch; its ``o_event`` stays the calibration's.
FITTED_FROM_ONE_WORKER = ("conservative",)
#: ``(strategy, variant, order, work, engine)``: what a fit is keyed by.
FitKey = tuple[str, str, str, str, str]


def model_rows(
    record: Mapping[str, Any], fits: Mapping[FitKey, Mapping[str, Any]] | None = None,
    dags: Mapping[str, Dag] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The bound and model rows of a shape record (:func:`shape_bounds`), the model priced with ``fits``.

    ``fits``: per ``(strategy, variant, order, work, engine)``, an ``o_event_s`` fitted from 1-worker
    runs (:func:`one_worker_fits`) that replaces the preset's own ``o_event`` (engine ``python``:
    preset ``here``; ``native``: ``cxx``), named in ``model_sources``.  The bound takes no fit: it has
    no overhead at all.
    """
    calibration = record["calibration"]
    calibration_file = str(record.get("calibration_file", "results/bounds/calibration.json"))
    ps = [int(p) for p in record["workers"]]
    dags = dict(dags) if dags is not None else {o: Dag.from_dict(d) for o, d in record["dags"].items()}
    rows: list[dict[str, Any]] = []
    for cell in record["cells"]:
        strategy, variant, order, work_mode = cell["strategy"], cell["variant"], cell["order"], cell["work"]
        options = cell.get("options") or {}
        dag = dags[order]
        backend = _backend(strategy, options)
        parts = record.get("partitions", {}).get(_partition_key(strategy, variant, order))
        lp_of = (lambda p, parts=parts: parts.get(str(p))) if parts is not None else None
        for name in PRESETS:
            costs = preset(name, backend, work_mode, calibration, strategy=strategy)
            fit = (fits or {}).get((strategy, variant, order, work_mode, PRESET_ENGINE[name]))
            if fit is not None:
                costs = replace(costs, overheads=replace(costs.overheads, o_event=float(fit["o_event_s"])))
            t1, predicted = strategy_time(dag, strategy, options, costs, ps, optimistic=False, partition=lp_of)
            bound = (
                strategy_time(dag, strategy, options, costs, ps, optimistic=True, partition=lp_of)[1]
                if name == "here"
                else {}
            )
            sources = provenance(calibration_file, name, fit)
            for p in ps:
                rows.append(
                    {
                        "strategy": strategy,
                        "variant": variant,
                        "order": order,
                        "work": work_mode,
                        "preset": name,
                        "workers": p,
                        "predicted_speedup": t1 / predicted[p] if predicted[p] > 0 else float(p),
                        "bound_speedup": (t1 / bound[p] if bound[p] > 0 else float(p)) if bound else None,
                        "bound_sources": sources["bound"] if bound else None,
                        "model_sources": sources["model"],
                        "fitted": fit is not None,
                    }
                )
    return rows


def _counted(summary: pd.DataFrame) -> pd.DataFrame:
    """The timed cells that count (exact, ``timed_exact``, not ``contended``; default interpreter)."""
    df = summary
    keep = df["speedup"].notna() & (df.get("verdict", "exact") == "exact")
    if "interpreter" in df:
        keep &= df["interpreter"].fillna("default") == "default"
    if "timed_exact" in df:
        keep &= df["timed_exact"].astype("boolean").fillna(False).astype(bool)
    if "contended" in df:
        keep &= ~df["contended"].astype("boolean").fillna(False).astype(bool)
    kept = df[keep]
    # computed on the kept rows: a full-length Series assigned to an empty frame would give it every row back
    return kept.assign(engine=kept["engine"].fillna("python") if "engine" in kept else "python")


def one_worker_fits(summary: pd.DataFrame, workload: str) -> dict[FitKey, dict[str, Any]]:
    """``o_event`` per ``(strategy, variant, order, work, engine)`` of ``workload``, fitted from its 1-worker runs.

    For each counted 1-worker cell of a strategy in :data:`FITTED_FROM_ONE_WORKER`: ``(T1 - Tseq) /
    events``, the loop time (``time_loop_median_s``) it takes beyond its own sequential baseline's
    (``baseline_cell``: same shape, order, engine), per event, taken on the workload's shape whose
    baseline spends the least time per event: there the per-event overhead is the largest share of
    the loop (on a shape with 300 µs of work per event a 1% timing noise is 3 µs per event, more than
    the overhead itself).  Only 1-worker runs: the 2-worker points the model predicts are never
    fitted on.  A fit may be negative (the strategy's loop does less per event than the sequential one).
    """
    needed = {"workers", "time_loop_median_s", "baseline_cell", "events", "cell", "strategy"}
    if summary.empty or not needed <= set(summary.columns):
        return {}
    loop = dict(zip(summary["cell"], pd.to_numeric(summary["time_loop_median_s"], errors="coerce"), strict=True))
    df = _counted(summary)
    df = df[(df["workload"] == workload) & (df["workers"].astype(int) == 1)
            & df["strategy"].isin(FITTED_FROM_ONE_WORKER)]  # fmt: skip
    found: dict[FitKey, list[tuple[float, str]]] = {}
    for row in df.itertuples(index=False):
        mine, base = float(row.time_loop_median_s), loop.get(row.baseline_cell, math.nan)
        events = float(row.events or 0)
        if not (math.isfinite(mine) and math.isfinite(base) and events > 0):
            continue
        key = (str(row.strategy), str(row.variant), str(row.order), str(row.work), str(row.engine))
        found.setdefault(key, []).append((base / events, (mine - base) / events, str(row.shape)))
    out: dict[FitKey, dict[str, Any]] = {}
    for key, pts in found.items():
        per_event, value, shape = min(pts)  # the most engine-bound shape
        out[key] = {
            "o_event_s": float(value),
            "shapes": [shape],
            "source": f"fit: (T1 - Tseq) / events, {key[0]}/{key[1]} at 1 worker on {workload}/{shape} "
            f"(summary.csv time_loop_median_s, {key[4]} engine; of its 1-worker shapes the one with the least "
            f"sequential time per event, {per_event * 1e6:.3g} us)",
        }
    return out


def _records(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every readable shape record."""
    out = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            continue
        if data.get("format") == SHAPE_FORMAT:
            out.append(data)
    return out


def _load_shapes(
    paths: Iterable[str | Path], summary: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(bound rows, ideal rows) of every readable shape record, keyed by workload and shape.

    With ``summary``, a record that keeps its DAGs is priced again with the overheads fitted from that
    workload's 1-worker runs (:func:`one_worker_fits`, :func:`model_rows`).
    """
    rows: list[dict[str, Any]] = []
    ideal: list[dict[str, Any]] = []
    fits: dict[str, dict[FitKey, dict[str, Any]]] = {}
    for data in _records(paths):
        where = {"workload": data["workload"], "shape": data["shape"]}
        mine = data["rows"]
        if summary is not None and "dags" in data and data.get("cells"):
            if data["workload"] not in fits:
                fits[data["workload"]] = one_worker_fits(summary, data["workload"])
            if fits[data["workload"]]:
                mine = model_rows(data, fits[data["workload"]])
        rows += [{**where, **r} for r in mine]
        ideal += [{**where, **r} for r in data["ideal"]]
    return pd.DataFrame(rows), pd.DataFrame(ideal)


def bound_columns(summary: pd.DataFrame, paths: Iterable[str | Path]) -> pd.DataFrame:
    """``summary`` with ``ideal_speedup`` and ``bound_speedup`` (preset ``here``) per cell, NaN where unknown.

    Native-engine rows get neither beyond one worker (both are priced at the Python engine's costs).
    At one worker ``bound_speedup`` is 1 for every strategy, a plugin's included: with nothing
    running beside anything, no schedule beats the sequential work.  Beyond one worker it is NaN
    for a strategy this module has no structural model of (not in :data:`MODELLED`: a plugin; the
    shape record lists it under ``unmodelled``), which is what an empty cell in the summary means.
    """
    out = summary.copy()
    out["ideal_speedup"] = math.nan
    out["bound_speedup"] = math.nan
    if not out.empty and "workers" in out.columns:
        out.loc[out["workers"].astype(int) == 1, "bound_speedup"] = 1.0
    rows, ideal = _load_shapes(paths)
    if out.empty or rows.empty:
        return out
    keys = ["workload", "shape", "strategy", "variant", "order", "work", "workers"]
    here = rows[rows["preset"] == "here"][[*keys, "bound_speedup"]].drop_duplicates(keys)
    ideal = ideal[["workload", "shape", "order", "work", "workers", "ideal_speedup"]].drop_duplicates(
        ["workload", "shape", "order", "work", "workers"]
    )
    base = out.drop(columns=["ideal_speedup", "bound_speedup"])
    base["_row"] = np.arange(len(base))
    base["workers"] = base["workers"].astype(int)
    merged = base.merge(here, on=keys, how="left").merge(
        ideal, on=["workload", "shape", "order", "work", "workers"], how="left"
    )
    merged = merged.sort_values("_row")
    bound = np.array(merged["bound_speedup"], dtype=np.float64)  # a copy: pandas may hand out a read-only view
    one = base["workers"].to_numpy() == 1
    bound[one & np.isnan(bound)] = 1.0  # one worker: 1 for every strategy, modelled or not
    ideal_v = merged["ideal_speedup"].to_numpy(dtype=np.float64).copy()
    if "engine" in base.columns:  # the bound and the ideal are priced at this machine's Python costs
        native = (base["engine"].fillna("python") == "native").to_numpy()
        bound[native & ~one] = math.nan
        ideal_v[native] = math.nan
    out["bound_speedup"] = bound
    out["ideal_speedup"] = ideal_v
    return out


def measured_speedups(summary: pd.DataFrame) -> pd.DataFrame:
    """Timed points that count: exact, ``timed_exact`` and not ``contended`` where those columns exist.

    One row per (workload, shape, strategy, variant, order, work, workers): the
    median over seeds of ``loop_speedup`` where the summary has it, else of
    ``speedup`` (column ``measured``; ``measure`` says which; ``measured_lo``/``measured_hi``
    the medians of its interval's ends), per ``engine``
    (:data:`PRESET_ENGINE`: ``here`` is checked against the Python engine's runs, ``cxx``
    against the native engine's).  Only the default interpreter's cells: the model's
    ``here`` costs are that interpreter's.
    """
    if summary.empty or "speedup" not in summary:
        return pd.DataFrame()
    df = _counted(summary)
    column = "loop_speedup" if "loop_speedup" in df and df["loop_speedup"].notna().any() else "speedup"
    df = df.assign(
        measured_lo=pd.to_numeric(df[f"{column}_lo"], errors="coerce") if f"{column}_lo" in df else math.nan,
        measured_hi=pd.to_numeric(df[f"{column}_hi"], errors="coerce") if f"{column}_hi" in df else math.nan,
    )
    keys = ["workload", "shape", "strategy", "variant", "order", "work", "workers", "engine"]
    out = df.groupby(keys, as_index=False).agg(
        measured=(column, "median"), measured_lo=("measured_lo", "median"), measured_hi=("measured_hi", "median")
    )
    out["measure"] = column
    return out


def prediction_table(summary: pd.DataFrame, paths: Iterable[str | Path]) -> pd.DataFrame:
    """``results/prediction.csv``: predicted speedup per preset and P, with the measured point where there is one.

    The model is priced with the overheads fitted from the summary's 1-worker runs
    (:func:`one_worker_fits`) where the shape record keeps its DAGs.
    """
    rows, _ = _load_shapes(paths, summary if not summary.empty else None)
    if rows.empty:
        return pd.DataFrame(columns=list(PREDICTION_COLUMNS))
    rows = rows[rows["strategy"] != BASELINE].copy()
    rows["engine"] = rows["preset"].map(PRESET_ENGINE).fillna("python")  # cxx: against the native engine's runs
    measured = measured_speedups(summary)
    keys = ["workload", "shape", "strategy", "variant", "order", "work", "workers", "engine"]
    if not measured.empty:
        rows = rows.merge(measured[[*keys, "measured", "measured_lo", "measured_hi"]], on=keys, how="left")
    else:
        rows["measured"] = rows["measured_lo"] = rows["measured_hi"] = math.nan
    rows["measured_speedup"] = rows["measured"]
    rows["rel_error"] = (rows["predicted_speedup"] - rows["measured_speedup"]) / rows["measured_speedup"]
    for column in ("bound_speedup", "bound_sources", "model_sources", "fitted"):
        if column not in rows:
            rows[column] = None  # a shape record written before the column existed
    rows["model"] = rows["predicted_speedup"]
    rows["bound"] = pd.to_numeric(rows["bound_speedup"], errors="coerce")
    limit = rows["bound"] * (1 + BOUND_TOLERANCE)
    rows["above_bound_point"] = rows["measured_speedup"] > limit
    # Judged with the interval: where it is unknown, the point itself.
    low = rows["measured_lo"].where(rows["measured_lo"].notna(), rows["measured_speedup"])
    rows["above_bound"] = low > limit
    held: set[tuple[str, str]] = set()
    if not summary.empty and "held_out" in summary:
        flag = summary["held_out"].astype("boolean").fillna(False).astype(bool)
        held = set(zip(summary.loc[flag, "workload"], summary.loc[flag, "shape"], strict=True))
    is_held = pd.Series([(w, s) in held for w, s in zip(rows["workload"], rows["shape"], strict=True)],
                        index=rows.index)  # fmt: skip
    fitted = rows["fitted"].astype("boolean").fillna(False).astype(bool) & (rows["workers"].astype(int) == 1)
    rows["validation"] = np.where(
        rows["measured_speedup"].isna(), "none", np.where(fitted, "fit", np.where(is_held, "held-out", "sweep"))
    )
    return rows[list(PREDICTION_COLUMNS)].reset_index(drop=True)


# -- command line (the pipeline's rules/bounds.smk) ---------------------------------------------------
def _write_json(path: str | Path, data: Mapping[str, Any]) -> None:
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, default=float))
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tickpar.perf.prediction calibrate|shape|table ...`` (see ``--help``); exit 2 on bad input."""
    import argparse
    import sys

    from tickpar.kernel.params import ParamError, parse_assignments
    from tickpar.plugins.registry import PluginError
    from tickpar.runner import resolve_cell

    parser = argparse.ArgumentParser(prog="python -m tickpar.perf.prediction", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cal = sub.add_parser("calibrate", help="measure the 'here' preset's costs once per sweep")
    cal.add_argument("--cores", type=int, default=None, help="largest P to measure sync at (default: usable cores)")
    cal.add_argument("--out", required=True)
    shape = sub.add_parser("shape", help="one shape's DAG -> ideal, bound and predicted speedups")
    shape.add_argument("--workload", "-w", required=True)
    shape.add_argument("--shape", required=True, help="the shape's name in the sweep")
    shape.add_argument("--param", "-p", action="append", metavar="K=V")
    shape.add_argument("--seed", type=int, default=1)
    shape.add_argument("--cells", required=True, help="JSON list of {strategy, variant, options, order, work}")
    shape.add_argument("--workers", default=",".join(map(str, PREDICT_WORKERS)), help="comma-separated P values")
    shape.add_argument("--calibration", required=True, help="the calibrate command's JSON")
    shape.add_argument("--out", required=True)
    table = sub.add_parser("table", help="summary.csv + shape records -> prediction.csv")
    table.add_argument("summary")
    table.add_argument("shapes", nargs="*")
    table.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "calibrate":
            _write_json(args.out, calibrate(args.cores))
        elif args.command == "shape":
            try:
                cells = json.loads(args.cells)
                workers = [int(p) for p in args.workers.split(",")]
            except ValueError as exc:
                raise ValueError(f"--cells/--workers: {exc}") from None
            if not isinstance(cells, list) or any(not isinstance(c, dict) for c in cells) or min(workers) < 1:
                raise ValueError("--cells: a JSON list of objects; --workers: ints >= 1")
            calibration = json.loads(Path(args.calibration).read_text())
            spec = resolve_cell(
                args.workload, parse_assignments(args.param, "--param"), BASELINE, {}, 1, args.seed
            ).spec
            try:
                record = shape_bounds(args.workload, args.shape, spec, cells, calibration, workers, args.calibration)
            except Exception as exc:  # recorded, like a crashed cell: the sweep goes on without this shape's bounds
                record = {"format": SHAPE_FORMAT, "workload": args.workload, "shape": args.shape,
                          "error": f"{type(exc).__name__}: {exc}", "ideal": [], "rows": []}  # fmt: skip
                print(f"tickpar.perf.prediction: {args.workload}/{args.shape}: {record['error']}", file=sys.stderr)
            _write_json(args.out, record)
        else:
            summary = pd.read_csv(args.summary) if Path(args.summary).exists() else pd.DataFrame()
            out = prediction_table(summary, args.shapes)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            out.to_csv(args.out, index=False)
    except (ValueError, OSError, ParamError, PluginError) as exc:
        print(f"tickpar.perf.prediction: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
