"""What each thread strategy's two workers lose to the GIL's hand-offs per GIL-releasing call (issue #17).

Under the GIL a Python thread strategy's worker holds the GIL for an event's engine and handler code
and drops it for the ``gil-release`` work call; at two workers each drop hands the GIL to the other
worker, which must wake first (a futex wake of a halted vCPU), and what that costs depends on how long
each side holds the GIL and sleeps, not on the call alone.  The generic calibration
(:func:`tickpar.perf.predict.prediction.gil_handoff`) underestimated what the sweep's own thread cells lost,
because their workers hold the GIL longer per event than its loop does (the figures:
docs/measurements/2026-12-06-code-comments.md; bench/gil_handoff.py).

So each thread strategy is calibrated on its own runs, as tick-barrier's batch costs already are
(:func:`tickpar.perf.predict.prediction.tick_barrier_costs`): on :data:`HANDOFF_SHAPE`, a PHOLD shape that the
sweep does not have, at each call size of :data:`HANDOFF_CALLS_US`, the strategy's 2-worker loop and the
sequential loop are timed (best of ``repeats``, in this process), the shape's DAG is recorded, and the
excess per call is what makes the model (:func:`tickpar.perf.predict.prediction.strategy_time`, the same
function that predicts the sweep) give the measured speedup: solved by bisection, 0 where the model
without any excess is already at or below it.  Conservative's ``o_event`` is fitted on the same shape
from its own 1-worker run, as :func:`tickpar.perf.predict.prediction.one_worker_fits` fits it on the sweep's base
shapes.  Never fitted on a run the model predicts: the sweep's shapes and the held-out shapes differ
from this one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

__all__ = ["HANDOFF_CALLS_US", "HANDOFF_SHAPE", "HANDOFF_STRATEGIES", "solve_excess", "thread_handoff"]

#: The calibration shape: tick-barrier's own calibration shape (``TB_CALIBRATION_SHAPE``: 12 LPs, ~1,000
#: events, tens of events per tick and per lookahead window), not a shape of the default sweep.
HANDOFF_SHAPE: dict[str, Any] = {"lps": 12, "population": 6, "mean": 150.0, "lookahead": 500, "granularity": 400,
                                 "end_tick": 12_000}  # fmt: skip
#: Call sizes (µs of ``gil-release`` work per event); the model interpolates between them in log(size), flat beyond.
HANDOFF_CALLS_US = (3.0, 10.0, 30.0, 100.0, 300.0)
#: A run's requested work is held near this (µs): longer calls get a shorter ``end_tick`` (fewer events).
RUN_WORK_BUDGET_US = 40_000.0
#: The thread strategies calibrated: ``strategy -> (options, order)``, as the sweep runs them on threads.
HANDOFF_STRATEGIES: dict[str, tuple[dict[str, Any], str]] = {
    "tick-barrier": ({"executor": "threads", "lock_key": "component"}, "gem5"),
    "conservative": ({"sync": "window", "backend": "threads"}, "canonical"),
}
#: The bisection's upper end (seconds a call): far above any hand-off measured here (tens of µs).
MAX_EXCESS_S = 2e-3


def solve_excess(speedup_at: Any, measured: float, tolerance_s: float = 1e-8) -> float:
    """The excess ``x >= 0`` (seconds a call) at which ``speedup_at(x)`` equals ``measured``, by bisection.

    ``speedup_at`` must not rise with ``x``.  0 where even ``x = 0`` gives ``measured`` or less; ``MAX_EXCESS_S``
    where even that gives more.
    """
    lo, hi = 0.0, MAX_EXCESS_S
    if speedup_at(lo) <= measured:
        return 0.0
    if speedup_at(hi) >= measured:
        return hi
    while hi - lo > tolerance_s:
        mid = 0.5 * (lo + hi)
        if speedup_at(mid) > measured:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _end_tick(call_us: float) -> int:
    """``HANDOFF_SHAPE``'s end tick, shortened for long calls so that a sequential run asks ~RUN_WORK_BUDGET_US."""
    full = int(HANDOFF_SHAPE["end_tick"])
    events_full = 1000.0  # about HANDOFF_SHAPE's event count at its full end tick
    wanted = RUN_WORK_BUDGET_US / max(call_us, 1e-9)
    return full if wanted >= events_full else max(2000, int(full * wanted / events_full))


