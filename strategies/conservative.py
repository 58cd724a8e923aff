"""``conservative``: the model partitioned into logical processes (LPs), synchronised conservatively.

Sync: ``sync=window`` runs every LP to ``global next event time + lookahead``
and exchanges messages at a barrier (YAWNS; gem5's quantum barrier);
``sync=null-message`` is Chandy–Misra–Bryant, each LP running strictly below
the smallest clock of its input channels, with Safra's token for global
quiescence when the workload has no end tick (:mod:`tickpar.pdes.window`,
:mod:`tickpar.pdes.nullmsg`, :mod:`tickpar.pdes.safra`).  Backends
(``backend``): ``threads`` (one thread per LP over one shared model; gives
speedup only with GIL-releasing work), ``processes``
(one process per LP, ``start_method=fork`` (default; falls back to ``spawn``
if the caller has other threads alive) or ``spawn``; each process builds the
model from the spec; LPs talk over non-blocking socket pairs), ``mpi``
(``mpiexec -n N python -m tickpar.pdes.mpi_rank JOB OUT``, with the
``mpiexec`` next to ``sys.executable``: MPICH from PyPI installs it into the
venv; at most one rank per core unless ``oversubscribe=true``, because MPICH
ranks spin while they wait).  See :mod:`tickpar.pdes.launch`.

Lookahead: the smallest positive latency of a link that crosses LPs, or the
``lookahead`` option, which may also be set larger, as gem5's ``sim_quantum``
is: then it is a claim that the run checks.  A message that crosses LPs with
less than the lookahead (a cut zero-latency link with
``partition=roundrobin``, or a ``lookahead`` option larger than a link's
latency) raises :class:`~tickpar.plugins.LookaheadError`: verdict
``causality``, "lookahead violation"; so does a message below its sender's
promise, or a promise that goes backwards (null-message sync).

Ownership: components are partitioned into ``workers`` LPs by
:func:`tickpar.pdes.partition.partition` (``partition=auto`` never separates
components joined by a zero-latency link or a direct call, maximises the
lookahead and then minimises cut edges within a balance cap; ``roundrobin``
and ``linear`` ignore the graph).  What ``auto`` balances is
``partition_weights``: ``events`` weighs each component by the events it
processed in a work-free sequential run of the same spec
(:func:`tickpar.pdes.plan.component_event_counts`; a pure function of the
spec, so processes, ranks and the native engine agree; the default); ``windows``
weighs them so too, then refines the partition (whole groups only, the
lookahead kept) to minimise what a window sync waits for, the sum over
windows of the busiest LP's events in each (the same profiled run's events
per component per window of the model's smallest link latency,
:func:`tickpar.pdes.plan.component_window_counts`): balanced totals still
left one LP idle in some windows and the other in the rest (but it cuts more
edges, which slows null-message runs, so it is an option); ``count`` weighs
every component 1 (the old partition, kept for comparison: it left the busiest
LP most of multicore's events).  The figures: docs/measurements/2026-12-06-code-comments.md.  Each LP has its own
:class:`~tickpar.kernel.eventq.EventQueue` and runs only its own components, so no
component is ever entered by two workers (each component's events, and the
messages to it, are inserted and run by its own LP's thread); links that cross
LPs deliver through messages, batched per destination LP per round.  So the
threads backend builds its shared model without the per-event race guard: the
partition makes it redundant, as ``tick-barrier``'s claims do, and it cost
a measurable share of an event's instructions (the same log).  A direct call across LPs
cannot be simulated at all and is rejected before the run (verdict
``causality``).

Determinism: under ``order=canonical`` a message always reaches its receiver
before the receiver runs anything at its tick, and the canonical tie key is
the sender's own: every backend and both syncs reproduce the single queue.
Under ``order=gem5`` each LP serves its bins LIFO by its own insertions, and
messages are inserted at the barrier, as gem5's ``handleAsyncInsertions``
does: results may differ from the single queue where a bin mixes events from
different LPs.  The strategy counts those ties (``gem5_cross_lp_ties``) and
those whose order the single-queue run reverses (``gem5_tie_reorders``; see
:mod:`tickpar.pdes.stamps`).  With ``null-message`` the insertion order of
messages then depends on when they arrive, so results may also vary from run
to run (gem5's own nondeterminism); ``window`` delivers in LP order and is
deterministic.

Schedule (``schedule``): ``static`` (the default) runs one LP per worker, its
partition fixed before the run.  ``adaptive`` (the native engine only,
``--engine native``; the Python engine refuses it with one line) partitions the
model into ``K`` LPs, ``workers <= K <= lps_max`` (default ``8 x workers``, at
most 64), as fine as the coupling allows without a shorter lookahead than the
static partition's (components coupled at zero latency always share an LP;
:mod:`tickpar.pdes.adaptive`), and every window hands the LPs to the workers by
the time each took in the previous window, largest first (LPT); a worker done
with its own steals whole LPs not yet started (``native/src/adaptive.hpp``).
Each LP's window is the same computation on whichever worker runs it, so the
result is the static strategy's with ``K`` workers, event for event: the same
promise, from the same traits.

Promise: ``exact`` under canonical order when no link crosses LPs faster than
the lookahead (always with ``partition=auto`` and no ``lookahead`` option);
``causality`` when a direct call crosses LPs; nothing in gem5 order, or when a
cut link is faster than the lookahead (a violation only if a message takes
it).

Statistics beyond the common ones: the partition's figures, ``windows``,
``rounds``, ``packets``, ``served``/``events_per_lp``, ``loop_s`` (seconds of
the synchronised execution alone, from every LP built, started and past the
start barrier to the end; for processes and MPI measured inside the workers,
the maximum over LPs), ``setup_s`` (the rest of the run), ``cpu_s`` per LP.
The common ``lock_waits`` is left out: LPs share no locks.  On the native engine,
both schedules add ``lps`` (LPs), ``reassignments`` and
``reassignments_per_window`` (LPs that ran events on another worker than the
last time they ran any), ``stolen_lps`` (LP windows a worker took from another's
list), ``imbalance_per_window`` (per window, the busiest worker's time over the
mean: 1 is balanced), its ``imbalance_mean``, ``imbalance_max`` and
``imbalance_loop`` (the windows' busiest times over their mean times, summed);
``static`` has one LP per worker and no reassignments.
"""

