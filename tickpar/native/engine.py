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
``oversubscribe`` and ``stall_s`` of the partitioned strategies.  Options only the native engine
takes (:data:`NATIVE_ONLY`: ``conservative``'s ``schedule=adaptive``) are refused on the Python
engine with one line (:func:`require_python`).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from functools import lru_cache
from typing import Any

from tickpar.kernel.params import ParamError
from tickpar.native.plugins import is_native_plugin, library_for, run_options
from tickpar.native.record import RecordedDag, record
from tickpar.pdes.adaptive import fine_plan, lps_max_of, schedule_of
from tickpar.pdes.plan import DEFAULT_PARTITION_WEIGHTS, make_plan, partition_weights, partition_window_loads
from tickpar.plugins import RunSpec, base_stats
from tickpar.plugins.registry import get_registry
from tickpar.verify.oracle import OracleRecord, global_digest

__all__ = [
    "BUILD_HINT",
    "ENGINES",
    "NATIVE_ONLY",
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
    "plugin_class",
    "python_takes",
    "replays_for",
    "require",
    "require_python",
    "run_native",
    "tick_barrier_batch_ns",
    "tick_barrier_handoff",
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
#: Options only the native engine takes: on the Python engine they must keep these values.
NATIVE_ONLY: dict[str, dict[str, Any]] = {"conservative": {"schedule": "static"}}


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
        if plugin_class(strategy) is not None:
            return  # its options are its declaration's, checked by the registry's Params (run_options)
        plugins = sorted(name for name, cls in get_registry().strategies.items() if is_native_plugin(cls))
        raise ParamError(
            f"strategy {strategy} has no native implementation: --engine native takes "
            f"{', '.join([*NATIVE_STRATEGIES, *plugins])}"
        )
    for option, value in NOT_TAKEN.get(strategy, {}).items():
        if options is not None and option in options and options[option] != value:
            raise ParamError(
                f"strategy {strategy} option {option}={options[option]} is not taken by the native engine "
                f"(it runs {option}={value})"
            )


def plugin_class(strategy: str) -> type[Any] | None:
    """The strategy class of a native plugin named ``strategy`` (None: not one)."""
    cls = get_registry().strategies.get(strategy)
    return cls if cls is not None and is_native_plugin(cls) else None


def python_takes(strategy: str, options: dict[str, Any]) -> bool:
    """Whether the Python engine runs ``strategy`` with these (resolved) options (:data:`NATIVE_ONLY`)."""
    return all(options.get(k, v) == v for k, v in NATIVE_ONLY.get(strategy, {}).items())


def require_python(strategy: str, options: dict[str, Any]) -> None:
    """A one-line :class:`ParamError` where ``options`` hold a value only the native engine takes."""
    for option, value in NATIVE_ONLY.get(strategy, {}).items():
        if option in options and options[option] != value:
            raise ParamError(
                f"strategy {strategy} option {option}={options[option]} is taken by the native engine only "
                f"(--engine native): the Python engine allows {option}={value}"
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
        if workers > 1:  # a bin whose work saves less than its hand-off runs serially (tick_barrier_handoff)
            args["min_batch_ns"], args["batch_event_ns"] = tick_barrier_handoff()
    elif strategy in ("conservative", "quantum"):
        model = spec.build_model(work="none")
        sync = "window" if strategy == "conservative" else "quantum"
        # The partition its Python strategy runs (both offer partition_weights): both engines, one partition.
        weighted_by = options.get("partition_weights", DEFAULT_PARTITION_WEIGHTS)
        common: dict[str, Any] = {
            "method": options.get("partition", "auto"),
            "order": spec.order,
            "lookahead": options.get("lookahead") if strategy == "conservative" else None,
            "weights": partition_weights(spec, weighted_by),
            "weighted_by": weighted_by,
            "window_loads": partition_window_loads(spec, weighted_by),
        }
        if strategy == "conservative" and schedule_of(options) == "adaptive":
            # K >= workers LPs, handed to the workers every window (tickpar.pdes.adaptive, native/src/adaptive.hpp)
            plan, _part = fine_plan(model, workers, lps_max_of(options, workers), **common)
            args["schedule"] = "adaptive"
            args["lps"] = plan.parts
        else:
            plan, _part = make_plan(model, workers, sync=sync, **common)
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
    plugin = plugin_class(strategy)
    if plugin is not None:  # a native strategy plugin: its own library, its own options
        names, values, checks = run_options(plugin, options)
        out = tn.run_plugin(str(library_for(plugin)), dag, strategy, workers, order=spec.order, checks=checks,
                            trace=spec.trace, options=dict(zip(names, values, strict=True)),
                            spin_per_us=spin_per_us, replays=replays)  # fmt: skip
        return _oracle(rec, out, spec.trace), _stats(out, workers, record_s, {})
    args = _cached_args(_spec_key(spec), strategy, workers, json.dumps(options, sort_keys=True, default=str))
    out = tn.run(dag, strategy, workers, trace=spec.trace, spin_per_us=spin_per_us, replays=replays, **args)
    return _oracle(rec, out, spec.trace), _stats(out, workers, record_s, args)


#: How long one timed value of a native cell lasts at least (seconds).  A call costs a fixed time besides its
#: loop (the Python wrapper, the record's conversion, waking the worker threads) that would be most of one
#: short replay, so a value replays the DAG enough times to last this long (docs/how-to/native-engine.md;
#: the figures: docs/measurements/2026-12-06-code-comments.md).
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


#: A native conservative run's ``imbalance_per_window`` goes into its stats when it has at most this many windows
#: (its ``imbalance_mean``, ``imbalance_max`` and ``imbalance_loop`` always do).
IMBALANCE_WINDOWS_KEPT = 2000


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
    if "imbalance_per_window" in stats:  # every window of a long run would weigh more than the record's rest
        per_window = list(stats.pop("imbalance_per_window"))
        if len(per_window) <= IMBALANCE_WINDOWS_KEPT:
            stats["imbalance_per_window"] = per_window
    if "lps" in stats:
        stats["lps"] = int(stats["lps"])
        if "quantum" not in args:  # conservative's schedule (quantum has one LP per worker, and no such option)
            stats["schedule"] = args.get("schedule", "static")
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
#: ``heap_ns`` are the floors the others are read against (:data:`tickpar.perf.predict.costs.FLOOR_OF`).
_CALIBRATION_KEYS = ("mutex_ns", "barrier_ns", "message_ns", "event_ns", "tb_batch_ns", "tb_event_ns", "pingpong_ns",
                     "heap_ns")  # fmt: skip

#: The work-free PHOLD shape that tick-barrier's calibrations run (both engines; none of the sweep's shapes).
TB_CALIBRATION_SHAPE = {"lps": 12, "population": 6, "mean": 150.0, "lookahead": 500, "granularity": 400,
                        "end_tick": 12_000}  # fmt: skip


#: The populations (messages in flight per LP) of :data:`TB_CALIBRATION_SHAPE` that tick-barrier's fit replays:
#: about 6 to 46 events per parallel batch at the same 27-29 batches, so that the fit can tell what a batch
#: costs from what each of its events costs.
TB_FIT_POPULATIONS = (1, 2, 4, 6, 8)


def tick_barrier_batch_ns(repeats: int = 5, replays: int = 10, populations: tuple[int, ...] = TB_FIT_POPULATIONS
                          ) -> dict[str, float]:  # fmt: skip
    """The native tick-barrier's costs at two workers beyond its share of the events, per batch and per event.

    Every population of :data:`TB_FIT_POPULATIONS` is replayed (work none, every batch handed out:
    ``min_batch_ns=0``), sequential and tick-barrier, the best of ``repeats`` calls of ``replays`` replays each;
    the excess ``parallel - sequential / 2`` is fitted by least squares to ``batches * tb_batch_ns + events *
    tb_event_ns``.  ``tb_batch_ns`` is the hand-off (posting the batch, the workers' start and finish, the
    commit's fixed part); ``tb_event_ns`` what each event of a parallel batch adds (its lines crossing to a
    worker and back, the commit's insertion, the queue's pop that no worker shares).  ``tb_overhead_ns``: the
    whole excess per batch at :data:`TB_CALIBRATION_SHAPE` itself (population 6), which the calibration
    reported as ``tb_batch_ns`` before the fit.
    """
    from tickpar.plugins.registry import get_registry

    tn = _module()
    cls = get_registry().workload("phold")
    params = {name: param.default for name, param in cls.params.items()}

    def best(dag: Any, strategy: str, workers: int, **args: Any) -> tuple[float, Any]:
        runs = [tn.run(dag, strategy, workers, order="gem5", replays=replays, **args) for _ in range(repeats)]
        return min(float(r.stats["loop_s"]) for r in runs), runs[0]

    points: list[tuple[float, float, float]] = []  # (batches, events, excess seconds)
    out: dict[str, float] = {}
    for population in populations:
        spec = RunSpec("phold", {**params, **TB_CALIBRATION_SHAPE, "population": population}, 1, "gem5", "none")
        _rec, dag = recorded(spec)
        sequential, _ = best(dag, "sequential", 1)
        parallel, run = best(dag, "tick-barrier", 2, lock_key="component", min_batch_ns=0.0, batch_event_ns=0.0)
        batches = max(1.0, float(run.stats["parallel_batches"]))
        points.append((batches, float(run.stats["parallel_events"]), parallel - sequential / 2))
        if population == TB_CALIBRATION_SHAPE["population"]:
            out.update(tb_overhead_ns=max(0.0, parallel - sequential / 2) / batches * 1e9,
                       tb_sequential_ns=sequential * 1e9, tb_parallel_ns=parallel * 1e9,
                       tb_parallel_batches=batches)  # fmt: skip
    per_batch, per_event = _fit_two(points)
    out.update(tb_batch_ns=per_batch * 1e9, tb_event_ns=per_event * 1e9)
    return out


def _fit_two(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    """Least squares ``y = a x1 + b x2`` through the origin (the normal equations), both at least 0: a negative
    coefficient (noise) is dropped and the other refitted alone."""
    s11 = sum(x1 * x1 for x1, _x2, _y in points)
    s12 = sum(x1 * x2 for x1, x2, _y in points)
    s22 = sum(x2 * x2 for _x1, x2, _y in points)
    s1y = sum(x1 * y for x1, _x2, y in points)
    s2y = sum(x2 * y for _x1, x2, y in points)
    det = s11 * s22 - s12 * s12
    if det > 0:
        a = (s1y * s22 - s2y * s12) / det
        b = (s2y * s11 - s1y * s12) / det
        if a >= 0 and b >= 0:
            return a, b
    only_a = max(0.0, s1y / s11) if s11 > 0 else 0.0
    only_b = max(0.0, s2y / s22) if s22 > 0 else 0.0
    err_a = sum((y - only_a * x1) ** 2 for x1, _x2, y in points)
    err_b = sum((y - only_b * x2) ** 2 for _x1, x2, y in points)
    return (only_a, 0.0) if err_a <= err_b else (0.0, only_b)


@lru_cache(maxsize=1)
def tick_barrier_handoff() -> tuple[float, float]:
    """``(min_batch_ns, batch_event_ns)`` for this process's tick-barrier cells: :func:`tick_barrier_batch_ns` on
    four populations, measured once per process.  A bin runs in parallel only where its work saves more than
    that (``tickpar_native.run``); the engine's own figure, not a file's, so a standalone run and the sweep's
    decide alike.  Its replays are as many as keep the intercept steady between processes
    (docs/measurements/2026-12-06-native-gem5-costs.md)."""
    fit = tick_barrier_batch_ns(repeats=5, replays=10, populations=(1, 2, 4, 8))
    return fit["tb_batch_ns"], fit["tb_event_ns"]


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
            "tb_batch_ns": "tick-barrier at 2 workers: per parallel batch, the fixed part of its loop beyond half "
            "the sequential loop (least squares over work-free PHOLD at 5 populations, TB_FIT_POPULATIONS)",
            "tb_event_ns": "tick-barrier at 2 workers: per event of a parallel batch, the part of its loop beyond "
            "half the sequential loop that grows with the batch (the same fit)",
            "pingpong_ns": "one cache line's round trip between two threads pinned to two CPUs, both spinning (two "
            "transfers of the line): the floor of any hand-off between cores, beside which the sync costs are read",
            "heap_ns": "a plain binary heap's pop + push per step (std::priority_queue of (tick, serial), hold model, "
            "1024 pending; heap_ns_pending64 in details): the floor of any event queue, beside which event_ns is read",
        },
    }
