"""``quantum``: gem5's ``sim_quantum`` multi-queue mode, and par-gem5/parti-gem5's relaxed causality beyond it.

Sync: a global barrier every quantum of ``Q`` ticks, at fixed boundaries
(multiples of ``Q``; quanta with nothing to run are skipped).  Each queue
serves its events before the next boundary, all workers meet, every queue's
clock is set to the boundary, and each queue inserts the events the others
sent it during the quantum: gem5's ``GlobalSyncEvent`` with ``asyncInsert``
and ``handleAsyncInsertions`` (:class:`tickpar.pdes.quantum.QuantumSync` on
the LP and launch machinery of :mod:`tickpar.pdes`).  Backends (``backend``):
``threads`` (one thread per queue over one shared model built with race
detection) or ``processes`` (one process per queue, each building the model
from the spec; ``start_method=fork`` or ``spawn``).

Lookahead: the partition's, the smallest latency of a link crossing queues.
``Q`` is the ``quantum`` option in ticks, or ``quantum_ratio`` times that
lookahead (rounded down, at least 1; neither given: ratio 1).  ``Q`` is not
checked against the lookahead: with a larger quantum, an event can reach a
queue whose clock (the boundary) is already past its ``when``, a *late*
event.  ``late=clamp`` schedules it at that tick (par-gem5's relaxed
causality) and counts it (``late_events``, ``lateness_total_ticks``,
``lateness_max_ticks``); ``late=error`` is gem5's ``assert(when >=
curTick())`` (verdict ``causality``).

Ownership: components are partitioned into one event queue per worker by
:func:`tickpar.pdes.partition.partition` (``partition=auto``, the default,
never separates components joined by a zero-latency link or a direct call and
maximises the lookahead, balancing ``partition_weights``: events per component and window by default, as
``conservative`` does; ``roundrobin`` and ``linear`` ignore the graph).
Each queue runs only its own components; a direct call across queues cannot
be simulated and is rejected before the run (verdict ``causality``).

Determinism: messages are inserted at the barrier in queue order and late
events move to the boundary, so a run is deterministic in both order modes
(gem5's own async lists take events in arrival order: nondeterministic).
Under ``order=gem5`` a bin that mixes events from several queues is served
LIFO by local insertion, as gem5's queues do, not in the single queue's order;
the strategy counts those cross-queue ties (``gem5_cross_lp_ties``) and the
ones the single queue orders the other way (``gem5_tie_reorders``,
``gem5_tie_unresolved``), as ``conservative`` does.

Promise: ``exact`` under ``order=canonical`` when no link crossing queues is
faster than ``Q`` (so always with ``quantum_ratio <= 1`` and
``partition=auto``): every message then arrives at or after the boundary,
before its receiver runs anything at its tick, which is the conservative
window's argument.  ``exact`` with one worker in both orders (one queue, no
message).  ``causality`` when a direct call crosses queues.  Nothing promised
otherwise: a larger quantum gives ``diverged`` (with ``late=clamp``) or
``causality`` (``late=error``) once an event is late, and the cell's
``errors`` say how far off the run is.

Statistics beyond the common ones: ``quantum``, ``quantum_ratio`` (``Q`` over
the lookahead), ``lookahead``, ``late``, ``quanta`` (barriers that ran a
quantum), the late-event figures above (totals over queues; the maximum for
``lateness_max_ticks``), ``messages`` (events sent across queues), the
partition's figures, ``events_per_lp``, ``loop_s``, ``setup_s``, ``cpu_s``.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, replace
from typing import Any

from tickpar.kernel.model import Model
from tickpar.kernel.params import Param, ParamError
from tickpar.kernel.work import calibrate
from tickpar.pdes.launch import run_processes, run_threads
from tickpar.pdes.lp import LPResult
from tickpar.pdes.options import placement_options, process_options
from tickpar.pdes.partition import Partition
from tickpar.pdes.plan import (
    Plan,
    make_plan,
    partition_weights,
    partition_window_loads,
)
from tickpar.pdes.quantum import LATE_MODES, QuantumSync
from tickpar.pdes.stats import lp_total, merged_record, partitioned_stats
from tickpar.plugins import LookaheadError, RunSpec, Strategy, StrategyResult
from tickpar.verify.anatomy import partitioned_steps
from tickpar.verify.oracle import OracleRecord, Verdict

BACKENDS = ("threads", "processes")


def quantum_ticks(options: dict[str, Any], lookahead: int | None) -> int | None:
    """``Q`` in ticks: the ``quantum`` option, or ``quantum_ratio`` (default 1) x ``lookahead``, at least 1.

    ``None`` when it is a ratio and no link crosses queues (no lookahead): one
    quantum runs everything.
    """
    if options.get("quantum") is not None:
        return int(options["quantum"])
    if lookahead is None:
        return None
    ratio = options.get("quantum_ratio")
    return max(1, math.floor((1.0 if ratio is None else ratio) * lookahead))


class Quantum(Strategy):
    name = "quantum"
    summary = "gem5 sim_quantum: a queue per worker, barrier every quantum; beyond the lookahead, late events clamp"
    engines = ("python", "native")  # the native engine has it built in (native/src)
    options = {
        "quantum": Param(int, None, "ticks per quantum (or give quantum_ratio; not both)", min=1, nullable=True),
        "quantum_ratio": Param(
            float, None, "quantum as a multiple of the partition's lookahead (none: 1)",
            min=1e-6, max=1e9, nullable=True,
        ),
        "late": Param(
            str, "clamp", "an event behind its queue's clock: clamp (par-gem5) or error (gem5's assert)",
            choices=LATE_MODES,
        ),
        **placement_options(BACKENDS, "threads (shared model) or processes (multiprocessing)"),
        **process_options("a queue waiting longer than this at a barrier"),
    }
    orders = ("canonical",)

    # -- contract ------------------------------------------------------------------------------
    def validate(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> None:
        super().validate(spec, workers, options)
        if options.get("quantum") is not None and options.get("quantum_ratio") is not None:
            raise ParamError(
                f"strategy quantum options quantum={options['quantum']} and quantum_ratio={options['quantum_ratio']}"
                " are not allowed together: give one of them"
            )

    def expected_verdict(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> str | None:
        """``exact`` with one worker, or in canonical order when no link crossing queues is faster than ``Q``.

        ``causality`` when a direct call crosses queues; ``None`` otherwise.
        """
        if workers == 1:
            return "exact"
        if spec.order != "canonical":
            return None
        ratio = options.get("quantum_ratio")
        if options.get("partition", "auto") == "auto" and options.get("quantum") is None and (ratio or 1.0) <= 1.0:
            return "exact"  # the quantum is at most the partition's lookahead, its smallest cut latency
        model = spec.build_model(work="none")
        try:
            plan, _part = self.plan_for(model, spec, workers, options)
        except LookaheadError:
            return "causality"
        q = plan.sync_args["quantum"]
        lp_of = plan.lp_of
        cut = [link.latency for link in model.links if lp_of[link.src.id] != lp_of[link.dst.id]]
        return None if q is not None and cut and min(cut) < q else "exact"

    def anatomy(
        self, spec: RunSpec, workers: int, options: dict[str, Any], verdict: Verdict
    ) -> list[dict[str, Any]] | None:
        """LPs and quanta: the queue of the first diverging component and the quantum it was in."""
        model = spec.build_model(work="none")
        try:
            plan, _part = self.plan_for(model, spec, workers, options)
        except LookaheadError:
            return None  # refused before the run: the failure message says it all
        names = [c.name for c in model.components]
        return partitioned_steps(verdict, plan.lp_of, names, plan.sync_args["quantum"], "quantum")

    def uses_processes(self, options: dict[str, Any]) -> bool:
        return options.get("backend") == "processes"

    @staticmethod
    def plan_for(model: Model, spec: RunSpec, workers: int, options: dict[str, Any]) -> tuple[Plan, Partition]:
        """The plan of a run of this strategy (its options applied to make_plan, the quantum in its sync_args)."""
        plan, part = make_plan(
            model, workers, method=options["partition"], order=spec.order, sync=QuantumSync.name,
            stall_s=options["stall_s"],
            weights=partition_weights(spec, options["partition_weights"]),
            weighted_by=options["partition_weights"],
            window_loads=partition_window_loads(spec, options["partition_weights"]),
        )  # fmt: skip
        args = {"quantum": quantum_ticks(options, plan.lookahead), "late": options["late"]}
        return replace(plan, sync_args=args), part

    # -- running -----------------------------------------------------------------------------------
    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        started = time.perf_counter()
        extra: dict[str, Any] = {}
        if options["backend"] == "threads":
            model = spec.build_model(detect_races=True)
            plan, part = self.plan_for(model, spec, workers, options)
            results = run_threads(model, plan)
        else:
            # The parent builds the model only to partition it; each queue's process builds its own.
            plan, part = self.plan_for(spec.build_model(work="none"), spec, workers, options)
            calibrate(spec.work)  # once here: forked processes inherit the rate
            results, extra["start_method"] = run_processes(spec, plan, options["start_method"])
        wall = time.perf_counter() - started
        record = merged_record(results)
        if options["backend"] == "threads":
            record.races = [asdict(r) for r in model.races]  # one shared model: its races are every queue's
        stats = _stats(results, record, plan, part, wall)
        stats.update(backend=options["backend"], late=options["late"], **extra)
        return StrategyResult(record, stats)


def _stats(results: list[LPResult], record: OracleRecord, plan: Plan, part: Partition, wall: float) -> dict[str, Any]:
    """The run's statistics from every queue's (see the module docstring)."""
    quanta = max(r.stats.get("windows", 0) for r in results)
    q = plan.sync_args["quantum"]
    stats = partitioned_stats(results, record, plan, part, wall, batches=quanta)
    stats.update(
        quantum=q,
        quantum_ratio=q / plan.lookahead if q is not None and plan.lookahead else None,
        quanta=quanta,
        late_events=lp_total(results, "late_events"),
        lateness_total_ticks=lp_total(results, "lateness_total_ticks"),
        lateness_max_ticks=max(r.stats.get("lateness_max_ticks", 0) for r in results),
    )
    return stats
