"""Cost presets, each strategy's bound and its predicted scaling, per workload shape (docs/explanation/design.md §9).

This module holds the ``here`` calibration record (:func:`calibrate`) and the command line
(``python -m tickpar.perf.predict.prediction calibrate|shape|table``); the work is done in
:mod:`~tickpar.perf.predict.costs` (presets), :mod:`~tickpar.perf.predict.calibrate` (microbenchmarks),
:mod:`~tickpar.perf.predict.strategy_times` (strategy times) and
:mod:`~tickpar.perf.predict.tables` (records and tables), whose
public names, once this module's, are re-exported here.

One event DAG per shape (and order) is recorded with *metered* work
(:func:`tickpar.perf.predict.bounds.record_dag`, ``meter_work=True``: the engine and handler
cost of each event, and the ``work_us`` it asked for), so a shape costs one
work-free sequential run whatever its ``work_us``.  A cost preset turns it into
seconds:

``here`` (:func:`calibrate`, measured once per sweep on this machine)
    engine cost per event: the recorded ``cost_s``; synthetic work: the work
    model's ``per_call_s + per_us_s * us``, fitted from timed calls;
    ``o_event``: the sequential engine's own per-event cost with no work;
    sync per batch/window ``o_sync(P) = a + b * log2(P)`` (0 at ``P = 1``),
    fitted (least squares, ``b >= 0``) to window exchanges measured at
    ``2 <= P <= cores`` only, never oversubscribed, and extrapolated beyond:
    each of ``P`` LPs sends a packet to every other and waits for theirs, over
    the strategy's own transports (:class:`tickpar.pdes.transport.ThreadTransport` between
    threads, :class:`tickpar.pdes.transport.SocketTransport` between forked processes);
    MPI takes the processes figure (no ``mpiexec`` during calibration; MPICH's
    spinning exchange is faster, so an MPI run may beat its "bound"); a tick-barrier
    batch is charged the threads exchange; ``o_msg`` per cross-LP event: a locked deque hand-off (threads) or a
    pickle round trip of a message tuple (processes, MPI).  With a threads
    backend the GIL serialises everything but GIL-releasing work, so a
    threads run also takes at least the sum of the engine costs plus
    ``o_event`` per event (plus the work under ``gil-hold``).
``cxx`` (the native C++ engine's costs, :func:`tickpar.perf.predict.bounds.cxx_costs`: a ``tickpar calibrate`` file)
    engine cost per event replaced by the native engine's, work as requested, no GIL.

Per strategy (:func:`strategy_time`): ``sequential`` is the reference (1);
``split`` pops every event under one queue lock (``max(work / P, events *
o_event)``); ``tick-barrier`` and ``conservative`` (``sync=window`` or
``null-message``, ``P`` LPs) are :mod:`tickpar.perf.predict.bounds`' structural models
(tick-barrier groups by component, also for ``lock_key=name``, which is exact
only where names and components coincide).
Two things, never confused (docs/explanation/design.md §9):

the *bound* (``bound_speedup``: preset ``here``; ``bound`` in ``prediction.csv``: each preset's own event costs)
    the DAG's zero-overhead limit under the strategy's *actual* assignment: no
    ``o_event``, ``o_sync``, ``o_msg`` or GIL floor at any ``P``; tick-barrier's
    bins with each batch's makespan ``max(largest group, work / P)``;
    conservative's windows over the partition its own plan makes
    (:func:`strategy_partition`: ``partition``, ``partition_weights``); split
    ``max(work / P, critical path)``.  Exactly 1 at ``P = 1``.  The DAG is
    recorded several times and each event keeps its least cost.  A measured
    exact speedup above it is a defect (``above_bound``; the report lists it).
the *model* (``predicted_speedup``; ``model`` in ``prediction.csv``; both presets, ``P = 1, 2, 4, ... 64``)
    the same assignment with the preset's overheads added, groups scheduled
    longest first (LPT).  ``model_sources``/``bound_sources`` say where each
    figure comes from (:func:`provenance`: calibration file, fit or DAG).  Both are loop-only: process and rank
start-up are not modelled, so they compare with ``loop_speedup`` where the
summary has it.  ``ideal_speedup`` is the unconstrained critical-path bound,
``min(P, work / critical path)``, without overheads.

Fitted and calibrated beyond that (issue #17): conservative's ``o_event`` from its own 1-worker runs
(:func:`one_worker_fits`; a workload without such a run borrows another's,
:func:`~tickpar.perf.predict.tables.fits_for`; the table step prices the model again from the DAGs each shape
record keeps, :func:`model_rows`), the GIL-release hash size (``gil_release_bytes``, measured) and, on threads
at ``P >= 2``, what two threads lose to the GIL's hand-offs per GIL-releasing call (``gil_handoff``:
added to each thread's time, half of it to the GIL floor; older calibrations: the two-thread work
overlap, ``work_overlap``) and tick-barrier's own costs (``tick_barrier``: its batch
machinery per event and its hand-off per batch, measured on a work-free shape of its own).
``validation`` in ``prediction.csv`` says whether a measured point was fitted on (``fit``), predicted
(``sweep``) or on a held-out shape.

Outputs: one JSON per shape (:func:`shape_bounds`, ``results/bounds/{workload}/{shape}.json``),
the summary columns (:func:`bound_columns`) and ``results/prediction.csv``
(:func:`prediction_table`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from tickpar.host.atomic import write_json_atomic
from tickpar.kernel.work import calibrate as work_rate
from tickpar.perf.predict.calibrate import (
    calibrate_event_cost,
    gil_handoff,
    gil_release_bytes,
    measured_sync,
    pickled_message,
    process_exchange,
    thread_exchange,
    threads_message,
    tick_barrier_costs,
    work_cost,
    work_overlap,
)
from tickpar.perf.predict.costs import (  # re-exported (module docstring)
    BACKENDS,
    PRESETS,
    Preset,
    fit_sync,
    preset,
)
from tickpar.perf.predict.strategy_times import (  # re-exported (module docstring)
    MODELLED,
    PREDICT_WORKERS,
    least_cost_dag,
    provenance,
    strategy_partition,
    strategy_time,
)
from tickpar.perf.predict.tables import (  # re-exported (module docstring)
    BOUND_TOLERANCE,
    PREDICTION_COLUMNS,
    SHAPE_FORMAT,
    VALIDATION,
    bound_columns,
    measured_speedups,
    model_rows,
    one_worker_fits,
    prediction_table,
    shape_bounds,
)
from tickpar.plugins import BASELINE

__all__ = [
    "BACKENDS",
    "BOUND_TOLERANCE",
    "MODELLED",
    "PREDICTION_COLUMNS",
    "PREDICT_WORKERS",
    "PRESETS",
    "VALIDATION",
    "Preset",
    "bound_columns",
    "calibrate",
    "fit_sync",
    "gil_release_bytes",
    "least_cost_dag",
    "measured_speedups",
    "model_rows",
    "one_worker_fits",
    "prediction_table",
    "preset",
    "provenance",
    "shape_bounds",
    "strategy_partition",
    "strategy_time",
]


def calibrate(cores: int | None = None, work_modes: Iterable[str] = ("gil-release", "gil-hold")) -> dict[str, Any]:
    """The ``here`` preset's figures, measured in this process (about a second).

    Sync costs are measured at ``P = 1 .. cores`` (threads) and ``2 .. cores``
    (processes), never more workers than cores, and fitted by :func:`fit_sync`.
    """
    import os

    cores = cores or len(os.sched_getaffinity(0))
    cores = max(1, int(cores))
    # Processes first: never fork while measuring threads are alive.
    procs = measured_sync(process_exchange, cores)
    threads = measured_sync(thread_exchange, cores)
    process_model = fit_sync(procs)
    msg_threads = min(threads_message() for _ in range(3))
    msg_pickled = min(pickled_message() for _ in range(3))
    record: dict[str, Any] = {
        "format": "tickpar.calibration/1",
        "cores": cores,
        "o_event_s": calibrate_event_cost(),
        "work": {mode: list(work_cost(mode)) for mode in work_modes},
        # The smallest hash that releases the GIL, measured; the hash rate places it in microseconds.
        "gil_release_bytes": gil_release_bytes() if "gil-release" in work_modes else None,
        # Two threads' GIL-releasing calls against one's: the hand-off around each call (threads, P >= 2).
        "work_overlap": work_overlap() if "gil-release" in work_modes and cores >= 2 else {},
        # What a second thread's GIL hand-offs add per GIL-releasing call, by call size (threads under the GIL).
        "gil_handoff": gil_handoff() if "gil-release" in work_modes and cores >= 2 else {},
        # Tick-barrier's batch machinery per event, and its hand-off per batch (P = 2, threads).
        "tick_barrier": tick_barrier_costs() if cores >= 2 else {},
        "work_units_per_us": {mode: work_rate(mode) for mode in work_modes},
        "sync_measured": {
            "threads": {str(p): v for p, v in threads.items()},
            "processes": {str(p): v for p, v in procs.items()},
        },
        "sync_model": {
            "threads": list(fit_sync(threads)),
            "processes": list(process_model),
            "mpi": list(process_model),
        },
        "sync_model_text": "o_sync(P) = a + b*log2(P), least squares over the measured P (<= cores); "
        "mpi takes the processes figure",
        "o_msg_s": {"threads": msg_threads, "processes": msg_pickled, "mpi": msg_pickled},
    }
    if "gil-release" in work_modes and cores >= 2:
        from tickpar.perf.predict.handoff import thread_handoff

        # Each thread strategy's own hand-off excess per call, solved against the model priced by the rest.
        model = {"least_cost_dag": least_cost_dag, "preset": preset, "strategy_time": strategy_time}
        record["thread_handoff"] = thread_handoff(record, model)
    else:
        record["thread_handoff"] = {}
    return record


# -- command line (the pipeline's rules/bounds.smk) ---------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tickpar.perf.predict.prediction calibrate|shape|table ...`` (see ``--help``); exit 2 on bad input."""
    import argparse
    import sys

    from tickpar.kernel.params import ParamError, parse_assignments
    from tickpar.plugins.registry import PluginError
    from tickpar.runner import resolve_cell

    parser = argparse.ArgumentParser(prog="python -m tickpar.perf.predict.prediction",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cal = sub.add_parser("calibrate", help="measure the 'here' preset's costs once per sweep")
    cal.add_argument("--cores", type=int, default=None, help="largest P to measure sync at (default: usable cores)")
    cal.add_argument("--out", required=True)
    shape = sub.add_parser("shape", help="one shape's DAG -> ideal, bound and predicted speedups")
    shape.add_argument("--workload", "-w", required=True)
    shape.add_argument("--shape", required=True, help="the shape's name in the sweep")
    shape.add_argument("--param", "-p", action="append", metavar="K=V")
    shape.add_argument("--seed", type=int, default=1)
    shape.add_argument("--cells", required=True, help="JSON list of {strategy, variant, options, order, work}")
    shape.add_argument("--workers", default=",".join(map(str, PREDICT_WORKERS)), help="comma-separated P values")
    shape.add_argument("--calibration", required=True, help="the calibrate command's JSON")
    shape.add_argument(
        "--presets", default=",".join(PRESETS), help="comma-separated cost presets to price (here alone: no native)"
    )
    shape.add_argument("--out", required=True)
    table = sub.add_parser("table", help="summary.csv + shape records -> prediction.csv")
    table.add_argument("summary")
    table.add_argument("shapes", nargs="*")
    table.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "calibrate":
            write_json_atomic(args.out, calibrate(args.cores), default=float)
        elif args.command == "shape":
            try:
                cells = json.loads(args.cells)
                workers = [int(p) for p in args.workers.split(",")]
            except ValueError as exc:
                raise ValueError(f"--cells/--workers: {exc}") from None
            if not isinstance(cells, list) or any(not isinstance(c, dict) for c in cells) or min(workers) < 1:
                raise ValueError("--cells: a JSON list of objects; --workers: ints >= 1")
            calibration = json.loads(Path(args.calibration).read_text())
            spec = resolve_cell(
                args.workload, parse_assignments(args.param, "--param"), BASELINE, {}, 1, args.seed
            ).spec
            try:
                presets = [p for p in args.presets.split(",") if p]
                record = shape_bounds(
                    args.workload, args.shape, spec, cells, calibration, workers, args.calibration, presets=presets
                )
            except Exception as exc:  # recorded, like a crashed cell: the sweep goes on without this shape's bounds
                record = {"format": SHAPE_FORMAT, "workload": args.workload, "shape": args.shape,
                          "error": f"{type(exc).__name__}: {exc}", "ideal": [], "rows": []}  # fmt: skip
                print(f"tickpar.perf.predict.prediction: {args.workload}/{args.shape}: {record['error']}",
                      file=sys.stderr)
            write_json_atomic(args.out, record, default=float)
        else:
            summary = pd.read_csv(args.summary) if Path(args.summary).exists() else pd.DataFrame()
            out = prediction_table(summary, args.shapes)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            out.to_csv(args.out, index=False)
    except (ValueError, OSError, ParamError, PluginError) as exc:
        print(f"tickpar.perf.predict.prediction: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
