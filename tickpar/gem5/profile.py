"""The parallelism profile of one gem5 run (``tickpar trace-profile``), from its imported trace.

:func:`trace_profile` returns a JSON-ready dict:

* ``events``, ``components``, ``ticks`` (``first``, ``last``), ``end_tick``;
* ``events_per_tick``: a histogram ``{events in a tick: ticks}`` and its mean;
* ``zero_delay_cross_share``: the share of schedules (and reschedules) made by an event that aim
  at another component's event at delay 0: coupling that no lookahead can cut;
* ``schedule_delay``: quantiles of ``when - curTick`` of those schedules, ``within`` one
  component and ``across`` components;
* ``critical_path`` (events on the longest parent -> child chain, a child's parent being the
  event that scheduled it last) and ``available_parallelism`` (events / critical path);
* ``bounds``: per strategy, the ideal speedup at P = 1, 2, 4, ..., 64 under the strategy's own
  constraints with every event at the same cost (:func:`tickpar.perf.predict.bounds.bounds`, preset
  ``zero``): ``unconstrained`` (work / critical path), ``component`` (one component's events
  are serial), ``causal`` (ideal optimistic), ``tick-barrier`` (one (tick, priority) bin per
  batch) and ``conservative`` (windows of the lookahead, components coupled at delay 0 merged);
* ``component_events``: the replayed events per component, busiest first;
* ``timeline``: parallelism over simulated time: the run cut into windows of the lookahead
  (``window_ticks``: the smallest delay of a message between components, what a conservative window
  may span; with gem5's 1-tick delays, a tick), and per span of about 1/:data:`TIMELINE_SPANS` of the
  run its ``busy_windows`` (windows with an event) and their mean ``events`` and active ``components``:
  what a window barrier can share out when there is work;
* ``footprint``: that the components an event touches are inferred from what it schedules, a
  lower bound of the true footprint, so every bound is an upper bound;
* ``rules``: how often each import rule decided something (:mod:`tickpar.gem5.importer`);
* ``cost``: the event cost the bounds weight events by (:meth:`tickpar.gem5.stats.EventCost.to_json`:
  which cost, from which stats file, traced or untraced), or ``None``: every event the same cost.
  With a cost, ``work_s`` (the replayed events' total cost), ``critical_path_s`` (the cost-weighted
  critical path) and ``weighted_parallelism`` (their ratio) are given too.  Under the run's mean
  alone every event still costs the same, so the bounds (ratios, no overheads) are those of a
  uniform cost; with per-component weights, events weigh their component's cost.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tickpar.gem5.coupling import Coupling, coupling, trace_traits
from tickpar.gem5.emit import emit_trace
from tickpar.gem5.importer import ImportedTrace, import_trace
from tickpar.gem5.stats import EventCost, run_event_cost
from tickpar.native.record import DESCHEDULE
from tickpar.perf.predict.bounds import bounds, critical_path
from tickpar.perf.predict.dag import Dag
from tickpar.plugins import RunSpec

__all__ = ["PROFILE_WORKERS", "STRATEGY_BOUNDS", "profile_spec", "summary_lines", "trace_dag", "trace_profile"]

PROFILE_WORKERS = (1, 2, 4, 8, 16, 32, 64)
#: The bound each strategy is held to (the DAG's own limits where a strategy adds no constraint).
STRATEGY_BOUNDS = {
    "unconstrained": "unconstrained",
    "component": "component",
    "optimistic": "causal",
    "tick-barrier": "tick-barrier",
    "conservative": "conservative",
}
QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)
FOOTPRINT_NOTE = (
    "footprints are inferred from the events each event schedules, reschedules or deschedules: a lower "
    "bound of the true footprint (gem5 handlers also call into components without scheduling there), so "
    "every bound is an upper bound"
)
_EVENT_COST_S = 1e-6  # uniform event cost: the bounds are ratios, the unit cancels
TIMELINE_SPANS = 60


def trace_dag(trace: ImportedTrace, c: Coupling | None = None, cost: EventCost | None = None) -> Dag:
    """The served occurrences as a :class:`~tickpar.perf.predict.dag.Dag` (parent = last scheduler).

    ``cost_s``: each event's component's cost under ``cost``, else the same for every event."""
    c = c if c is not None else coupling(trace)
    served = np.asarray(c.served, dtype=np.int64)
    n = len(served)
    inst = np.asarray(trace.occ_inst, dtype=np.int64)[served]
    # An instance's parent: the occurrence of its last schedule or reschedule (ids are execution positions).
    op_occ = np.asarray(trace.op_occ, dtype=np.int64)
    op_inst = np.asarray(trace.op_inst, dtype=np.int64)
    inserting = np.asarray(trace.op_kind, dtype=np.int64) != DESCHEDULE
    last = np.full(len(trace.inst_obj), -1, dtype=np.int64)
    last[op_inst[inserting]] = op_occ[inserting]  # numpy keeps the last write of a repeated index
    component = np.asarray(c.inst_comp, dtype=np.int64)[inst]
    if cost is None:
        cost_s = np.full(n, _EVENT_COST_S)
    else:
        per_comp = np.array([cost.cost_us(name) * 1e-6 for name in trace.components], dtype=np.float64)
        cost_s = per_comp[component] if n else np.zeros(0)
    frame = pd.DataFrame(
        {
            "component": component,
            "when": np.asarray(trace.occ_tick, dtype=np.int64)[served],
            "priority": np.asarray(trace.inst_level, dtype=np.int64)[inst],
            "source": np.full(n, -1, dtype=np.int64),
            "first": np.zeros(n, dtype=np.int64),
            "last": np.zeros(n, dtype=np.int64),
            "cost_s": cost_s,
            "parent": last[inst],
            "work_us": np.zeros(n),
            "work_calls": np.zeros(n, dtype=np.int64),
        }
    )
    lookahead = dict(c.latency)
    for pair in c.direct:
        lookahead[pair] = 0
    links = [(s, d, lat) for (s, d), lat in sorted(lookahead.items())]
    return Dag(frame, list(trace.components), links, {"trace": trace.path, "end_tick": trace.end_tick})


def _quantiles(values: np.ndarray) -> dict[str, float] | None:
    if not len(values):
        return None
    qs = np.quantile(values.astype(np.float64), QUANTILES)
    return {f"q{int(q * 100)}": float(v) for q, v in zip(QUANTILES, qs, strict=True)} | {"n": len(values)}


def _histogram(counts: np.ndarray) -> dict[str, int]:
    sizes, ticks = np.unique(counts, return_counts=True)
    return {str(int(k)): int(v) for k, v in zip(sizes, ticks, strict=True)}


def trace_profile(
    trace: ImportedTrace, workers: tuple[int, ...] = PROFILE_WORKERS, cost: EventCost | None = None
) -> dict[str, Any]:
    """The profile of ``trace`` (see the module docstring); ``cost``: the run's own event cost."""
    c = coupling(trace)
    served = np.asarray(c.served, dtype=np.int64)
    if not len(served):
        raise ValueError(f"{trace.path}: no event runs before the end tick {trace.end_tick}: nothing to profile")
    ticks = np.asarray(trace.occ_tick, dtype=np.int64)[served]
    _uniq, per_tick = np.unique(ticks, return_counts=True)
    occ_tick = np.asarray(trace.occ_tick, dtype=np.int64)
    op_occ = np.asarray(trace.op_occ, dtype=np.int64)
    made = (op_occ >= 0) & (np.asarray(trace.op_kind, dtype=np.int64) != DESCHEDULE)
    made &= occ_tick[np.maximum(op_occ, 0)] <= trace.end_tick
    delay = np.asarray(trace.op_delay, dtype=np.int64)[made]
    across = (np.asarray(c.op_src, dtype=np.int64) != np.asarray(c.op_dst, dtype=np.int64))[made]
    dag = trace_dag(trace, c, cost)
    table = bounds(dag, workers, which=tuple(dict.fromkeys(STRATEGY_BOUNDS.values())))
    unconstrained = json.loads(table[table["bound"] == "unconstrained"]["params"].iloc[0])
    critical_path_s = float(unconstrained["critical_path_s"])
    if cost is None or cost.per_component_us is None:  # every event costs the same: the path's cost is a count
        cp = round(critical_path_s / float(dag.events["cost_s"].iloc[0]))
    else:  # events weigh their component's cost: count the longest chain of events apart
        cp = round(critical_path(trace_dag(trace, c)) / _EVENT_COST_S)
    out_bounds: dict[str, dict[str, float]] = {}
    for strategy, bound in STRATEGY_BOUNDS.items():
        rows = table[table["bound"] == bound]
        pairs = zip(rows["workers"], rows["speedup"], strict=True)
        out_bounds[strategy] = {str(int(p)): round(float(s), 4) for p, s in pairs}
    busy = np.unique(dag.events["component"].to_numpy())
    comp_of = np.asarray(c.inst_comp, dtype=np.int64)[np.asarray(trace.occ_inst, dtype=np.int64)[served]]
    reader = trace.reader
    return {
        "trace": trace.path,
        "format": trace.format,
        "events": len(served),
        "components": len(busy),
        "component_names": sorted(trace.components[int(i)] for i in busy),
        "component_events": _component_events(trace, comp_of),
        "timeline": _timeline(ticks, comp_of, c),
        "ticks": {"first": int(ticks[0]), "last": int(ticks[-1])},
        "end_tick": trace.end_tick,
        "events_per_tick": {
            "histogram": _histogram(per_tick),
            "mean": len(served) / len(per_tick),
            "ticks": len(per_tick),
        },
        "zero_delay_cross_share": float((across & (delay == 0)).sum() / max(len(delay), 1)),
        "schedule_delay": {"within": _quantiles(delay[~across]), "across": _quantiles(delay[across])},
        "critical_path": cp,
        "available_parallelism": len(served) / cp,
        "bounds": out_bounds,
        "traits": sorted(trace_traits(trace, c)),
        "footprint": FOOTPRINT_NOTE,
        "rules": dict(sorted(trace.rules.items())),
        "lines": {
            "read": reader.lines if reader else 0,
            "events": reader.events if reader else 0,
            "skipped_banner": reader.skipped_banner if reader else 0,
            "skipped_other_flags": reader.skipped_other if reader else 0,
        },
        "warnings": list(reader.warnings) if reader else [],
        "cost": cost.to_json() if cost is not None else None,
    } | _weighted(dag, cost, critical_path_s)


