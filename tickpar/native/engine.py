"""A cell on the native engine: record the DAG once, replay it in C++, report it as the oracle reads it.

:func:`run_native` records the spec's DAG (:func:`tickpar.native.record.record`, cached per spec
in this process, so a timing worker records once and replays every value), replays it under the
strategy on ``std::thread``\\ s, and returns an :class:`~tickpar.verify.oracle.OracleRecord` whose
components carry their count, last tick and, with a traced spec, the trace of ``[tick, priority,
event name]``.  The native engine has no model state, so it is judged on those traces:
:func:`native_golden` projects a Python golden record onto the same rows and digests, and
:func:`~tickpar.verify.oracle.compare` then gives the usual verdicts (``exact``, ``diverged`` with
the first divergence, ``causality`` with the failing schedule, ``race``, ``deadlock``).

Options the native engine does not take (:data:`NOT_TAKEN`) must stay at their defaults; the
interleave executor's options of ``split`` are ignored (native ``split`` always runs real threads,
as the seed prototype did), as are ``executor`` of ``tick-barrier`` and ``start_method``,
``oversubscribe`` and ``stall_s`` of the partitioned strategies.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from functools import lru_cache
from typing import Any

from tickpar.kernel.params import ParamError
from tickpar.native.record import RecordedDag, record
from tickpar.pdes.plan import DEFAULT_PARTITION_WEIGHTS, make_plan, partition_weights, partition_window_loads
from tickpar.plugins import RunSpec, base_stats
from tickpar.verify.oracle import OracleRecord, global_digest

__all__ = [
    "BUILD_HINT",
    "ENGINES",
    "NATIVE_STRATEGIES",
    "NATIVE_VALUE_S",
    "NOT_TAKEN",
    "RUNS_AS",
    "TB_CALIBRATION_SHAPE",
    "available",
    "calibrate",
    "check_native_cell",
    "engine_args",
    "native_golden",
    "replays_for",
    "require",
    "run_native",
    "tick_barrier_batch_ns",
    "untraced_golden",
]

ENGINES = ("python", "native")
NATIVE_STRATEGIES = ("sequential", "split", "tick-barrier", "conservative", "quantum")
BUILD_HINT = "the native engine is not built: run `pip install ./native` (or `make native`) in the repository root"
#: Options the native engine does not take: they must keep these values.
NOT_TAKEN: dict[str, dict[str, Any]] = {
    "split": {"pop_ahead": 0},
    "tick-barrier": {"debug_invariants": False},
    "conservative": {"sync": "window", "backend": "threads"},
    "quantum": {"backend": "threads"},
}
#: Options a native run behaves as, whatever the cell says (its promise is the strategy's for these).
RUNS_AS: dict[str, dict[str, Any]] = {"split": {"executor": "threads"}}


def _module() -> Any:
    import tickpar_native

    return tickpar_native


def available() -> bool:
    """True when the extension imports."""
    try:
        _module()
    except ImportError:
        return False
    return True


def require(strategy: str | None = None, options: dict[str, Any] | None = None) -> None:
    """A one-line :class:`ParamError` where the engine is missing or cannot run this strategy/options."""
    if not available():
        raise ParamError(BUILD_HINT)
    if strategy is None:
        return
    if strategy not in NATIVE_STRATEGIES:
        raise ParamError(
            f"strategy {strategy} has no native implementation: --engine native takes {', '.join(NATIVE_STRATEGIES)}"
        )
    for option, value in NOT_TAKEN.get(strategy, {}).items():
        if options is not None and option in options and options[option] != value:
            raise ParamError(
                f"strategy {strategy} option {option}={options[option]} is not taken by the native engine "
                f"(it runs {option}={value})"
            )


# -- the DAG ---------------------------------------------------------------------------------------
def _spec_key(spec: RunSpec) -> str:
    data = spec.to_dict()
    data["trace"] = False  # one recording serves traced and untraced runs
    return json.dumps(data, sort_keys=True, default=str)


@lru_cache(maxsize=8)
def _recorded(key: str) -> tuple[RecordedDag, Any]:
    spec = RunSpec.from_dict(json.loads(key))
    rec = record(spec)
    arrays = rec.arrays()
    return rec, _module().make_dag(**arrays)


def recorded(spec: RunSpec) -> tuple[RecordedDag, Any]:
    """The spec's recorded DAG and the engine's :class:`tickpar_native.Dag` (cached per spec)."""
    return _recorded(_spec_key(spec))


# -- digests the golden run and the native run share -----------------------------------------------
def trace_digest(rows: list[list[Any]]) -> str:
    """A component's digest over its ``[tick, priority, name]`` rows (16 hex digits)."""
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()[:16]


