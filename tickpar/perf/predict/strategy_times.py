"""Each strategy's time on one DAG under one preset: the bound (no overheads) and the model (with them).

:func:`strategy_time` prices a strategy's actual assignment (split's queue lock, tick-barrier's bins,
conservative's partition and windows) with :mod:`tickpar.perf.predict.bounds`' structural models;
:func:`provenance` says where each figure comes from.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from tickpar.perf.predict.bounds import (
    adaptive_window_time,
    balanced_partition,
    critical_path,
    null_message_time,
    tick_barrier_time,
    window_time,
)
from tickpar.perf.predict.costs import OVERLAP_MIN_CPU, Overheads, Preset, cxx_costs
from tickpar.perf.predict.dag import Dag, record_dag
from tickpar.plugins import BASELINE, LookaheadError, RunSpec

__all__ = [
    "MODELLED",
    "PREDICT_WORKERS",
    "least_cost_dag",
    "provenance",
    "strategy_partition",
    "strategy_time",
]
#: Strategies with a structural model (:func:`strategy_time`); others get no bound (their cells: NaN).
MODELLED = (BASELINE, "split", "tick-barrier", "conservative")
PREDICT_WORKERS = (1, 2, 4, 8, 16, 32, 64)


# -- one strategy on one DAG -----------------------------------------------------------------------
def strategy_backend(strategy: str, options: Mapping[str, Any]) -> str:
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
        adaptive = options.get("schedule") == "adaptive"
        for p in ps:
            if p == 1:
                out[p] = t1
                continue
            given = partition(p) if partition is not None else None
            part = list(given) if given is not None else balanced_partition(priced, p)
            if adaptive:  # the fine partition's LPs handed out per window: max(largest LP, load / P) per window
                out[p] = adaptive_window_time(priced, part, plain, p)[0]
            elif sync == "null-message":
                out[p] = null_message_time(priced, part, plain)
            else:
                out[p] = window_time(priced, part, plain)[0]
        return out
    raise ValueError(f"strategy {strategy!r}: no structural model (known: {', '.join(MODELLED)})")


def _engine_and_work(dag: Dag, costs: Preset) -> tuple[np.ndarray, np.ndarray]:
    """Each event's engine cost (the DAG's recorded ``cost_s``, or the preset's per event) and work cost."""
    engine = (
        dag.events["cost_s"].to_numpy(dtype=np.float64)
        if costs.event_s is None
        else np.full(len(dag), costs.event_s, dtype=np.float64)
    )
    work = (
        dag.events["work_calls"].to_numpy(dtype=np.float64) * costs.work_per_call_s
        + dag.events["work_us"].to_numpy(dtype=np.float64) * costs.work_per_us_s
    )
    return engine, work


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
    engine, work = _engine_and_work(dag, costs)
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
        # The native engine (the cxx preset) keeps a batch serial where handing it out costs more than it saves.
        handoff = (batch, costs.tb_event_s) if costs.name == "cxx" and batch is not None else None
        for p, (span, barriers) in tick_barrier_time(priced, mine, ps, tb_over, min_parallel, False, handoff).items():
            out[p] = span if p == 1 else max(span, tb_floor + barriers * tb_over.sync(p))
        return t1, out
    if strategy == "conservative":
        sync = str(options.get("sync", "window"))
        adaptive = options.get("schedule") == "adaptive"
        for p in ps:
            given = partition(p) if partition is not None else None
            part = list(given) if given is not None else balanced_partition(priced, p, over.o_event)
            mine = cost if p == 1 else beside
            if adaptive:  # per window: last window's order, largest first, each LP to the worker free first
                span, syncs, _look = adaptive_window_time(priced, part, mine, p, over.o_msg, optimistic=False)
                span += syncs * over.sync(p)
            elif sync == "null-message":
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
    from tickpar.pdes.adaptive import fine_plan, lps_max_of
    from tickpar.pdes.plan import DEFAULT_PARTITION_WEIGHTS, make_plan, partition_weights, partition_window_loads

    weighted_by = str(options.get("partition_weights", DEFAULT_PARTITION_WEIGHTS))
    weights = partition_weights(spec, weighted_by)
    window_loads = partition_window_loads(spec, weighted_by)
    model = spec.build_model(work="none")
    method = str(options.get("partition", "auto"))
    cache: dict[int, list[int]] = {}

    adaptive = options.get("schedule") == "adaptive"

    def lp_of(p: int) -> list[int]:
        if p not in cache:
            if adaptive:  # K >= P LPs, the run's own (tickpar.pdes.adaptive.fine_plan)
                plan, _part = fine_plan(model, p, lps_max_of(options, p), method=method, order=spec.order,
                                        weights=weights, weighted_by=weighted_by,
                                        window_loads=window_loads)  # fmt: skip
            else:
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


def partition_or_fallback(
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
            "time beside a second thread's over its time alone, per call size, work_overlap; sizes measured with "
            f"a core less than {OVERLAP_MIN_CPU} available are left out, and with none left it is 1)",
            "gil_handoff": f"calibration {calibration_file}: gil_handoff (threads under the GIL, P >= 2: per "
            "gil-release call size, what a second thread looping 'hold the GIL, one call' adds to a thread's "
            "iteration beyond max(hold + call, 2 holds), gil_handoff; added to each such call, half of it to "
            "the GIL floor; where it is absent, work_overlap inflates the calls instead)",
            "thread_handoff": f"calibration {calibration_file}: thread_handoff (threads under the GIL, P >= 2, "
            "tick-barrier and conservative: the excess per gil-release call, by call size, that makes this model "
            "give the speedup the strategy's own 2-worker run measured on the calibration's PHOLD shape "
            "(HANDOFF_SHAPE, not a sweep or held-out shape; conservative's o_event from its own 1-worker run "
            "there), "
            "tickpar.perf.predict.handoff.thread_handoff; where present it replaces gil_handoff for that strategy)",
            "tick_barrier": f"calibration {calibration_file}: tick_barrier (tick_barrier_costs: the batch "
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
