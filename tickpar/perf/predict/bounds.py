"""Ideal speedups from the event DAG of a sequential run (docs/explanation/design.md §9).

This module holds the structural bounds and their table; the DAG is :mod:`~tickpar.perf.predict.dag`, the
overheads :mod:`~tickpar.perf.predict.costs` and the Python calibration :mod:`~tickpar.perf.predict.calibrate`.  Their
public names, once this module's, are re-exported here (``from tickpar.perf.predict.bounds import Dag`` still works).

Recording
---------
:func:`record_dag` runs a spec sequentially (gem5's ``doSimLoop`` on one queue,
exactly as ``strategies/sequential.py``) with ``record_dag=True`` and returns a
:class:`Dag`: one row per processed event, in processing order (index ``i``),
with columns ``component, when, priority, source, first, last, cost_s, parent,
work_us, work_calls``.  The event's own fields are read before its handler
runs (a handler may reschedule the very event it runs, as multicore's port
and CPU events do, and message events are recycled at the end of ``process``).

* ``cost_s`` is the wall time of the event's ``process()`` in that run
  (handler, synthetic work, scheduling its children and the digest; not the
  engine's heap pop).  ``T1 = sum(cost_s)`` is the sequential work.  With
  ``record_dag(spec, meter_work=True)`` no synthetic work is spent: ``work_us``
  and ``work_calls`` record what the event asked for, and
  :meth:`Dag.with_work` adds its calibrated cost back (one cheap recording per
  shape family, whatever its ``work_us``).
* ``parent``: the event that scheduled this one.  An event's source key
  ``(c, s)`` (see :func:`tickpar.kernel.eventq.canonical_source`) names component
  ``c``'s ``s``-th insertion; the parent is the event of ``c`` whose seq range
  ``(first, last]`` contains ``s``.  ``-1`` (a *root*) when there is none: the
  event was scheduled by ``init()``, or by ``c`` while ``c`` was inside a
  *direct call* made by another component's event (the recording does not say
  which event made the call).  A lost edge only shortens paths, so every bound
  below stays an upper bound, just a looser one.  Reschedules count: the parent
  is whoever scheduled the event last.
* Processing order is a topological order (a parent precedes its children) and
  ``when`` never decreases along it.

The table is JSON-serialisable (:meth:`Dag.to_dict`) and CSV-serialisable
(``dag.events.to_csv``); with it travel the component names and the model's
static ``lookahead_graph()`` ``(src, dst, min latency)``, direct calls as 0.

Costs
-----
Every event costs ``ĉ_i = cost_s_i + o_event`` when run by a parallel engine:
``o_event`` is what a parallel engine adds per event on top of the sequential
run (handing the event to a worker and dispatching it there; locks).  Each
barrier / window synchronisation costs ``o_sync(P)``.  The sequential
reference pays neither: ``T1 = sum(cost_s)``, so ``speedup(1) <= 1`` as soon
as there is overhead, and every bound with overheads is at most the same bound
without them.  :class:`Overheads` comes as presets (:func:`overheads`):

* ``zero``: ``o_event = o_sync = 0``: the DAG's own limits.
* ``cxx``: the native C++ engine's costs, measured by ``tickpar calibrate`` (:func:`cxx_costs`:
  a mutex per event, a spinning barrier round per doubling of ``P``, a cross-thread message), read
  from the calibration file it names.
* ``here`` (older name ``calibrated``): measured in this process, as the prediction's ``here``
  preset for threads: ``o_event`` is the sequential engine's own per-event cost with no work (a
  component rescheduling one event, through the real :class:`~tickpar.kernel.model.Model` and
  queue), i.e. a parallel engine is assumed to redo at least that bookkeeping once per event;
  ``o_sync(P) = a + b log2 P`` fitted to window exchanges between ``2 <= P <= cores`` threads
  (it grows with ``P``; process and MPI backends synchronise at other costs).

Bounds (``P`` workers, ``W = sum(ĉ)``)
---------------------------------------
``unconstrained``
    ``speedup = T1 / max(W / P, CP)``, ``CP`` the longest ``ĉ``-weighted
    parent->child path.  Any schedule of the DAG on ``P`` workers takes at least
    both terms.  Ignores: that a component's events touch shared state (they
    may run concurrently here), every synchronisation cost, and lookahead.
``component``
    ``speedup = T1 / max(W / P, max_c W_c)``, ``W_c`` the sum of ``ĉ`` over
    component ``c``'s events: a component's events are serial under every
    correct strategy.  Ignores the DAG's edges and synchronisation.
``causal``
    As ``unconstrained`` with ``CP`` taken over the DAG plus each component's
    program order (its events in sequential order): the ideal optimistic PDES
    with free rollback-free synchronisation.  At most both bounds above.
``tick-barrier``
    Events run in batches separated by barriers, as the strategy runs them
    (:func:`tick_groups`): a batch is one ``(when, priority)`` bin, popped at
    once, plus the zero-delay children its events schedule into the running
    bin (or an earlier priority of the same tick), which run inside the batch
    in the group that scheduled them.  A group is a component's popped events
    (the lock key) and their in-batch children, run serially.  Batches with
    fewer than ``min_parallel`` popped events or a single group, and every
    batch at ``P = 1``, run the plain loop: their recorded cost, no barrier.
    Otherwise ``batch time = max(largest group, batch work / P) + o_sync(P)``,
    below the makespan of any schedule, so the bound is a true upper bound of
    what the strategy can do (:func:`tick_barrier_time` with
    ``optimistic=False`` uses LPT list scheduling instead: a prediction).
    Ignores: the cost of forming the batch and of replaying its insertions.
``conservative``
    Components are partitioned into ``k`` logical processes; the lookahead
    ``L`` is the smallest static latency between components of different LPs.
    Windows ``[t, t + L)`` start at the global next event time ``t``;
    ``window time = max over LPs of the LP's ĉ in the window + o_sync(P)``,
    ``total = sum over windows``.  The default partition: components coupled
    at zero latency are merged (else ``L = 0``), then the groups are balanced
    by total ``ĉ`` (LPT) into ``k`` LPs; the bound is the best of these for
    ``k`` in the worker list up to ``P`` (``k = 1``: one window, no
    parallelism).  A given partition is used as is.  With ``L = 0`` (only with
    a given partition) windows become the tick-barrier batches, grouped by LP.
    ``L = inf`` (no cross-LP coupling) is one window.  Ignores: null messages
    and message costs, load imbalance inside an LP's window beyond its total,
    and that real windows may use per-pair lookahead (it is a global window).
    With ``o_msg``, each event whose parent ran on another LP adds ``o_msg``
    to its LP's load.  :func:`null_message_time` is the null-message
    counterpart: the DAG's longest path with each LP's events chained.
``conservative`` with ``schedule=adaptive`` (:func:`adaptive_window_time`)
    The same windows over a partition into ``K >= P`` LPs (the strategy's own,
    :func:`tickpar.pdes.adaptive.fine_plan`), whose LPs are handed to the
    ``P`` workers afresh every window.  The bound: per window
    ``max(largest LP load, window load / P)``, below any schedule of whole LPs
    onto ``P`` workers.  The model (``optimistic=False``): per window, the LPs
    in the order of their load in the previous window (largest first; the
    first window in LP order), each started on the worker free first, with
    this window's loads: what the engine's LPT lists and stealing do when
    every LP's cost is known only after the fact.  Ignores what visiting an LP
    costs (a claim, a mask, the cost clock: tens of nanoseconds each).

Every bound is ``<= P`` without overheads and non-decreasing in ``P`` when
``o_sync`` does not grow with ``P`` (``zero`` and ``cxx``); with calibrated
barrier costs the barrier-bound ones may fall at large ``P``, as measured runs do.

:func:`bounds` returns the tidy table: one row per (bound, workers), with
``speedup``, ``efficiency = speedup / workers``, the predicted ``time_s``,
``t1_s``, ``syncs`` (barriers or windows), the overheads and a JSON ``params``
string of bound-specific figures (critical path, lookahead, LPs, batches).
"""

