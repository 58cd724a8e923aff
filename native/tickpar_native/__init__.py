"""tickpar's native engine: replays a recorded event DAG with gem5's event-queue semantics, in C++.

Build and install it with ``pip install ./native`` (or ``make native``) from the repository root.

The DAG (:class:`Dag`, built by :func:`make_dag` from flat arrays) holds, per event *object* (a
long-lived named event, or one message), its component, name id, priority and flags (bit 0: a
message), and per *occurrence* ``k`` of the object in the golden sequential run the operations its
``k``-th ``process()`` made, the direct calls it made (component, call name id) and its synthetic
work in microseconds.  An operation is ``(kind, mode, target, value, source)``: kind
:data:`SCHEDULE`, :data:`RESCHEDULE`, :data:`RESCHEDULE_ALWAYS` or :data:`DESCHEDULE`; mode
:data:`CLOCK` (``when = cur_tick + value``) or :data:`ABSOLUTE` (``when = value``, a stored tick);
``source`` the canonical tie (``component << 40 | seq``), or -1 for none.  The first operations
(``ops_off[0]`` of them) are the initial schedules, made before the loop at tick 0.

:func:`run` replays it under a strategy (``sequential``, ``split``, ``tick-barrier``,
``conservative``, ``quantum``) on real ``std::thread``\\ s with the GIL released, and returns per
component the event count, digest and last tick (and the full trace of (tick, priority, name id)
with ``trace=True``), the first failure (``causality``, ``crash``, ``deadlock``), violations counted
with ``checks=False``, races (two threads in one component), and the run's statistics.

``min_batch_ns`` and ``batch_event_ns`` (tick-barrier): a bin whose members' recorded work would save less
than ``min_batch_ns + batch_event_ns * members`` nanoseconds on the workers (its work times 1 - 1/P, P the
threads) runs serially on the forming thread, as gem5 would run it: handing it out would cost more than it
saves (both 0, the default: every bin of two groups or more goes out).

``schedule="adaptive"`` (conservative only): ``lp_of`` names ``lps`` LPs (from ``workers`` to 64), which are
handed to the worker threads every window by the time each took in the last one, largest first, idle workers
stealing whole LPs (``native/src/adaptive.hpp``); ``"static"``, the default, runs one LP per worker.  Both report
``lps``, ``reassignments``, ``stolen_lps``, ``imbalance_per_window`` (per window, the busiest worker's time over
the mean) and its ``imbalance_mean``, ``imbalance_max`` and ``imbalance_loop``.

:func:`run_plugin` runs a native strategy plugin's library (``include/tickpar/strategy.hpp``, the public API that
the built-in sequential and tick-barrier are written on; ``include_dir`` below holds it, installed) the same way.

``replays=N`` replays the DAG N times in the one call (the worker threads stay up between replays), so
that a timed call is long against the call itself; ``stats["loop_s"]`` is then the mean loop per replay.
Every replay must give the first one's result: the first replay that does not is returned instead, with a
race naming the first component where the two part (or its failure, if it failed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tickpar_native import _engine
from tickpar_native._engine import (
    ABSOLUTE,
    API_DIGEST,
    CALL_PRIORITY,
    CLOCK,
    DESCHEDULE,
    RESCHEDULE,
    RESCHEDULE_ALWAYS,
    SCHEDULE,
    Dag,
    calibrate,
    digest_trace,
    plugin_info,
    set_spin_rate,
    spin,
    spin_rate,
)

try:  # the gem5 trace importer (tickpar.gem5.importer uses it when built); its absence breaks nothing here
    from tickpar_native import _gem5
except ImportError:  # pragma: no cover - an engine built without it
    _gem5 = None  # type: ignore[assignment]

__all__ = [
    "ABSOLUTE",
    "API_DIGEST",
    "CALL_PRIORITY",
    "CLOCK",
    "DESCHEDULE",
    "NO_SOURCE",
    "RESCHEDULE",
    "RESCHEDULE_ALWAYS",
    "SCHEDULE",
    "STRATEGIES",
    "Dag",
    "Replay",
    "calibrate",
    "digest_trace",
    "make_dag",
    "plugin_info",
    "run",
    "run_plugin",
    "set_spin_rate",
    "spin",
    "spin_rate",
]

__version__ = "0.1.0"

STRATEGIES = tuple(_engine.BUILTIN_STRATEGIES)  # the engine's built-in strategies, as it registered them
NO_SOURCE = -(1 << 63)  # the C++ side's "no source key"


def make_dag(
    ncomp: int,
    obj_comp: Sequence[int],
    obj_name: Sequence[int],
    obj_prio: Sequence[int],
    obj_flags: Sequence[int],
    occ_off: Sequence[int],
    ops_off: Sequence[int],
    touch_off: Sequence[int],
    work_us: Sequence[float],
    op_kind: Sequence[int],
    op_mode: Sequence[int],
    op_target: Sequence[int],
    op_value: Sequence[int],
    op_source: Sequence[int],
    touch_comp: Sequence[int] = (),
    touch_name: Sequence[int] = (),
    end_tick: int | None = None,
    occ_seq: Sequence[int] = (),
) -> Dag:
    """A :class:`Dag` from flat sequences (converted to the dtypes the engine reads); see the module docstring.

    ``occ_seq`` (optional): per occurrence, its place in the recorded run; the engine then lays the DAG out
    in that order, which a replay reads front to back (fewer cache misses on DAGs larger than the caches).
    """
    source = np.asarray(op_source, dtype=np.int64)
    source = np.where(source < 0, NO_SOURCE, source) if len(source) else source
    return Dag(
        int(ncomp),
        np.ascontiguousarray(obj_comp, dtype=np.int32),
        np.ascontiguousarray(obj_name, dtype=np.int32),
        np.ascontiguousarray(obj_prio, dtype=np.int16),
        np.ascontiguousarray(obj_flags, dtype=np.uint8),
        np.ascontiguousarray(occ_off, dtype=np.int64),
        np.ascontiguousarray(ops_off, dtype=np.int64),
        np.ascontiguousarray(touch_off, dtype=np.int64),
        np.ascontiguousarray(work_us, dtype=np.float64),
        np.ascontiguousarray(op_kind, dtype=np.uint8),
        np.ascontiguousarray(op_mode, dtype=np.uint8),
        np.ascontiguousarray(op_target, dtype=np.int32),
        np.ascontiguousarray(op_value, dtype=np.int64),
        np.ascontiguousarray(source, dtype=np.int64),
        np.ascontiguousarray(touch_comp, dtype=np.int32),
        np.ascontiguousarray(touch_name, dtype=np.int32),
        -1 if end_tick is None else int(end_tick),
        np.ascontiguousarray(occ_seq, dtype=np.int64),
    )


@dataclass
class Replay:
    """What one native run produced (arrays by component id)."""

    counts: np.ndarray
    last_when: np.ndarray
    digests: np.ndarray
    trace_off: np.ndarray
    trace_when: np.ndarray
    trace_prio: np.ndarray
    trace_name: np.ndarray
    failure: dict[str, Any] | None
    violations: list[dict[str, Any]]
    violations_total: int
    races: list[dict[str, Any]]
    races_total: int
    cur_tick: int
    stats: dict[str, Any]

    @property
    def events(self) -> int:
        """Processed events in every component (direct calls are in the digests and traces, never counted)."""
        return int(self.counts.sum())

    @property
    def final_tick(self) -> int:
        """The latest tick a component processed an event at (as the oracle's record has it)."""
        seen = self.counts > 0
        return int(self.last_when[seen].max()) if seen.any() else 0

    def trace(self, comp: int) -> list[tuple[int, int, int]]:
        """Component ``comp``'s trace of (tick, priority, name id) (needs ``trace=True``)."""
        a, b = int(self.trace_off[comp]), int(self.trace_off[comp + 1])
        fields = (self.trace_when[a:b].tolist(), self.trace_prio[a:b].tolist(), self.trace_name[a:b].tolist())
        return list(zip(*fields, strict=True))


def run(
    dag: Dag,
    strategy: str = "sequential",
    workers: int = 1,
    *,
    order: str = "gem5",
    checks: bool = True,
    trace: bool = False,
    lock_key: str = "name",
    min_parallel: int = 2,
    lp_of: Sequence[int] = (),
    lookahead: int | None = None,
    quantum: int | None = None,
    late: str = "clamp",
    stall_s: float = 30.0,
    spin_per_us: float = 0.0,
    replays: int = 1,
    min_batch_ns: float = 0.0,
    batch_event_ns: float = 0.0,
    schedule: str = "static",
    lps: int | None = None,
) -> Replay:
    """Replay ``dag`` under ``strategy`` with ``workers`` threads; see the module docstring."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy {strategy!r} is not native: choose one of {', '.join(STRATEGIES)}")
    return _replay(_engine.run(
        dag,
        strategy,
        int(workers),
        order,
        bool(checks),
        bool(trace),
        lock_key,
        int(min_parallel),
        [int(x) for x in lp_of],
        -1 if lookahead is None else int(lookahead),
        -1 if quantum is None else int(quantum),
        late,
        float(stall_s),
        float(spin_per_us),
        int(replays),
        float(min_batch_ns),
        float(batch_event_ns),
        schedule,
        0 if lps is None else int(lps),
    ))


def run_plugin(
    path: str,
    dag: Dag,
    name: str,
    workers: int = 1,
    *,
    order: str = "gem5",
    checks: bool = True,
    trace: bool = False,
    options: dict[str, str] | None = None,
    spin_per_us: float = 0.0,
    replays: int = 1,
    stall_s: float = 30.0,
) -> Replay:
    """Replay ``dag`` under the native strategy plugin library at ``path`` (``name``: its declared name), with its
    own ``options`` as text (``include/tickpar/strategy.hpp``: option_int, option_bool, ...)."""
    given = dict(options or {})
    out = _engine.run_plugin(str(path), dag, name, int(workers), order, bool(checks), bool(trace), list(given),
                             [str(v) for v in given.values()], float(spin_per_us), int(replays), float(stall_s))
    return _replay(out)


def _replay(out: dict[str, Any]) -> Replay:
    return Replay(
        counts=np.frombuffer(out["counts"], dtype=np.int64),
        last_when=np.frombuffer(out["last_when"], dtype=np.int64),
        digests=np.frombuffer(out["digests"], dtype=np.uint64),
        trace_off=np.frombuffer(out["trace_off"], dtype=np.int64),
        trace_when=np.frombuffer(out["trace_when"], dtype=np.int64),
        trace_prio=np.frombuffer(out["trace_prio"], dtype=np.int32),
        trace_name=np.frombuffer(out["trace_name"], dtype=np.int32),
        failure=out["failure"],
        violations=list(out["violations"]),
        violations_total=int(out["violations_total"]),
        races=list(out["races"]),
        races_total=int(out["races_total"]),
        cur_tick=int(out["cur_tick"]),
        stats=dict(out["stats"]),
    )