def native_golden(golden: OracleRecord) -> OracleRecord:
    """A traced Python record seen as the native engine sees a run: ``[tick, priority, name]`` per event."""
    if golden.traces is None:
        raise ValueError("the golden record has no traces: a native check needs a traced golden run")
    components: dict[str, dict[str, Any]] = {}
    traces: dict[str, list[list[Any]]] = {}
    for name, entry in golden.components.items():
        rows = [[int(t[0]), int(t[1]), str(t[2])] for t in golden.traces.get(name, [])]
        traces[name] = rows
        components[name] = {
            "id": entry["id"],
            "count": entry["count"],
            "digest": trace_digest(rows),
            "last_tick": entry.get("last_tick"),
            "state": None,
        }
    return OracleRecord(
        events=golden.events,
        final_tick=golden.final_tick,
        digest=global_digest(components),
        components=components,
        traces=traces,
        statistics=dict(golden.statistics),
    )


def untraced_golden(golden: OracleRecord, spec: RunSpec) -> OracleRecord:
    """A traced Python golden record with the digests an *untraced* native run of ``spec`` reports.

    The engine folds each component's (tick, priority, name id) records into a 64-bit digest
    (``tickpar_native.digest_trace``); the golden traces, folded the same way with the name ids of
    ``spec``'s recorded DAG, give the digests a timed (untraced) run must match.  No traces are kept.
    """
    import numpy as np

    seen = native_golden(golden)
    assert seen.traces is not None
    rec, _dag = recorded(spec)
    ids = {name: i for i, name in enumerate(rec.names)}
    components: dict[str, dict[str, Any]] = {}
    for name, entry in seen.components.items():
        rows = seen.traces.get(name, [])
        when = np.array([r[0] for r in rows], dtype=np.int64)
        prio = np.array([r[1] for r in rows], dtype=np.int32)
        names = np.array([ids.get(r[2], -1) for r in rows], dtype=np.int32)
        digest = format(int(_module().digest_trace(when, prio, names)), "016x")
        components[name] = {**entry, "digest": digest}
    return OracleRecord(
        events=seen.events,
        final_tick=seen.final_tick,
        digest=global_digest(components),
        components=components,
        statistics=dict(seen.statistics),
    )


# -- running ---------------------------------------------------------------------------------------
def _describe(op: str, name: str, when: int, cur_tick: int, reason: str) -> str:
    if reason == "past":
        return f"{op}({name}, when={when}) with cur_tick={cur_tick}: when < cur_tick"
    return f"{op}({name}, when={when}) with cur_tick={cur_tick}: event {reason.replace('-', ' ')}"


def engine_args(spec: RunSpec, strategy: str, workers: int, options: dict[str, Any]) -> dict[str, Any]:
    """The native engine's keyword arguments for a cell: its checks and lock key, or the partition (``lp_of``),
    lookahead and quantum of the plan the Python strategy of the same name makes (one partition, both engines)."""
    args: dict[str, Any] = {"order": spec.order}
    if strategy in ("sequential", "split", "tick-barrier"):
        args["checks"] = bool(options.get("checks", True))
    if strategy == "split":
        args["lock_key"] = options.get("lock_key", "name")
        args["stall_s"] = float(options.get("stall_s", 30.0))
    elif strategy == "tick-barrier":
        args["lock_key"] = options.get("lock_key", "component")
        args["min_parallel"] = int(options.get("min_parallel", 2))
    elif strategy in ("conservative", "quantum"):
        model = spec.build_model(work="none")
        sync = "window" if strategy == "conservative" else "quantum"
        # The partition its Python strategy runs (both offer partition_weights): both engines, one partition.
        weighted_by = options.get("partition_weights", DEFAULT_PARTITION_WEIGHTS)
        plan, _part = make_plan(
            model,
            workers,
            method=options.get("partition", "auto"),
            order=spec.order,
            sync=sync,
            lookahead=options.get("lookahead") if strategy == "conservative" else None,
            weights=partition_weights(spec, weighted_by),
            weighted_by=weighted_by,
            window_loads=partition_window_loads(spec, weighted_by),
        )
        args["lp_of"] = list(plan.lp_of)
        if strategy == "conservative":
            args["lookahead"] = plan.lookahead
        else:
            q = options.get("quantum")
            if q is None and plan.lookahead is not None:
                ratio = options.get("quantum_ratio")
                q = max(1, math.floor((1.0 if ratio is None else ratio) * plan.lookahead))
            args["quantum"] = q
            args["late"] = options.get("late", "clamp")
    return args


@lru_cache(maxsize=32)
def _cached_args(key: str, strategy: str, workers: int, options: str) -> dict[str, Any]:
    """The engine's arguments (the partition plan of a partitioned strategy included), once per cell and process:
    a timing worker plans once, as it records once, and every timed value is the replay and its glue."""
    return engine_args(RunSpec.from_dict(json.loads(key)), strategy, workers, json.loads(options))