from __future__ import annotations

import heapq
import json
import os
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from tickpar.pdes.partition import pack_balanced
from tickpar.perf.predict.calibrate import (  # re-exported (module docstring)
    calibrate_barrier,
    calibrate_event_cost,
    measured_sync,
    thread_exchange,
)
from tickpar.perf.predict.costs import (  # re-exported (module docstring)
    CALIBRATION_ENV,
    Overheads,
    calibration_figures,
    cxx_calibration,
    cxx_costs,
    cxx_overheads,
    fit_sync,
    sync_cost,
)
from tickpar.perf.predict.dag import (  # re-exported (module docstring)
    DAG_FORMAT,
    Dag,
    find_parents,
    record_dag,
)

__all__ = [
    "BOUNDS",
    "CALIBRATION_ENV",
    "DAG_FORMAT",
    "OVERHEAD_PRESETS",
    "Dag",
    "Overheads",
    "adaptive_window_time",
    "balanced_partition",
    "bounds",
    "calibrate_barrier",
    "calibrate_event_cost",
    "component_costs",
    "critical_path",
    "crossing",
    "cxx_calibration",
    "cxx_costs",
    "cxx_overheads",
    "default_workers",
    "find_parents",
    "lookahead_of",
    "null_message_time",
    "overheads",
    "record_dag",
    "tick_barrier_time",
    "tick_batches",
    "tick_groups",
    "window_time",
]
BOUNDS = ("unconstrained", "component", "causal", "tick-barrier", "conservative")
#: The bounds' presets, named as the prediction's (:data:`tickpar.perf.predict.costs.PRESETS`) plus ``zero``;
#: ``calibrated`` is ``here``'s older name, still taken.
OVERHEAD_PRESETS = ("here", "cxx", "zero", "calibrated")


