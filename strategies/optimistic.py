"""``optimistic``: Time Warp (Jefferson's virtual time, as ROSS runs it): LPs that speculate and roll back.

Sync: none while running: each logical process (LP) serves its own queue in
key order without waiting for its inputs.  A message that arrives below an
event already processed (a *straggler*) rolls the LP back: every event from
the first one above it is undone (saved component states restored, the
queue's journal undone) and an anti-message chases every message those
events sent (aggressive cancellation).  Global virtual time (GVT) is a
Chandy-Lamport cut over the FIFO channels, collected by LP 0 every
``gvt_interval`` of its events or when an LP is idle
(:mod:`tickpar.pdes.gvt`); events below it are committed and their saved
state freed (fossil collection).  :mod:`tickpar.pdes.timewarp` has the
details.

Lookahead: not needed for correctness.  ``window`` bounds optimism: an LP
runs only events with ``when < GVT + window`` ticks (0: unbounded, classic
Time Warp); ``window_ratio`` gives it as a multiple of the lookahead (the
smallest latency of a link crossing LPs), which carries across shapes.  An
event below ``GVT + lookahead`` is *safe*: no message can reach it any more,
so it runs without saving and commits at once.  With ``window_ratio <= 1``
every event is safe: nothing is saved or rolled back and the LPs run as an
asynchronous conservative scheme paced by GVT; a larger window trades
rollbacks for parallelism where lookahead is small, which is where windows
of conservative sync starve.

Ownership: components are partitioned into ``workers`` LPs by
:func:`tickpar.pdes.partition.partition` (``partition=auto`` never separates
components joined by a zero-latency link or a direct call; it balances
``partition_weights``, events per component and window by default, as ``conservative`` does); each LP runs and
rolls back only its own components.  A direct call across LPs cannot be
simulated and is rejected before the run (verdict ``causality``).  Backends
(``backend``): ``threads`` (one thread per LP over one shared model; only
packets cross; the interpreter's switch interval is lowered to 1 ms for the
run, so that GIL-holding handlers interleave finely instead of one LP running
5 ms ahead of the others, which it would only roll back) or ``processes`` (one process per LP, each building the model
from the spec, ``start_method=fork`` or ``spawn``; the same packets, pickled
over socket pairs).  Saved states never leave their LP.  What is saved: each
component's declared state (``state_attrs``, see ``workloads/README.md``)
and the kernel's fields, before each event of the component
(:meth:`tickpar.kernel.model.Component.save`); message events are not
recycled, so a rolled-back message is queued again as itself.

Determinism: under ``order=canonical`` every LP serves its events in the
single queue's order (the tie is the sender's source key, the same in every
LP) and undoes any event served before an input that precedes it, so the
committed events are the sequential run's, whatever the timing; only the
rollback statistics vary from run to run.  Under ``order=gem5`` ties depend
on arrival: not reproducible (no promise).

Promise: ``exact`` under canonical order when no link crossing LPs has zero
latency (always with ``partition=auto``): the committed events give the
sequential run's digests, counts and states (traces and statistics count
committed events only).  ``causality`` when a direct call crosses LPs.
Nothing promised under gem5 order or with a zero-latency link cut.  With
``rollback_check=true`` every event is run, rolled back and run again
(ROSS's optimistic debug mode): state that a handler changes but the
component's save leaves out ends the run with verdict ``unsaved-state``,
naming the component and the event.

Statistics beyond the common ones: ``processed`` (events run, rolled-back
runs included), ``committed``, ``rolled_back``, ``efficiency`` (committed /
processed), ``rollbacks`` and ``rollback_lengths`` (a histogram: ``[events
undone, rollbacks]`` pairs, one summary column as JSON), ``rollback_mean_length``,
``rollback_max_length``, ``stragglers``, ``safe_events`` (events below
``GVT + lookahead``, which no message can reach any more: run without saving
and committed at once), ``anti_messages`` (sent),
``annihilated``, ``gvt_rounds``, ``held_errors`` (handler errors held while
speculating, later undone), ``peak_saved`` (``snapshots``: the most records
of saved state held at once, summed over LPs; ``bytes``: that many times the
mean size of a sampled record, RNG base states left out), ``window``, the
partition's figures, ``loop_s``, ``setup_s``, ``cpu_s``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import Any

from tickpar.kernel.model import Model
from tickpar.kernel.params import Param
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
from tickpar.pdes.stats import lp_total, merged_record, partitioned_stats
from tickpar.plugins import LookaheadError, Promise, RunSpec, Strategy, StrategyResult
from tickpar.verify.anatomy import partitioned_steps
from tickpar.verify.oracle import OracleRecord, Verdict

BACKENDS = ("threads", "processes")
#: The interpreter's thread switch interval during a threads run (see :meth:`Optimistic.run`).
SWITCH_INTERVAL_S = 0.001


def plan_for(model: Model, spec: RunSpec, workers: int, options: dict[str, Any]) -> tuple[Plan, Partition]:
    """The plan of a run of this strategy: the partition, and the Time Warp settings as sync arguments."""
    plan, part = make_plan(
        model,
        workers,
        method=options["partition"],
        order=spec.order,
        sync="optimistic",
        stall_s=options["stall_s"],
        weights=partition_weights(spec, options["partition_weights"]),
        weighted_by=options["partition_weights"],
        window_loads=partition_window_loads(spec, options["partition_weights"]),
    )
    lp_of = plan.lp_of
    zero_cut = any(lp_of[link.src.id] != lp_of[link.dst.id] and link.latency == 0 for link in model.links)
    args = {
        "window": window_ticks(options, plan.lookahead),
        "gvt_interval": options["gvt_interval"],
        "rollback_check": options["rollback_check"],
        "zero_cut": zero_cut,
    }
    return replace(plan, sync_args=args), part


def window_ticks(options: dict[str, Any], lookahead: int | None) -> int:
    """The window in ticks: ``window_ratio`` x the lookahead (at least 1) when given, else ``window``."""
    ratio = options.get("window_ratio")
    if ratio is None:
        return int(options.get("window", 0))
    if not ratio or lookahead is None:
        return 0  # ratio 0, or no link crosses LPs (nothing to wait for): unbounded
    return max(1, int(ratio * lookahead))


class Optimistic(Strategy):
    name = "optimistic"
    summary = "Time Warp: LPs run ahead, roll back on stragglers (state saving, anti-messages), commit below GVT"
    options = {
        "window": Param(int, 0, "bounded optimism: run only events before GVT + window ticks (0: unbounded)",
                        min=0, max=10**15),
        "window_ratio": Param(float, None, "window as a multiple of the lookahead (overrides window; 0: unbounded)",
                              min=0.0, max=1e9, nullable=True),
        **placement_options(BACKENDS, "threads (shared model) or processes (one per LP, sockets)"),
        "gvt_interval": Param(int, 64, "LP 0 starts a GVT round every this many of its events (and when idle)",
                              min=1, max=10**9),
        "rollback_check": Param(bool, False, "run every event, roll it back, run it again: find unsaved state"),
        **process_options("an LP waiting longer than this for a packet"),
    }  # fmt: skip
    orders = ("canonical",)

    # -- contract ------------------------------------------------------------------------------
    def promise(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> Promise:
        """``exact`` under canonical order unless a zero-latency link or a direct call crosses LPs."""
        if spec.order != "canonical":
            return Promise(None, (), "optimistic: ties in gem5 order depend on when messages arrive")
        if options.get("partition", "auto") == "auto":
            return Promise("exact", (), "optimistic commits exactly the canonical order (partition=auto)")
        model = spec.build_model(work="none")
        try:
            plan, _part = plan_for(model, spec, workers, options)
        except LookaheadError:
            return Promise("causality", ("direct_calls",), "a direct call crosses LPs (rejected before the run)")
        if plan.sync_args["zero_cut"]:
            return Promise(None, ("zero_latency_links",), "a zero-latency link crosses LPs: GVT only by tick")
        return Promise("exact", (), "optimistic commits exactly the canonical order")

    def expected_verdict(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> str | None:
        return self.promise(spec, workers, options).verdict

    def anatomy(
        self, spec: RunSpec, workers: int, options: dict[str, Any], verdict: Verdict
    ) -> list[dict[str, Any]] | None:
        """LPs: the LP of the first diverging component, or the failure."""
        model = spec.build_model(work="none")
        try:
            plan, _ = plan_for(model, spec, workers, options)
        except LookaheadError:
            return None
        names = [c.name for c in model.components]
        return partitioned_steps(verdict, plan.lp_of, names, plan.lookahead, plan.sync)

    # -- running -----------------------------------------------------------------------------------
    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        started = time.perf_counter()
        backend = options["backend"]
        extra: dict[str, Any] = {}
        if backend == "threads":
            model = spec.build_model()
            plan, part = plan_for(model, spec, workers, options)
            switch = sys.getswitchinterval()
            # GIL-holding handlers run in slices of the switch interval: 5 ms lets one LP run hundreds of
            # events past the others, all of them rolled back later.  1 ms during the run (restored after).
            sys.setswitchinterval(min(switch, SWITCH_INTERVAL_S))
            try:
                results = run_threads(model, plan)
            finally:
                sys.setswitchinterval(switch)
            extra["switch_interval_s"] = min(switch, SWITCH_INTERVAL_S)
        else:
            plan, part = plan_for(spec.build_model(work="none"), spec, workers, options)
            calibrate(spec.work)  # a forked LP inherits the rate
            results, extra["start_method"] = run_processes(spec, plan, options["start_method"])
        wall = time.perf_counter() - started
        record = merged_record(results)
        stats = self._stats(results, record, plan, part, options, wall)
        stats.update(extra)
        return StrategyResult(record, stats)

    # -- statistics --------------------------------------------------------------------------------
    def _stats(
        self,
        results: list[LPResult],
        record: OracleRecord,
        plan: Plan,
        part: Partition,
        options: dict[str, Any],
        wall: float,
    ) -> dict[str, Any]:
        processed = lp_total(results, "processed")
        gvt_rounds = max(r.stats.get("gvt_rounds", 0) for r in results)
        # A "batch" is what a GVT round commits.
        stats = partitioned_stats(results, record, plan, part, wall, batches=gvt_rounds)
        lengths: dict[int, int] = {}
        for r in results:
            for length, count in r.stats.get("rollback_lengths", {}).items():
                lengths[int(length)] = lengths.get(int(length), 0) + count
        committed = lp_total(results, "committed")
        rollbacks = sum(lengths.values())
        stats.update(
            backend=options["backend"],
            window=plan.sync_args["window"],
            window_ratio=options.get("window_ratio"),
            gvt_interval=options["gvt_interval"],
            rollback_check=options["rollback_check"],
            processed=processed,
            committed=committed,
            rolled_back=lp_total(results, "rolled_back"),
            efficiency=committed / processed if processed else 1.0,
            rollbacks=rollbacks,
            rollback_lengths=[[n, lengths[n]] for n in sorted(lengths)],
            rollback_mean_length=sum(n * k for n, k in lengths.items()) / rollbacks if rollbacks else 0.0,
            rollback_max_length=max(lengths, default=0),
            stragglers=lp_total(results, "stragglers"),
            safe_events=lp_total(results, "safe_events"),
            anti_messages=lp_total(results, "anti_messages"),
            annihilated=lp_total(results, "annihilated"),
            held_errors=lp_total(results, "held_errors"),
            gvt_rounds=gvt_rounds,
            peak_saved={
                "snapshots": lp_total(results, "peak_saved_snapshots"),
                "bytes": lp_total(results, "peak_saved_bytes"),
            },
            served=lp_total(results, "served"),
        )
        return stats