from __future__ import annotations

import time
from typing import Any

from tickpar.kernel.model import Model
from tickpar.kernel.params import Param, ParamError
from tickpar.kernel.work import calibrate
from tickpar.pdes.adaptive import MAX_LPS, SCHEDULES, fine_plan, lps_max_of, schedule_of
from tickpar.pdes.launch import (
    mpi_launch_stats,
    mpiexec_path,
    run_mpi,
    run_processes,
    run_threads,
    usable_cores,
)
from tickpar.pdes.lp import LPResult
from tickpar.pdes.options import placement_options, process_options
from tickpar.pdes.partition import Partition
from tickpar.pdes.plan import (
    DEFAULT_PARTITION_WEIGHTS,
    Plan,
    cut_links_below,
    make_plan,
    partition_weights,
    partition_window_loads,
)
from tickpar.pdes.stats import lp_total, merged_record, partitioned_stats
from tickpar.plugins import LookaheadError, RunSpec, Strategy, StrategyResult
from tickpar.verify.anatomy import partitioned_steps
from tickpar.verify.oracle import OracleRecord, Verdict

BACKENDS = ("threads", "processes", "mpi")
#: The policies of :data:`tickpar.pdes.sync.SYNCS` that this strategy offers.
CONSERVATIVE_SYNCS = ("window", "null-message")
#: The one line with which the Python engine refuses ``schedule=adaptive`` (the native engine's alone).
PYTHON_SCHEDULE_ERROR = (
    "strategy conservative option schedule=adaptive is taken by the native engine only (--engine native): "
    "the Python engine allows schedule=static"
)


def plan_for(model: Model, spec: RunSpec, workers: int, options: dict[str, Any]) -> tuple[Plan, Partition]:
    """The plan of a run of this strategy: its options applied to :func:`tickpar.pdes.plan.make_plan`
    (``schedule=adaptive``: :func:`tickpar.pdes.adaptive.fine_plan`, ``K >= workers`` LPs)."""
    weighted_by = options.get("partition_weights", DEFAULT_PARTITION_WEIGHTS)
    common: dict[str, Any] = {
        "method": options["partition"],
        "order": spec.order,
        "lookahead": options.get("lookahead"),
        "stall_s": options["stall_s"],
        "weights": partition_weights(spec, weighted_by),
        "weighted_by": weighted_by,
        "window_loads": partition_window_loads(spec, weighted_by),
    }
    if schedule_of(options) == "adaptive":
        return fine_plan(model, workers, lps_max_of(options, workers), **common)
    return make_plan(model, workers, sync=options["sync"], **common)