def run_native(
    spec: RunSpec,
    strategy: str,
    workers: int,
    options: dict[str, Any],
    spin_per_us: float = 0.0,
    replays: int = 1,
) -> tuple[OracleRecord, dict[str, Any]]:
    """Replay ``spec``'s DAG under ``strategy``; the oracle record (traced when the spec is) and the stats.

    ``replays`` > 1 replays the DAG that many times in one call (``tickpar_native.run``): ``loop_s`` is the
    mean per replay, and a replay that differs from the first makes the record's verdict a race.
    """
    require(strategy, options)
    tn = _module()
    started = time.perf_counter()
    rec, dag = recorded(spec)
    record_s = time.perf_counter() - started
    args = _cached_args(_spec_key(spec), strategy, workers, json.dumps(options, sort_keys=True, default=str))
    out = tn.run(dag, strategy, workers, trace=spec.trace, spin_per_us=spin_per_us, replays=replays, **args)
    return _oracle(rec, out, spec.trace), _stats(out, workers, record_s, args)


#: How long one timed value of a native cell lasts at least (seconds).  A call costs 0.1-0.3 ms besides its
#: loop (the Python wrapper, the record's conversion, waking the worker threads): a value of one 0.2 ms replay
#: would be mostly that, so a value replays the DAG enough times to last this long (docs/how-to/native-engine.md).
NATIVE_VALUE_S = 0.01


def replays_for(
    spec: RunSpec, strategy: str, workers: int, options: dict[str, Any], spin_per_us: float = 0.0
) -> int:
    """How many replays make one timed value of this cell last :data:`NATIVE_VALUE_S`: from the fastest of
    three untimed calls of one replay (a preempted call only looks slower), between 1 and 1000; 1 for a run
    that fails."""
    walls = []
    for _ in range(3):
        started = time.perf_counter()
        record, _stats = run_native(spec, strategy, workers, options, spin_per_us)
        walls.append(time.perf_counter() - started)
        if record.failure is not None:  # a failed run is never replayed (tickpar_native.run)
            return 1
    return max(1, min(1000, math.ceil(NATIVE_VALUE_S / max(min(walls), 1e-9))))


def _oracle(rec: RecordedDag, out: Any, traced: bool) -> OracleRecord:
    names, comps = rec.names, rec.components
    components: dict[str, dict[str, Any]] = {}
    traces: dict[str, list[list[Any]]] | None = {} if traced else None
    counts = out.counts.tolist()
    last = out.last_when.tolist()
    for c, cname in enumerate(comps):
        if traced:
            rows = [[w, p, names[n]] for w, p, n in out.trace(c)]
            assert traces is not None
            traces[cname] = rows
            digest = trace_digest(rows)
        else:
            digest = format(int(out.digests[c]), "016x")
        components[cname] = {
            "id": c,
            "count": counts[c],
            "digest": digest,
            "last_tick": last[c] if counts[c] else None,
            "state": None,
        }
    failure = None
    if out.failure is not None:
        f = dict(out.failure)
        obj = f.pop("obj", -1)
        event = names[rec.obj_name[obj]] if obj >= 0 else None
        message = f.get("message") or ""
        if f["kind"] == "causality" and f.get("reason") != "lookahead":
            message = _describe(f["op"], event or "?", f["when"], f["cur_tick"], f["reason"])
        failure = {**f, "event": event, "message": message}
        if f["kind"] != "causality":
            failure = {"kind": f["kind"], "message": message, "event": event, "when": f["when"],
                       "cur_tick": f["cur_tick"]}  # fmt: skip
    violations = [
        {"op": v["op"], "event": names[rec.obj_name[v["obj"]]], "when": v["when"], "cur_tick": v["cur_tick"],
         "reason": v["reason"]}
        for v in out.violations
    ]  # fmt: skip
    races = [
        {"component": comps[x["component"]], "event": names[rec.obj_name[x["obj"]]] if x["obj"] >= 0 else
         "<direct call>", "when": x["when"], "detail": x["detail"]}
        for x in out.races
    ]  # fmt: skip
    return OracleRecord(
        events=out.events,
        final_tick=out.final_tick,
        digest=global_digest(components),
        components=components,
        violations=violations,
        races=races,
        traces=traces,
        failure=failure,
    )