def thread_handoff(
    calibration: Mapping[str, Any],
    model: Mapping[str, Any],
    calls_us: Sequence[float] = HANDOFF_CALLS_US,
    repeats: int = 4,
) -> dict[str, Any]:
    """Per thread strategy and call size, the excess per GIL-releasing call that its own 2-worker runs show.

    ``calibration``: the rest of the ``here`` calibration (:func:`tickpar.perf.predict.prediction.calibrate`), whose
    costs price the model being solved; ``model``:
    :mod:`tickpar.perf.predict.prediction`'s ``least_cost_dag``, ``preset``
    and ``strategy_time`` by name.  Returns ``{"shape", "call_us", "cpu_available", "strategies":
    {strategy: {"excess_s", "measured_speedup", "model_free_speedup", "o_event_s", "options", "order"}}}``;
    empty where the GIL is off (no hand-off) or with fewer than 2 usable CPUs.
    """
    import os

    import numpy as np

    from tickpar.host.affinity import gil_disabled
    from tickpar.host.probe import cpu_availability
    from tickpar.plugins import BASELINE
    from tickpar.plugins.registry import get_registry
    from tickpar.runner import resolve_cell

    # The model's functions come from the caller (tickpar.perf.predict.prediction.calibrate): no import cycle.
    least_cost_dag, preset, strategy_time = model["least_cost_dag"], model["preset"], model["strategy_time"]

    if gil_disabled() or len(os.sched_getaffinity(0)) < 2:
        return {}
    registry = get_registry()

    def mean_loop(params: dict[str, Any], strategy: str, workers: int, options: dict[str, Any], order: str) -> float:
        # As the sweep times a cell (one warm-up, then values; the speedup a ratio of mean loop times): under the
        # GIL the 2-worker loop is bimodal per process (docs/measurements/2026-12-05-thread-handoff.md), and a
        # least value would pick the fast mode that the sweep's mean does not.
        cell = resolve_cell("phold", params, strategy, options, workers, seed=1, order=order, work="gil-release")
        runner = registry.strategy(cell.strategy)()
        loops = [float(runner.run(cell.spec, cell.workers, dict(cell.options)).stats["loop_s"])
                 for _ in range(repeats + 1)]  # fmt: skip
        return float(np.mean(loops[1:]))

    out: dict[str, Any] = {"shape": dict(HANDOFF_SHAPE), "call_us": [], "end_tick": [], "cpu_available": [],
                           "strategies": {s: {"excess_s": [], "measured_speedup": [], "model_free_speedup": [],
                                              "o_event_s": [], "options": o, "order": order}
                                          for s, (o, order) in HANDOFF_STRATEGIES.items()}}  # fmt: skip
    base = preset("here", "threads", "gil-release", calibration)
    for r in calls_us:
        params = {**HANDOFF_SHAPE, "end_tick": _end_tick(r), "work_us": float(r)}
        free = float(cpu_availability(0.05)["min"])
        for strategy, (options, order) in HANDOFF_STRATEGIES.items():
            seq = mean_loop(params, BASELINE, 1, {}, order)
            par = mean_loop(params, strategy, 2, options, order)
            spec = resolve_cell("phold", params, BASELINE, {}, 1, seed=1, order=order, work="gil-release").spec
            dag = least_cost_dag(spec, repeats)
            costs = base
            if strategy == "conservative":  # its o_event from its own 1-worker run, as the sweep's fit
                one = mean_loop(params, strategy, 1, options, order)
                o_event = max(0.0, one - seq) / max(len(dag), 1)
                costs = replace(base, overheads=replace(base.overheads, o_event=o_event))
            else:
                o_event = float(base.overheads.o_event)
            measured = seq / par if par > 0 else math.nan

            def speedup_at(x: float, dag: Any = dag, costs: Any = costs, strategy: str = strategy,
                           options: dict[str, Any] = options, call_us: float = float(r)) -> float:  # fmt: skip
                priced = replace(costs, gil_excess=((call_us, x),), thread_excess=())
                t1, times = strategy_time(dag, strategy, options, priced, [2], optimistic=False)
                return t1 / times[2]

            entry = out["strategies"][strategy]
            entry["excess_s"].append(solve_excess(speedup_at, measured) if np.isfinite(measured) else 0.0)
            entry["measured_speedup"].append(measured)
            entry["model_free_speedup"].append(speedup_at(0.0))
            entry["o_event_s"].append(o_event)
        out["call_us"].append(float(r))
        out["end_tick"].append(int(params["end_tick"]))
        out["cpu_available"].append(min(free, float(cpu_availability(0.05)["min"])))
    return out