def overheads(name: str, workers: Sequence[int] = (1,)) -> Overheads:
    """A preset: ``zero``, ``cxx`` (:func:`cxx_costs`, the native engine's calibration) or ``here``.

    ``here`` (``calibrated`` is its older name) is the prediction's ``here`` preset for threads: this
    process's per-event cost and its one sync calibration, window exchanges between ``P`` threads at
    ``2 <= P <= cores`` fitted to ``a + b log2 P`` (:func:`tickpar.perf.predict.calibrate.measured_sync`,
    :func:`tickpar.perf.predict.costs.sync_cost`).  ``workers``: unused (the fit covers every ``P``).
    """
    if name == "zero":
        return Overheads("zero", 0.0, 0.0)
    if name == "cxx":
        return cxx_overheads()
    if name in ("here", "calibrated"):
        cores = max(1, len(os.sched_getaffinity(0)))
        sync = sync_cost(*fit_sync(measured_sync(thread_exchange, cores)))
        return Overheads("here", calibrate_event_cost(), sync, source="this process: o_event and the threads exchange")
    raise ValueError(f"overheads {name!r} is not allowed: choose one of {', '.join(OVERHEAD_PRESETS)}")


def default_workers(workers_max: int) -> list[int]:
    """1, 2, 4, ... up to ``workers_max`` (and ``workers_max`` itself)."""
    if workers_max < 1:
        raise ValueError(f"workers_max={workers_max} is not allowed: an int >= 1")
    out = []
    p = 1
    while p < workers_max:
        out.append(p)
        p *= 2
    out.append(workers_max)
    return out


# -- building blocks -----------------------------------------------------------------------------
def _costs(dag: Dag, o_event: float) -> np.ndarray:
    return dag.events["cost_s"].to_numpy(dtype=np.float64) + o_event


def component_costs(dag: Dag, o_event: float = 0.0) -> np.ndarray:
    """Total ``cost_s + o_event`` of each component's events, by component id (partition weights)."""
    return np.bincount(dag.events["component"].to_numpy(), weights=_costs(dag, o_event), minlength=len(dag.components))


