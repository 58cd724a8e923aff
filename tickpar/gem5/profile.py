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

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tickpar.gem5.coupling import Coupling, coupling, trace_traits
from tickpar.gem5.emit import emit_trace
from tickpar.gem5.importer import ImportedTrace, import_trace
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


def trace_dag(trace: ImportedTrace, c: Coupling | None = None) -> Dag:
    """The served occurrences as a :class:`~tickpar.perf.dag.Dag` (uniform cost, parent = last scheduler)."""
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
    frame = pd.DataFrame(
        {
            "component": np.asarray(c.inst_comp, dtype=np.int64)[inst],
            "when": np.asarray(trace.occ_tick, dtype=np.int64)[served],
            "priority": np.asarray(trace.inst_level, dtype=np.int64)[inst],
            "source": np.full(n, -1, dtype=np.int64),
            "first": np.zeros(n, dtype=np.int64),
            "last": np.zeros(n, dtype=np.int64),
            "cost_s": np.full(n, _EVENT_COST_S),
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


def trace_profile(trace: ImportedTrace, workers: tuple[int, ...] = PROFILE_WORKERS) -> dict[str, Any]:
    """The profile of ``trace`` (see the module docstring)."""
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
    dag = trace_dag(trace, c)
    table = bounds(dag, workers, which=tuple(dict.fromkeys(STRATEGY_BOUNDS.values())))
    unconstrained = json.loads(table[table["bound"] == "unconstrained"]["params"].iloc[0])
    cp = round(unconstrained["critical_path_s"] / _EVENT_COST_S)  # every event costs the same: a count
    out_bounds: dict[str, dict[str, float]] = {}
    for strategy, bound in STRATEGY_BOUNDS.items():
        rows = table[table["bound"] == bound]
        pairs = zip(rows["workers"], rows["speedup"], strict=True)
        out_bounds[strategy] = {str(int(p)): round(float(s), 4) for p, s in pairs}
    busy = np.unique(dag.events["component"].to_numpy())
    reader = trace.reader
    return {
        "trace": trace.path,
        "format": trace.format,
        "events": len(served),
        "components": len(busy),
        "component_names": sorted(trace.components[int(i)] for i in busy),
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
        from tickpar.gem5 import trace_source

        trace, components = trace_source(resolved["trace"], resolved["components"])
        profile = trace_profile(import_trace(trace, resolved["format"], components, resolved["events"]))
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
