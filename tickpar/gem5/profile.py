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
  constraints with every event at the same cost (:func:`tickpar.perf.bounds.bounds`, preset
  ``zero``): ``unconstrained`` (work / critical path), ``component`` (one component's events
  are serial), ``causal`` (ideal optimistic), ``tick-barrier`` (one (tick, priority) bin per
  batch) and ``conservative`` (windows of the lookahead, components coupled at delay 0 merged);
* ``footprint``: that the components an event touches are inferred from what it schedules, a
  lower bound of the true footprint, so every bound is an upper bound;
* ``rules``: how often each import rule decided something (:mod:`tickpar.gem5.importer`).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tickpar.gem5.emit import emit_trace
from tickpar.gem5.importer import ImportedTrace, import_trace
from tickpar.gem5.replay import replay_plan
from tickpar.native.record import DESCHEDULE
from tickpar.perf.bounds import bounds
from tickpar.perf.dag import Dag
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


def trace_dag(trace: ImportedTrace) -> Dag:
    """The served occurrences as a :class:`~tickpar.perf.dag.Dag` (uniform cost, parent = last scheduler)."""
    plan = replay_plan(trace)
    served = trace.served()
    sched = trace.schedulers()
    inst = [trace.occ_inst[k] for k in served]
    parent = [sched[i] for i in inst]  # occurrence ids are positions in execution order
    frame = pd.DataFrame(
        {
            "component": np.array([trace.inst_comp(i) for i in inst], dtype=np.int64),
            "when": np.array([trace.occ_tick[k] for k in served], dtype=np.int64),
            "priority": np.array([trace.inst_level[i] for i in inst], dtype=np.int64),
            "source": np.full(len(served), -1, dtype=np.int64),
            "first": np.zeros(len(served), dtype=np.int64),
            "last": np.zeros(len(served), dtype=np.int64),
            "cost_s": np.full(len(served), _EVENT_COST_S),
            "parent": np.array(parent, dtype=np.int64),
            "work_us": np.zeros(len(served)),
            "work_calls": np.zeros(len(served), dtype=np.int64),
        }
    )
    lookahead = {pair: lat for pair, lat in plan.latency.items()}
    for pair in plan.direct:
        lookahead[pair] = 0
    links = [(s, d, lat) for (s, d), lat in sorted(lookahead.items())]
    return Dag(frame, list(trace.components), links, {"trace": trace.path, "end_tick": trace.end_tick})


def _critical_path(parent: list[int]) -> int:
    depth = [0] * len(parent)
    for i, p in enumerate(parent):
        depth[i] = depth[p] + 1 if p >= 0 else 1
    return max(depth, default=0)


def _quantiles(values: list[int]) -> dict[str, float] | None:
    if not values:
        return None
    arr = np.asarray(values, dtype=np.float64)
    return {f"q{int(q * 100)}": float(np.quantile(arr, q)) for q in QUANTILES} | {"n": len(values)}


def trace_profile(trace: ImportedTrace, workers: tuple[int, ...] = PROFILE_WORKERS) -> dict[str, Any]:
    """The profile of ``trace`` (see the module docstring)."""
    served = trace.served()
    if not served:
        raise ValueError(f"{trace.path}: no event runs before the end tick {trace.end_tick}: nothing to profile")
    per_tick = Counter(trace.occ_tick[k] for k in served)
    histogram = Counter(per_tick.values())
    within: list[int] = []
    across: list[int] = []
    zero_cross = 0
    end = trace.end_tick
    for i, occ in enumerate(trace.op_occ):
        if occ < 0 or trace.op_kind[i] == DESCHEDULE or trace.occ_tick[occ] > end:
            continue
        mine = trace.inst_comp(trace.occ_inst[occ])
        other = trace.inst_comp(trace.op_inst[i])
        delay = trace.op_delay[i]
        (within if other == mine else across).append(delay)
        zero_cross += other != mine and delay == 0
    dag = trace_dag(trace)
    parent = dag.events["parent"].tolist()
    cp = _critical_path(parent)
    table = bounds(dag, workers, which=tuple(dict.fromkeys(STRATEGY_BOUNDS.values())))
    out_bounds: dict[str, dict[str, float]] = {}
    for strategy, bound in STRATEGY_BOUNDS.items():
        rows = table[table["bound"] == bound]
        pairs = zip(rows["workers"], rows["speedup"], strict=True)
        out_bounds[strategy] = {str(int(p)): round(float(s), 4) for p, s in pairs}
    busy = {trace.inst_comp(trace.occ_inst[k]) for k in served}
    reader = trace.reader
    return {
        "trace": trace.path,
        "format": trace.format,
        "events": len(served),
        "components": len(busy),
        "component_names": sorted(trace.components[c] for c in busy),
        "ticks": {"first": trace.occ_tick[served[0]], "last": trace.occ_tick[served[-1]]},
        "end_tick": end,
        "events_per_tick": {
            "histogram": {str(k): v for k, v in sorted(histogram.items())},
            "mean": len(served) / len(per_tick),
            "ticks": len(per_tick),
        },
        "zero_delay_cross_share": zero_cross / max(len(within) + len(across), 1),
        "schedule_delay": {"within": _quantiles(within), "across": _quantiles(across)},
        "critical_path": cp,
        "available_parallelism": len(served) / cp,
        "bounds": out_bounds,
        "traits": sorted(replay_plan(trace).traits()),
        "footprint": FOOTPRINT_NOTE,
        "rules": dict(sorted(trace.rules.items())),
        "lines": {
            "read": reader.lines if reader else 0,
            "events": reader.events if reader else 0,
            "skipped_banner": reader.skipped_banner if reader else 0,
            "skipped_other_flags": reader.skipped_other if reader else 0,
        },
        "warnings": list(reader.warnings) if reader else [],
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
    lines = [
        f"trace: {profile['trace']} ({profile['format']})",
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
    ps = list(next(iter(profile["bounds"].values())).keys())
    lines.append("bounds (ideal speedup, uniform event cost) at P = " + ", ".join(ps) + ":")
    for strategy, row in profile["bounds"].items():
        lines.append(f"  {strategy:>13}: " + "  ".join(f"{row[p]:.2f}" for p in ps))
    lines.append(f"traits: {', '.join(profile['traits']) or 'none'}")
    lines.append(f"note: {profile['footprint']}")
    rules = ", ".join(f"{k} {v:,}" for k, v in profile["rules"].items())
    lines.append(f"import rules applied: {rules or 'none'}")
    lines.extend(f"warning: {w}" for w in profile["warnings"])
    return lines


def profile_workload(workload: str, params: dict[str, Any], seed: int = 1) -> dict[str, Any]:
    """The profile of one workload shape: a ``gem5trace`` shape's trace itself, any other its emitted run."""
    from tickpar.kernel.params import resolve
    from tickpar.plugins.registry import get_registry

    cls = get_registry().workload(workload)
    resolved = resolve(cls.params, params, f"workload {workload} parameter")
    cls().check_params(resolved)
    if workload == "gem5trace":
        plan_params = {k: resolved[k] for k in ("trace", "format", "components", "events")}
        from tickpar.gem5 import EXAMPLE_COMPONENTS, EXAMPLE_TRACE

        trace = plan_params["trace"] or str(EXAMPLE_TRACE)
        components = plan_params["components"] or (str(EXAMPLE_COMPONENTS) if not plan_params["trace"] else None)
        profile = trace_profile(import_trace(trace, plan_params["format"], components, plan_params["events"]))
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