def _stats(out: Any, workers: int, record_s: float, args: dict[str, Any]) -> dict[str, Any]:
    st = dict(out.stats)
    stats = base_stats(workers)
    events = out.events
    batches = int(st.get("batches", 0))
    stats.update(
        events=events,
        batches=batches,
        mean_events_per_batch=events / batches if batches else 0.0,
        lock_waits=int(st.get("lock_waits", 0)),
        messages=int(st.get("messages", 0)),
        idle_s=list(st.get("idle_s", [0.0] * workers)),
        loop_s=float(st.get("loop_s", 0.0)),
        replays=int(st.get("replays", 1)),
        record_s=record_s,
        engine="native",
        violations=out.violations_total,
        races=out.races_total,
    )
    for key, value in st.items():
        if key not in stats:
            stats[key] = value
    if "lookahead" in args:
        stats["lookahead"] = args["lookahead"]
    if "quantum" in args:
        stats["quantum"] = args["quantum"]
    return stats


def spin_rate() -> float:
    """The C++ spin loop's iterations per microsecond on this machine (calibrated once per process)."""
    require()
    return float(_module().spin_rate())


def check_native_cell(golden: OracleRecord, got: OracleRecord) -> Any:
    """The verdict of a native run against a traced Python golden record."""
    from tickpar.verify.oracle import compare

    return compare(native_golden(golden), got)


#: ``tickpar calibrate``'s top-level figures; the rest of the engine's go in ``details``.  ``pingpong_ns`` and
#: ``heap_ns`` are the floors the others are read against (:data:`tickpar.perf.costs.FLOOR_OF`).
_CALIBRATION_KEYS = ("mutex_ns", "barrier_ns", "message_ns", "event_ns", "tb_batch_ns", "pingpong_ns", "heap_ns")

#: The work-free PHOLD shape that tick-barrier's calibrations run (both engines; none of the sweep's shapes).
TB_CALIBRATION_SHAPE = {"lps": 12, "population": 6, "mean": 150.0, "lookahead": 500, "granularity": 400,
                        "end_tick": 12_000}  # fmt: skip


def tick_barrier_batch_ns(repeats: int = 30) -> dict[str, float]:
    """The native tick-barrier's cost per parallel batch at two workers beyond its share of the events.

    Replays of :data:`TB_CALIBRATION_SHAPE` (work none), best of ``repeats``: the two-worker tick-barrier
    loop less half the sequential loop, over its parallel batches.  It holds the barrier, the serial commit
    of the batch's insertions, and what the two cores pay to share the batch's data.
    """
    from tickpar.plugins.registry import get_registry

    tn = _module()
    cls = get_registry().workload("phold")
    params = {name: param.default for name, param in cls.params.items()}
    spec = RunSpec("phold", {**params, **TB_CALIBRATION_SHAPE}, 1, "gem5", "none")
    _rec, dag = recorded(spec)

    def best(strategy: str, workers: int) -> tuple[float, Any]:
        args = engine_args(spec, strategy, workers, {})
        runs = [tn.run(dag, strategy, workers, **args) for _ in range(repeats)]
        return min(float(r.stats["loop_s"]) for r in runs), runs[0]

    sequential, _ = best("sequential", 1)
    parallel, out = best("tick-barrier", 2)
    batches = max(1, int(out.stats["parallel_batches"]))
    return {
        "tb_batch_ns": max(0.0, parallel - sequential / 2) / batches * 1e9,
        "tb_sequential_ns": sequential * 1e9,
        "tb_parallel_ns": parallel * 1e9,
        "tb_parallel_batches": float(batches),
    }


def calibrate(budget_s: float = 1.0) -> dict[str, Any]:
    """The engine's calibration microbenchmarks (``tickpar calibrate``), with the machine and the date."""
    require()
    import os
    import platform

    values = dict(_module().calibrate(budget_s))
    values.update(tick_barrier_batch_ns())
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "format": "tickpar.calibration/1",
        **{k: values[k] for k in _CALIBRATION_KEYS},
        "details": {k: v for k, v in values.items() if k not in _CALIBRATION_KEYS},
        "machine": {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "node": platform.node()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "what": {
            "mutex_ns": "one uncontended std::mutex lock + unlock",
            "barrier_ns": "one round of the engine's spinning barrier between 2 threads",
            "message_ns": "a message handed to another thread through a one-slot mailbox (half a round trip)",
            "event_ns": "the native queue's schedule + pop + replay bookkeeping per event (1024 pending)",
            "tb_batch_ns": "tick-barrier at 2 workers: per parallel batch, its loop beyond half the sequential "
            "loop (work-free PHOLD, TB_CALIBRATION_SHAPE)",
            "pingpong_ns": "one cache line's round trip between two threads pinned to two CPUs, both spinning (two "
            "transfers of the line): the floor of any hand-off between cores, beside which the sync costs are read",
            "heap_ns": "a plain binary heap's pop + push per step (std::priority_queue of (tick, serial), hold model, "
            "1024 pending; heap_ns_pending64 in details): the floor of any event queue, beside which event_ns is read",
        },
    }