def critical_path(dag: Dag, o_event: float = 0.0, component_order: bool = False) -> float:
    """Longest ``cost_s + o_event``-weighted path; with ``component_order`` each component's events chain too."""
    cost = _costs(dag, o_event).tolist()
    parent = dag.events["parent"].tolist()
    comp = dag.events["component"].tolist()
    finish = [0.0] * len(cost)
    comp_finish: dict[int, float] = {}
    best = 0.0
    for i, c in enumerate(cost):
        start = finish[parent[i]] if parent[i] >= 0 else 0.0
        if component_order:
            start = max(start, comp_finish.get(comp[i], 0.0))
        f = start + c
        finish[i] = f
        if component_order:
            comp_finish[comp[i]] = f
        if f > best:
            best = f
    return best


def tick_groups(dag: Dag) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(batch, group, popped)`` of every event under tick-barrier execution.

    A batch starts at an event whose ``(when, priority)`` key ``K`` is above
    the running batch's key and holds every following event with key ``<= K``:
    the bin's events, popped when the batch starts, and the zero-delay children
    they schedule into the running bin or an earlier priority of the same tick,
    which the strategy runs inside the batch, in the group that scheduled them.
    ``group``: the component for a popped event (``lock_key=component``), the
    parent's group for an in-batch child.  ``popped``: whether it was popped
    when the batch started (the strategy's ``min_parallel`` counts these).
    """
    ev = dag.events
    n = len(ev)
    batch = [0] * n
    group = [0] * n
    popped = [True] * n
    when = ev["when"].tolist()
    prio = ev["priority"].tolist()
    parent = ev["parent"].tolist()
    comp = ev["component"].tolist()
    b = -1
    key: tuple[int, int] | None = None
    start = 0
    for i in range(n):
        k = (when[i], prio[i])
        if key is None or k > key:
            b, key, start = b + 1, k, i
        batch[i] = b
        p = parent[i]
        if p >= start:
            group[i] = group[p]
            popped[i] = False
        else:
            group[i] = comp[i]
    return np.asarray(batch, dtype=np.int64), np.asarray(group, dtype=np.int64), np.asarray(popped, dtype=bool)


def tick_batches(dag: Dag) -> np.ndarray:
    """Batch number of every event under tick-barrier execution (see :func:`tick_groups`)."""
    return tick_groups(dag)[0]


def tick_barrier_time(
    dag: Dag,
    cost: np.ndarray,
    workers: Sequence[int],
    costs: Overheads,
    min_parallel: int = 2,
    optimistic: bool = True,
    handoff: tuple[float, float] | None = None,
) -> dict[int, tuple[float, int]]:
    """``{P: (time, barriers)}`` of the tick-barrier strategy on ``dag`` (costs ``cost`` incl. ``o_event``).

    As the strategy: a batch with fewer than ``min_parallel`` popped events,
    with one group, or any batch at ``P = 1`` runs the plain loop (the recorded
    ``cost_s``, no ``o_event``, no barrier); else its groups run in parallel
    and a barrier ``o_sync(P)`` ends it.  ``optimistic``: the batch makespan is
    ``max(largest group, batch work / P)``, below any schedule's (an upper
    bound on speedup); else LPT list scheduling on the best ``P' <= P``
    workers (a prediction: a shared counter hands out groups greedily).
    ``handoff`` ``(per batch, per popped event)`` seconds: the native engine's threshold, under which a
    batch whose plain-loop cost times ``1 - 1/P`` is below ``per batch + per event x popped`` runs the plain
    loop too (``tickpar_native.run``'s ``min_batch_ns``, ``batch_event_ns``).
    """
    ps = sorted({int(p) for p in workers})
    out = {p: (0.0, 0) for p in ps}
    if len(dag) == 0:
        return out
    batch, group, popped = tick_groups(dag)
    nb = int(batch[-1]) + 1
    base = dag.events["cost_s"].to_numpy(dtype=np.float64)
    # Each batch's groups, as sums of their events' costs (numpy: a million events in well under a second).
    keys, inverse = np.unique(batch * (int(group.max()) + 1) + group, return_inverse=True)
    sums = np.bincount(inverse.ravel(), weights=cost)
    key_batch = keys // (int(group.max()) + 1)
    largest = np.zeros(nb)
    np.maximum.at(largest, key_batch, sums)
    work = np.bincount(batch, weights=cost, minlength=nb)
    serial = np.bincount(batch, weights=base, minlength=nb)
    pops = np.bincount(batch, weights=popped.astype(np.float64), minlength=nb)
    formed = (np.bincount(key_batch, minlength=nb) > 1) & (pops >= min_parallel)
    jobs: list[list[float]] = [[] for _ in range(nb)]
    if not optimistic:
        for b, v in zip(key_batch.tolist(), sums.tolist(), strict=True):
            jobs[b].append(v)
    for p in ps:
        if p == 1:
            out[p] = (float(serial.sum()), 0)
            continue
        parallel = formed
        if handoff is not None:
            parallel = formed & (serial * (1.0 - 1.0 / p) >= handoff[0] + handoff[1] * pops)
        serial_total = float(serial.sum() - serial[parallel].sum())
        if optimistic:
            span = float(np.maximum(largest[parallel], work[parallel] / p).sum())
        else:
            span = batched_makespans([jobs[i] for i in np.flatnonzero(parallel)], [p])[p]
        barriers = int(parallel.sum())
        out[p] = (serial_total + span + barriers * costs.sync(p), barriers)
    return out


def lpt_makespan(jobs: list[float], workers: int) -> float:
    """Makespan of longest-processing-time-first list scheduling of ``jobs`` on ``workers``."""
    if len(jobs) <= workers:
        return max(jobs, default=0.0)
    if workers == 1:
        return sum(jobs)
    loads = [0.0] * workers
    for j in sorted(jobs, reverse=True):
        heapq.heapreplace(loads, loads[0] + j)
    return max(loads)


def _group_sums(batch: np.ndarray, key: np.ndarray, cost: np.ndarray) -> list[list[float]]:
    """For each batch, the list of per-key cost sums."""
    if len(batch) == 0:
        return []
    frame = pd.DataFrame({"b": batch, "k": key, "c": cost})
    sums = frame.groupby(["b", "k"], sort=True)["c"].sum()
    out: list[list[float]] = [[] for _ in range(int(batch.max()) + 1)]
    for (b, _k), v in zip(sums.index.tolist(), sums.tolist(), strict=True):
        out[b].append(v)
    return out


def batched_makespans(groups: list[list[float]], workers: Sequence[int]) -> dict[int, float]:
    """Sum over batches of the best LPT makespan with at most ``P`` workers, for each ``P``."""
    ps = sorted(set(workers))
    total = dict.fromkeys(ps, 0.0)
    for jobs in groups:
        largest = max(jobs)
        best = float("inf")
        for p in ps:
            if best > largest:  # once down to the largest group it cannot get better
                best = min(best, lpt_makespan(jobs, p))
            total[p] += best
    return total


def balanced_partition(dag: Dag, lps: int, o_event: float = 0.0) -> list[int]:
    """LP per component: zero-latency clusters assigned longest-first to the least-loaded of ``lps`` LPs."""
    if lps < 1:
        raise ValueError(f"lps={lps}: an int >= 1")
    per_comp = component_costs(dag, o_event)
    return pack_balanced(len(dag.components), dag.lookahead, lps, [float(c) for c in per_comp])


def lookahead_of(dag: Dag, partition: Sequence[int]) -> int | None:
    """Smallest static latency between components in different LPs (``None``: no such coupling)."""
    lats = [lat for s, d, lat in dag.lookahead if partition[s] != partition[d]]
    return min(lats) if lats else None


def _windows(when: np.ndarray, lookahead: int | None) -> np.ndarray:
    """Window number per event: windows ``[t, t + L)`` from the global next event time."""
    n = len(when)
    win = np.zeros(n, dtype=np.int64)
    if lookahead is None or n == 0:
        return win
    ticks = when.tolist()
    starts = []
    i = 0
    while i < n:
        starts.append(i)
        i = bisect_left(ticks, ticks[i] + lookahead, i)
    win[np.asarray(starts[1:], dtype=np.int64)] = 1
    return np.cumsum(win)


def crossing(dag: Dag, lp_of: np.ndarray) -> np.ndarray:
    """1.0 for each event whose parent ran on another LP (a message), else 0.0 (``lp_of``: LP per event)."""
    parent = dag.events["parent"].to_numpy()
    has = parent >= 0
    out = np.zeros(len(parent), dtype=np.float64)
    out[has] = (lp_of[parent[has]] != lp_of[has]).astype(np.float64)
    return out


def null_message_time(dag: Dag, partition: Sequence[int], cost: np.ndarray, o_msg: float = 0.0) -> float:
    """Chandy-Misra-Bryant with free null messages: the longest path through the DAG plus each LP's order.

    An LP runs its events one at a time, in time order, and an event waits for
    its parent (plus ``o_msg`` when the parent ran on another LP).  The real
    protocol also waits for its input channels' promises, so this is a lower
    bound on its time (an upper bound on its speedup).
    """
    lp_of = np.asarray(partition, dtype=np.int64)[dag.events["component"].to_numpy()]
    msg = (o_msg * crossing(dag, lp_of)).tolist()
    parent = dag.events["parent"].tolist()
    lps = lp_of.tolist()
    finish = [0.0] * len(parent)
    lp_finish: dict[int, float] = {}
    best = 0.0
    for i, c in enumerate(cost.tolist()):
        p = parent[i]
        start = max(finish[p] + msg[i] if p >= 0 else 0.0, lp_finish.get(lps[i], 0.0))
        f = finish[i] = start + c
        lp_finish[lps[i]] = f
        best = max(best, f)
    return best


def _conservative_work(
    dag: Dag,
    partition: Sequence[int],
    cost: np.ndarray,
    cache: dict[int | None, np.ndarray] | None = None,
    o_msg: float = 0.0,
) -> tuple[float, int, int | None]:
    """(sum over windows of the largest LP load, windows, lookahead) for one partition."""
    if len(partition) != len(dag.components):
        raise ValueError(f"partition has {len(partition)} entries for {len(dag.components)} components")
    if len(dag) == 0:
        return 0.0, 0, lookahead_of(dag, partition)
    lp_of = np.asarray(partition, dtype=np.int64)[dag.events["component"].to_numpy()]
    lookahead = lookahead_of(dag, partition)
    if o_msg:
        cost = cost + o_msg * crossing(dag, lp_of)
    if lookahead == 0:
        groups = _group_sums(tick_batches(dag), lp_of, cost)
        return sum(max(g) for g in groups), len(groups), 0
    cache = {} if cache is None else cache
    if lookahead not in cache:
        cache[lookahead] = _windows(dag.events["when"].to_numpy(), lookahead)
    win = cache[lookahead]
    k = int(lp_of.max()) + 1
    nwin = int(win[-1]) + 1
    loads = np.bincount(win * k + lp_of, weights=cost, minlength=nwin * k).reshape(nwin, k)
    return float(loads.max(axis=1).sum()), nwin, lookahead


def adaptive_window_time(
    dag: Dag, partition: Sequence[int], cost: np.ndarray, workers: int, o_msg: float = 0.0, optimistic: bool = True
) -> tuple[float, int, int | None]:
    """``(sum over windows of the workers' makespan, windows, lookahead)`` of conservative's adaptive schedule.

    ``partition``: the LP of every component (``K`` LPs, any ``K``); ``workers``: ``P``.  Per window, the
    LPs' loads (``cost``, plus ``o_msg`` for each event whose parent ran on another LP) are scheduled
    whole onto ``P`` workers: ``optimistic`` (the bound) ``max(largest LP, load / P)``; else (the model)
    in the previous window's load order, largest first (ties: the lower LP; the first window in LP
    order), each LP on the worker free first (module docstring).  No sync cost is added.
    """
    if len(partition) != len(dag.components):
        raise ValueError(f"partition has {len(partition)} entries for {len(dag.components)} components")
    if workers < 1:
        raise ValueError(f"workers={workers} is not allowed: an int >= 1")
    lookahead = lookahead_of(dag, partition)
    if len(dag) == 0:
        return 0.0, 0, lookahead
    lp_of = np.asarray(partition, dtype=np.int64)[dag.events["component"].to_numpy()]
    if o_msg:
        cost = cost + o_msg * crossing(dag, lp_of)
    win = tick_batches(dag) if lookahead == 0 else _windows(dag.events["when"].to_numpy(), lookahead)
    k = int(max(partition)) + 1
    nwin = int(win[-1]) + 1
    loads = np.bincount(win * k + lp_of, weights=cost, minlength=nwin * k).reshape(nwin, k)
    if optimistic or workers == 1:
        span = np.maximum(loads.max(axis=1), loads.sum(axis=1) / workers)
        return float(span.sum()), nwin, lookahead
    predicted = np.vstack([np.zeros((1, k)), loads[:-1]])
    order = np.argsort(-predicted, axis=1, kind="stable")  # largest first, ties: the lower LP
    rows = np.arange(nwin)
    finish = np.zeros((nwin, workers))
    for j in range(k):
        free = finish.argmin(axis=1)  # the worker free first (ties: the lower index)
        finish[rows, free] += loads[rows, order[:, j]]
    return float(finish.max(axis=1).sum()), nwin, lookahead


def window_time(
    dag: Dag, partition: Sequence[int], cost: np.ndarray, o_msg: float = 0.0
) -> tuple[float, int, int | None]:
    """``(sum over windows of the busiest LP's load, windows, lookahead)``: the window bound without sync costs."""
    return _conservative_work(dag, partition, cost, None, o_msg)


# -- the table -------------------------------------------------------------------------------------
def bounds(
    dag: Dag,
    workers: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
    costs: Overheads | None = None,
    partition: Callable[[int], Sequence[int]] | None = None,
    which: Sequence[str] = BOUNDS,
    min_parallel: int = 2,
) -> pd.DataFrame:
    """The tidy bounds table for ``dag`` (see the module docstring for every formula).

    ``min_parallel``: the tick-barrier strategy's option of that name.

    ``partition(P)`` (optional) gives the LP of every component for the
    conservative bound with ``P`` workers (at most ``P`` LPs); by default the
    best balanced partition into at most ``P`` LPs is used.
    """
    costs = costs or Overheads("zero")
    ps = sorted({int(p) for p in workers})
    if not ps or ps[0] < 1:
        raise ValueError(f"workers {list(workers)}: ints >= 1")
    unknown = [b for b in which if b not in BOUNDS]
    if unknown:
        raise ValueError(f"unknown bound {unknown[0]!r}: choose from {', '.join(BOUNDS)}")
    if len(dag) == 0:
        raise ValueError("the DAG has no events")
    o_event = costs.o_event
    t1 = dag.t1_s
    cost = _costs(dag, o_event)
    work = float(cost.sum())
    rows: list[dict[str, Any]] = []

    def add(bound: str, p: int, time_s: float, syncs: int, params: dict[str, Any], o_sync: float = 0.0) -> None:
        speedup = t1 / time_s if time_s > 0 else float(p)
        rows.append(
            {
                "bound": bound,
                "workers": p,
                "speedup": speedup,
                "efficiency": speedup / p,
                "time_s": time_s,
                "t1_s": t1,
                "syncs": syncs,
                "o_event_s": o_event,
                "o_sync_s": o_sync,
                "overheads": costs.name,
                "params": json.dumps(params, sort_keys=True),
            }
        )

    if "unconstrained" in which:
        cp = critical_path(dag, o_event)
        for p in ps:
            add("unconstrained", p, max(work / p, cp), 0, {"critical_path_s": cp, "events": len(dag)})
    if "component" in which:
        per_comp = component_costs(dag, o_event)
        heaviest = float(per_comp.max())
        top = int(per_comp.argmax())
        for p in ps:
            add("component", p, max(work / p, heaviest), 0, {"max_component_s": heaviest, "component": top})
    if "causal" in which:
        cp = critical_path(dag, o_event, component_order=True)
        for p in ps:
            add("causal", p, max(work / p, cp), 0, {"critical_path_s": cp})
    if "tick-barrier" in which:
        nb = int(tick_batches(dag)[-1]) + 1
        for p, (time_s, barriers) in tick_barrier_time(dag, cost, ps, costs, min_parallel).items():
            params = {"batches": nb, "events_per_batch": len(dag) / nb, "barriers": barriers}
            add("tick-barrier", p, time_s, barriers, params, costs.sync(p))
    if "conservative" in which:
        for p, (span, nwin, params, sync) in _conservative_bounds(dag, ps, cost, costs, partition).items():
            add("conservative", p, span + nwin * sync, nwin, params, sync)
    return pd.DataFrame(rows, columns=list(_TABLE_COLUMNS))


def _conservative_bounds(
    dag: Dag, ps: Sequence[int], cost: np.ndarray, costs: Overheads, partition: Callable[[int], Sequence[int]] | None
) -> dict[int, tuple[float, int, dict[str, Any], float]]:
    """Per worker count: the conservative bound's ``(work span, windows, params, o_sync)``: the given partition,
    else the best balanced one into at most ``P`` LPs (module docstring)."""
    candidates: list[tuple[int, float, int, int | None]] = []  # (LPs, work, windows, lookahead)
    windows: dict[int | None, np.ndarray] = {}
    out = {}
    for p in ps:
        sync = costs.sync(p)
        if partition is None:
            part = balanced_partition(dag, p, costs.o_event)
            candidates.append((len(set(part)), *_conservative_work(dag, part, cost, windows, costs.o_msg)))
            pool = candidates
        else:
            part = list(partition(p))
            if len(set(part)) > p:
                raise ValueError(f"partition for {p} workers has {len(set(part))} LPs: at most {p}")
            pool = [(len(set(part)), *_conservative_work(dag, part, cost, windows, costs.o_msg))]
        lps, span, nwin, look = min(pool, key=lambda c: (c[1] + c[2] * sync, c[0]))
        params = {"lps": lps, "lookahead": look, "windows": nwin, "events_per_window": len(dag) / max(nwin, 1)}
        out[p] = (span, nwin, params, sync)
    return out


_TABLE_COLUMNS = (
    "bound",
    "workers",
    "speedup",
    "efficiency",
    "time_s",
    "t1_s",
    "syncs",
    "o_event_s",
    "o_sync_s",
    "overheads",
    "params",
)


def summary_text(dag: Dag, table: pd.DataFrame, costs: Overheads, calibration: Mapping[str, Any] | None = None) -> str:
    """A human-readable summary: one header line, the overheads, and speedup by workers x bound.

    ``calibration`` (``--overheads cxx``: the native engine's): its figures follow the bounds' parameters, each
    beside its floor (:func:`~tickpar.perf.predict.costs.calibration_figures`)."""
    spec = dag.meta.get("spec", {})
    ps = sorted(set(table["workers"].tolist()))
    if isinstance(costs.o_sync, dict) or callable(costs.o_sync):
        sync = ", ".join(f"P={p}: {costs.sync(p) * 1e6:.3g}" for p in ps)
    else:
        sync = f"{costs.sync(1) * 1e6:.3g}"
    lines = [
        f"{spec.get('workload', '?')} (seed={spec.get('seed', '?')}, order={spec.get('order', '?')}, "
        f"work={spec.get('work', '?')}): {len(dag)} events, {len(dag.components)} components, "
        f"{dag.roots()} roots, T1 = {dag.t1_s:.4g} s",
        f"overheads {costs.name}: o_event = {costs.o_event * 1e9:.3g} ns, o_sync (µs) = {sync}"
        + (f" (calibration: {costs.source})" if costs.source else ""),
    ]
    for bound in BOUNDS:
        rows = table[table["bound"] == bound]
        if len(rows):
            lines.append(f"  {bound}: {rows['params'].iloc[-1]}")
    if calibration is not None:
        lines.append("calibration, each cost beside its floor:")
        lines += [f"  {key} {text}" for key, text in calibration_figures(calibration)]
    pivot = table.pivot(index="workers", columns="bound", values="speedup")
    pivot = pivot[[b for b in BOUNDS if b in pivot.columns]]
    lines.append("speedup:")
    lines.append(pivot.to_string(float_format=lambda v: f"{v:.2f}"))
    return "\n".join(lines)