def _component_events(trace: ImportedTrace, comp_of: np.ndarray) -> dict[str, int]:
    """Replayed events per component, busiest first."""
    ids, counts = np.unique(comp_of, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return {trace.components[int(ids[i])]: int(counts[i]) for i in order}


def _timeline(ticks: np.ndarray, comp_of: np.ndarray, c: Coupling) -> dict[str, Any]:
    """Events and active components per lookahead window, averaged over spans of the run (see the docstring)."""
    positive = [lat for lat in c.latency.values() if lat > 0]
    window = max(min(positive), 1) if positive else 1
    first = int(ticks[0])
    win = (ticks - first) // window
    windows = int(win[-1]) + 1
    per_span = max(1, -(-windows // TIMELINE_SPANS))
    span = win // per_span
    spans = []
    for k in range(int(span[-1]) + 1):
        mask = span == k
        busy = len(np.unique(win[mask]))
        pairs = np.unique(np.stack([win[mask], comp_of[mask]]), axis=1) if busy else np.empty((2, 0))
        spans.append({
            "start": first + k * per_span * window,
            "busy_windows": busy,
            "events": round(float(mask.sum()) / busy, 3) if busy else 0.0,
            "components": round(float(pairs.shape[1]) / busy, 3) if busy else 0.0,
        })  # fmt: skip
    return {"window_ticks": int(window), "windows": windows, "windows_per_span": per_span, "spans": spans}


def _weighted(dag: Dag, cost: EventCost | None, critical_path_s: float) -> dict[str, float]:
    """The profile's figures in the run's own time (none without a cost)."""
    if cost is None:
        return {}
    work_s = float(dag.events["cost_s"].sum())
    return {
        "work_s": work_s,
        "critical_path_s": critical_path_s,
        "weighted_parallelism": work_s / critical_path_s if critical_path_s > 0 else 1.0,
    }


def profile_spec(spec: RunSpec, workers: tuple[int, ...] = PROFILE_WORKERS) -> dict[str, Any]:
    """The same profile for a tickpar workload: its Python run, emitted as a stock trace and imported."""
    with tempfile.TemporaryDirectory(prefix="tickpar-profile-") as tmp:
        path = Path(tmp) / "run.event.txt"
        _lines, mapping = emit_trace(spec, path, "event")
        profile = trace_profile(import_trace(path, "event", mapping), workers)
    profile["trace"] = f"{spec.workload} {spec.params}"
    return profile


def summary_lines(profile: dict[str, Any]) -> list[str]:
    """The profile as the lines ``tickpar trace-profile`` prints."""
    ept = profile["events_per_tick"]
    delay = profile["schedule_delay"]
    cost = profile.get("cost")
    lines = [
        f"trace: {profile['trace']} ({profile['format']})",
        *([f"event cost: {cost['description']}"] if cost else []),
        f"events: {profile['events']:,} in {profile['components']} components, ticks "
        f"{profile['ticks']['first']:,}..{profile['ticks']['last']:,} (replay ends at {profile['end_tick']:,})",
        f"events per tick: mean {ept['mean']:.2f} over {ept['ticks']:,} ticks; histogram {ept['histogram']}",
        f"zero-delay schedules across components: {profile['zero_delay_cross_share']:.1%} of schedules",
    ]
    for side in ("within", "across"):
        q = delay[side]
        if q is not None:
            lines.append(
                f"schedule delay {side} components (n={q['n']:,}): min {q['q0']:,.0f}, median {q['q50']:,.0f}, "
                f"p90 {q['q90']:,.0f}, max {q['q100']:,.0f} ticks"
            )
    lines.append(
        f"critical path: {profile['critical_path']:,} events; available parallelism "
        f"{profile['available_parallelism']:.2f}"
    )
    if cost:
        lines.append(
            f"at the run's event cost: work {profile['work_s']:.4g} s, critical path "
            f"{profile['critical_path_s']:.4g} s, parallelism {profile['weighted_parallelism']:.2f}"
        )
    ps = list(next(iter(profile["bounds"].values())).keys())
    weighted = cost is not None and cost["per_component_us"] is not None
    weighing = "events weighted by their component's cost" if weighted else "uniform event cost"
    lines.append(f"bounds (ideal speedup, {weighing}) at P = " + ", ".join(ps) + ":")
    for strategy, row in profile["bounds"].items():
        lines.append(f"  {strategy:>13}: " + "  ".join(f"{row[p]:.2f}" for p in ps))
    lines.append(f"traits: {', '.join(profile['traits']) or 'none'}")
    lines.append(f"note: {profile['footprint']}")
    rules = ", ".join(f"{k} {v:,}" for k, v in profile["rules"].items())
    lines.append(f"import rules applied: {rules or 'none'}")
    lines.extend(f"warning: {w}" for w in profile["warnings"])
    lines.extend(f"warning: {w}" for w in (cost or {}).get("warnings", []))
    return lines


def profile_workload(workload: str, params: dict[str, Any], seed: int = 1) -> dict[str, Any]:
    """The profile of one workload shape: a ``gem5trace`` shape's trace itself, any other its emitted run."""
    from tickpar.kernel.params import resolve
    from tickpar.plugins.registry import get_registry

    cls = get_registry().workload(workload)
    resolved = resolve(cls.params, params, f"workload {workload} parameter")
    cls().check_params(resolved)
    if workload == "gem5trace":
        from tickpar.gem5 import trace_source

        path, components = trace_source(resolved["trace"], resolved["components"])
        fmt, events = resolved["format"], resolved["events"]
        trace = import_trace(path, fmt, components, events)
        cost = None
        if resolved.get("gem5_stats"):
            weights = resolved.get("cost_weights") or None
            cost = run_event_cost(
                resolved["gem5_stats"], trace, weights, fmt=fmt, components=components, events=events
            )
        profile = trace_profile(trace, cost=cost)
    else:
        profile = profile_spec(RunSpec(workload, resolved, seed))
    profile["workload"] = workload
    profile["params"] = {k: v for k, v in resolved.items()}
    return profile


def main(argv: list[str] | None = None) -> int:
    """``python -m tickpar.gem5.profile --workload W --params JSON --out FILE`` (the pipeline's profile job)."""
    import argparse
    import json

    from tickpar.runner import write_json_atomic

    parser = argparse.ArgumentParser(prog="python -m tickpar.gem5.profile", description=main.__doc__)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--params", default="{}", help="the shape's params as a JSON object")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    params = json.loads(args.params)
    try:
        profile = profile_workload(args.workload, params)
    except Exception as exc:  # a bad trace is this shape's result: the page says so and the sweep goes on
        error = f"{type(exc).__name__}: {exc}"
        write_json_atomic(args.out, {"workload": args.workload, "params": params, "error": error})
        print(f"profile of {args.workload} {params} failed: {error}")
        return 0
    write_json_atomic(args.out, profile)
    print("\n".join(summary_lines(profile)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