class Conservative(Strategy):
    name = "conservative"
    summary = "LPs with own queues and lookahead: window barriers (YAWNS, gem5 quantum) or null messages (CMB)"
    engines = ("python", "native")  # the native engine has it built in (native/src)
    options = {
        "sync": Param(str, "window", "window (barrier every lookahead) or null-message (Chandy-Misra-Bryant)",
                      choices=CONSERVATIVE_SYNCS),
        **placement_options(BACKENDS, "threads (shared model), processes (multiprocessing) or mpi (mpi4py)"),
        "lookahead": Param(int, None, "ticks per window/promise; none: smallest latency crossing LPs",
                           min=1, nullable=True),
        "oversubscribe": Param(bool, False, "backend=mpi: allow more ranks than cores (MPICH ranks spin)"),
        "schedule": Param(str, "static", "static (one LP per worker, fixed before the run) or adaptive (native "
                          "engine, window sync: lps_max LPs handed to the workers every window by their last "
                          "window's cost, largest first; idle workers steal whole LPs)", choices=SCHEDULES),
        "lps_max": Param(int, None, "schedule=adaptive: at most this many LPs (none: 8 x workers, at most 64)",
                         min=1, max=MAX_LPS, nullable=True),
        **process_options("an LP waiting longer than this for a packet"),
    }
    orders = ("canonical",)

    # -- contract ------------------------------------------------------------------------------
    def validate(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> None:
        super().validate(spec, workers, options)
        if schedule_of(options) == "adaptive":
            if options.get("sync", "window") != "window" or options.get("backend", "threads") != "threads":
                raise ParamError(
                    f"strategy conservative option schedule=adaptive is not allowed with sync={options.get('sync')} "
                    f"backend={options.get('backend')}: it runs sync=window on threads (the native engine)"
                )
            lps_max_of(options, workers)
        if options.get("backend") == "mpi":
            exe = mpiexec_path()
            if not exe.exists():
                raise ParamError(f"backend=mpi needs {exe} (pip install mpich mpi4py into this environment)")
            try:
                import mpi4py  # noqa: F401
            except ImportError:
                raise ParamError("backend=mpi needs mpi4py (pip install mpi4py)") from None
            cores = usable_cores()
            if workers > cores and not options.get("oversubscribe", False):
                raise ParamError(
                    f"workers={workers} is not allowed for backend=mpi on {cores} cores: MPICH ranks spin while "
                    "waiting (set oversubscribe=true to run anyway)"
                )

    def expected_verdict(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> str | None:
        """``exact`` under canonical order when no link or call crosses LPs faster than the lookahead.

        ``causality`` when a direct call crosses LPs (rejected before the run);
        ``None`` (not promised) under gem5 order, or when a cut link is faster
        than the lookahead (a violation only if a message takes it).
        """
        if spec.order != "canonical":
            return None
        if options.get("partition", "auto") == "auto" and options.get("lookahead") is None:
            return "exact"
        model = spec.build_model(work="none")
        try:
            plan, _part = plan_for(model, spec, workers, options)
        except LookaheadError:
            return "causality"
        return None if cut_links_below(model, plan) else "exact"

    def anatomy(
        self, spec: RunSpec, workers: int, options: dict[str, Any], verdict: Verdict
    ) -> list[dict[str, Any]] | None:
        """LPs and windows: the LP of the first diverging component, its window, or the failure."""
        model = spec.build_model(work="none")
        try:
            plan, _ = plan_for(model, spec, workers, options)
        except LookaheadError:
            return None  # refused before the run: the failure message says it all
        names = [c.name for c in model.components]
        return partitioned_steps(verdict, plan.lp_of, names, plan.lookahead, plan.sync)

    def uses_processes(self, options: dict[str, Any]) -> bool:
        return options.get("backend") in {"processes", "mpi"}

    # -- running -----------------------------------------------------------------------------------
    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        if schedule_of(options) != "static":
            raise ParamError(PYTHON_SCHEDULE_ERROR)
        started = time.perf_counter()
        backend = options["backend"]
        extra: dict[str, Any] = {}
        if backend == "threads":
            model = spec.build_model()
            plan, part = plan_for(model, spec, workers, options)
            results = run_threads(model, plan)
        else:
            # The parent builds the model only to partition it (no work calibration); each LP builds its own.
            plan, part = plan_for(spec.build_model(work="none"), spec, workers, options)
            if backend == "processes":
                # Calibrated once here, a forked LP inherits the rate (cached per process) instead of measuring.
                calibrate(spec.work)
                results, extra["start_method"] = run_processes(spec, plan, options["start_method"])
            else:
                results = run_mpi(spec, plan)
                extra.update(mpi_launch_stats())  # mpiexec, its launch command, the SLURM job (if any)
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
        if plan.sync == "window" or plan.parts == 1:
            batches = max(r.stats.get("windows", 0) for r in results)
        else:
            batches = lp_total(results, "rounds")
        stats = partitioned_stats(results, record, plan, part, wall, batches=batches)
        stats.update(
            null_messages=lp_total(results, "null_messages"),
            sync=plan.sync,
            backend=options["backend"],
            served=lp_total(results, "served"),
            windows=max(r.stats.get("windows", 0) for r in results),
            rounds=lp_total(results, "rounds"),
        )
        return stats
