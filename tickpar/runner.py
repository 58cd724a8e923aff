"""Run one cell: validate it, execute the strategy, turn any failure into a verdict, write a record.

A *cell* is (workload, params, strategy, options, workers, seed, order, work).
:func:`resolve_cell` validates every part against the plugin registry (bad
input -> one-line :class:`~tickpar.kernel.params.ParamError` or
:class:`~tickpar.plugins.registry.PluginError`).  :func:`execute` runs it in this
process; :func:`execute_isolated` runs it in a child process with a time
limit, so a hang or a hard crash becomes that cell's ``timeout``/``crash``
verdict instead of taking the caller down.

The JSON record (``tickpar run --out``, one per pipeline cell) is versioned:

# Record format history:
# tickpar.cell/1: first version (workload, params, strategy, options, workers,
#   seed, order, work, work_model, events, final_tick, digest, wall_s,
#   events_per_s, stats, oracle, verdict, env, versions).
# Later additions to tickpar.cell/1 (readers use .get): statistics (the workload's
#   declared statistics of this run) and errors (relative errors against golden:
#   final_tick, events, one per statistic; null when unchecked or unfinished).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickpar import native
from tickpar.host.atomic import write_json_atomic  # the runner's public name since before it moved
from tickpar.host.envinfo import environment, versions
from tickpar.host.procgroup import kill_group
from tickpar.kernel import kernel_build
from tickpar.kernel.eventq import ORDERS, EventNotFound, SchedulingError
from tickpar.kernel.params import ParamError, resolve
from tickpar.kernel.work import WORK_MODES, calibrate, make_work
from tickpar.native import ENGINES
from tickpar.plugins import BASELINE, DeadlockError, LookaheadError, Promise, RunSpec, UnsavedStateError
from tickpar.plugins.registry import PluginCodeError, PluginError, class_file, get_registry, where
from tickpar.verify import anatomy
from tickpar.verify.oracle import OracleRecord, Verdict, causality_failure, compare, failure_record

__all__ = [
    "RECORD_FORMAT",
    "Cell",
    "Outcome",
    "cell_promise",
    "check_cell",
    "execute",
    "execute_isolated",
    "explain",
    "failure_of",
    "golden_cell",
    "make_record",
    "resolve_cell",
    "write_json_atomic",
]

RECORD_FORMAT = "tickpar.cell/1"


@dataclass(frozen=True)
class Cell:
    """A validated cell: the spec plus the strategy, its resolved options and the worker count."""

    spec: RunSpec
    strategy: str
    options: dict[str, Any]
    workers: int
    engine: str = "python"
    """``python`` (the model itself) or ``native`` (the C++ engine replaying the model's event DAG)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec.to_dict(),
            "strategy": self.strategy,
            "options": self.options,
            "workers": self.workers,
            "engine": self.engine,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        return cls(
            RunSpec.from_dict(data["spec"]),
            data["strategy"],
            dict(data["options"]),
            int(data["workers"]),
            data.get("engine", "python"),
        )

    def with_spec(self, spec: RunSpec) -> Cell:
        return Cell(spec, self.strategy, self.options, self.workers, self.engine)


@dataclass
class Outcome:
    """What executing a cell produced."""

    record: OracleRecord
    stats: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0


def resolve_cell(
    workload: str,
    params: dict[str, Any] | None,
    strategy: str,
    options: dict[str, Any] | None,
    workers: int,
    seed: int,
    order: str = "gem5",
    work: str = "none",
    trace: bool = False,
    engine: str | None = "python",
) -> Cell:
    """Validate and complete a cell; raises ParamError/PluginError with one line.  ``engine=None``: python, or the
    strategy's one engine where it runs on one only (a native plugin)."""
    if engine is not None and engine not in ENGINES:
        raise ParamError(f"engine {engine!r} is not allowed: choose one of {', '.join(ENGINES)}")
    registry = get_registry()
    workload_cls = registry.workload(workload)
    strategy_cls = registry.strategy(strategy)
    if engine is None:
        engine = "python" if "python" in strategy_cls.engines else strategy_cls.engines[0]
    if engine not in strategy_cls.engines:
        raise ParamError(f"strategy {strategy} does not run on the {engine} engine: it runs on "
                         f"{', '.join(strategy_cls.engines)} (--engine)")  # fmt: skip
    if order not in ORDERS:
        raise ParamError(f"order {order!r} is not allowed: choose one of {', '.join(ORDERS)}")
    if work not in WORK_MODES:
        raise ParamError(f"work {work!r} is not allowed: choose one of {', '.join(WORK_MODES)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParamError(f"seed={seed!r} is not allowed: an int >= 0")
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise ParamError(f"workers={workers!r} is not allowed: an int >= 1")
    resolved_params = resolve(workload_cls.params, params, f"workload {workload} parameter")
    workload_cls().check_params(resolved_params)
    resolved_options = resolve(strategy_cls.options, options, f"strategy {strategy} option")
    spec = RunSpec(workload, resolved_params, seed, order, work, trace)
    strategy_cls().validate(spec, workers, resolved_options)
    if engine == "native":
        native.require(strategy, resolved_options)
    else:
        native.require_python(strategy, resolved_options)  # options only the native engine takes (schedule=adaptive)
    return Cell(spec, strategy, resolved_options, workers, engine)


def cell_promise(cell: Cell) -> Promise:
    """The strategy's promise for ``cell``, decided before it runs, for the engine that runs it: a native
    run behaves as the options in :data:`tickpar.native.RUNS_AS` (native ``split`` runs real threads)."""
    options = dict(cell.options)
    if cell.engine == "native":
        options.update(native.RUNS_AS.get(cell.strategy, {}))
    return get_registry().strategy(cell.strategy)().promise(cell.spec, cell.workers, options)


def golden_cell(cell: Cell) -> Cell:
    """The sequential cell whose record is ``cell``'s golden reference (always the Python engine's)."""
    return Cell(cell.spec, BASELINE, {"checks": True}, 1)


def _where(exc: BaseException, cell: Cell) -> str:
    """`` at path:line (in function)``: where in the workload's file the exception came from, else the
    deepest frame outside tickpar (a plugin strategy's), else the deepest one."""
    if not traceback.extract_tb(exc.__traceback__):
        return ""
    workload = get_registry().workloads.get(cell.spec.workload)
    return f" at {where(exc, class_file(workload) if workload is not None else None)}"


def execute(cell: Cell) -> Outcome:
    """Run ``cell`` in this process; every failure of the run becomes a failure record, never an exception.

    Bad input is the exception: a :class:`~tickpar.plugins.registry.PluginError` (a workload whose
    ``build()`` or ``stats()`` fails is a :class:`~tickpar.plugins.registry.PluginCodeError`) is raised,
    one line naming the plugin's file and line, as every other bad input is.
    """
    strategy = get_registry().strategy(cell.strategy)()
    started = time.perf_counter()
    try:
        if cell.engine == "native":
            record, stats = native.run_native(cell.spec, cell.strategy, cell.workers, dict(cell.options))
            return Outcome(record, stats, time.perf_counter() - started)
        result = strategy.run(cell.spec, cell.workers, dict(cell.options))
        if result.record.failure is None:
            result.record.statistics = cell.spec.statistics(result.record)
    except PluginError:
        raise
    except Exception as err:
        return Outcome(failure_of(err, cell), {}, time.perf_counter() - started)
    wall = time.perf_counter() - started
    return Outcome(result.record, result.stats, wall)


def failure_of(err: Exception, cell: Cell) -> OracleRecord:
    """The failure record of a run of ``cell`` that raised ``err`` (its verdict: causality, deadlock, ...,
    else crash): how :func:`execute` and a timing worker (:mod:`tickpar.perf.timing.worker`) record it."""
    if isinstance(err, SchedulingError):
        return causality_failure(err)
    if isinstance(err, LookaheadError):
        return failure_record("causality", f"lookahead violation: {err}")
    if isinstance(err, DeadlockError):
        return failure_record("deadlock", str(err))
    if isinstance(err, UnsavedStateError):
        return failure_record("unsaved-state", str(err), component=err.component, event=err.event, when=err.when)
    if isinstance(err, EventNotFound):  # gem5's panic in remove(): a crash, with or without assertions
        detail = {"panic": EventNotFound.MESSAGE, "event": err.event, "when": err.when, "cur_tick": err.cur_tick}
        return failure_record("crash", str(err), **detail)
    return failure_record("crash", f"{type(err).__name__}: {err}{_where(err, cell)}")


def _outcome_to_dict(outcome: Outcome) -> dict[str, Any]:
    return {"record": outcome.record.to_dict(with_traces=True), "stats": outcome.stats, "wall_s": outcome.wall_s}


def _outcome_from_dict(data: dict[str, Any]) -> Outcome:
    return Outcome(OracleRecord.from_dict(data["record"]), data["stats"], data["wall_s"])


def execute_isolated(cell: Cell, timeout: float | None) -> Outcome:
    """Run ``cell`` in a child process; past ``timeout`` seconds it is killed (verdict ``timeout``)."""
    with tempfile.TemporaryDirectory(prefix="tickpar-cell-") as tmp:
        cell_path = Path(tmp, "cell.json")
        out_path = Path(tmp, "outcome.json")
        cell_path.write_text(json.dumps(cell.to_dict()))
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "tickpar.runner", str(cell_path), str(out_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: a timeout kills MPI ranks and helpers too
        )
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.communicate()
            return Outcome(
                failure_record("timeout", f"cell exceeded its {timeout:g} s limit"), {}, time.perf_counter() - started
            )
        if out_path.exists():
            data = json.loads(out_path.read_text())
            if "plugin_error" in data:  # bad input found in the child: the same one line here
                raise PluginCodeError(data["plugin_error"])
            return _outcome_from_dict(data)
        tail = stderr.decode(errors="replace").strip().splitlines()[-3:]
        status = str(proc.returncode)
        if proc.returncode < 0:  # killed by a signal: name it (a native plugin's segfault leaves no stderr)
            try:
                status += f" ({signal.Signals(-proc.returncode).name})"
            except ValueError:
                pass
        message = f"worker process exited with status {status}" + (": " + " | ".join(tail) if tail else "")
        return Outcome(failure_record("crash", message), {}, time.perf_counter() - started)


def _workload_info(spec: RunSpec) -> dict[str, Any]:
    """The workload's own description of the run (:meth:`~tickpar.plugins.contracts.Workload.describe`)."""
    workload = get_registry().workloads.get(spec.workload)
    if workload is None:
        return {}
    try:
        return workload().describe(spec.params)
    except Exception:  # the record is written for a failed cell too: a description that fails is left out
        return {}


def make_record(cell: Cell, outcome: Outcome, verdict: Verdict | None = None) -> dict[str, Any]:
    """The self-describing JSON record of one cell."""
    rec = outcome.record
    spec = cell.spec
    _, work_model = make_work(spec.work)
    calibrate(spec.work)
    events = rec.events
    described = work_model.describe()
    per_s = events / outcome.wall_s if outcome.wall_s > 0 and events else 0.0
    if cell.engine == "native":
        # The C++ engine spends each event's work_us in its calibrated spin loop; its speed is the loop's alone.
        described = {"mode": "spin", "units_per_us": round(float(outcome.stats.get("spin_per_us", 0.0)), 3),
                     "unit": "spin-loop iterations", "gil_release_min_bytes": None}  # fmt: skip
        loop = float(outcome.stats.get("loop_s", 0.0))
        per_s = events / loop if loop > 0 and events else 0.0
    return {
        "format": RECORD_FORMAT,
        "engine": cell.engine,
        # Which build of the kernel ran this process's Python engine: "compiled" (mypyc) or "pure".
        "kernel": kernel_build(),
        "workload": spec.workload,
        "params": spec.params,
        "strategy": cell.strategy,
        "options": cell.options,
        "workers": cell.workers,
        "seed": spec.seed,
        "order": spec.order,
        "work": spec.work,
        "work_model": described,
        "workload_info": _workload_info(spec),
        "events": events,
        "final_tick": rec.final_tick,
        "digest": rec.digest,
        "wall_s": outcome.wall_s,
        "events_per_s": per_s,
        "stats": outcome.stats,
        "statistics": rec.statistics,
        "failure": rec.failure,
        "verdict": verdict.to_dict() if verdict is not None else None,
        "errors": verdict.errors if verdict is not None else None,
        "oracle": rec.to_dict(with_traces=False),
        "env": environment(),
        "versions": versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def check_cell(cell: Cell, golden: OracleRecord | None = None, timeout: float | None = None) -> tuple[Verdict, Outcome]:
    """Run the golden sequential cell (unless given) and ``cell``, both traced, and compare."""
    traced = cell.with_spec(cell.spec.with_trace(True))
    if golden is None:
        golden_outcome = execute(golden_cell(traced))
        failure = golden_outcome.record.failure
        if failure is not None:  # the workload fails on its own, sequentially: its bug, bad input
            raise PluginCodeError(
                f"workload {cell.spec.workload}: its golden sequential run failed ({failure['kind']}): "
                f"{failure['message']}"
            )
        golden = golden_outcome.record
    outcome = execute_isolated(traced, timeout) if timeout else execute(traced)
    if cell.engine == "native":
        # The native engine is judged on its traces of (tick, priority, event name) against the Python golden run.
        return native.check_native_cell(golden, outcome.record), outcome
    return compare(golden, outcome.record), outcome


def explain(cell: Cell, verdict: Verdict, record: OracleRecord, replay: bool = True) -> list[dict[str, Any]]:
    """The anatomy of ``cell``'s ``verdict`` (``[]`` for ``exact``); ``replay=False``: the record alone."""
    if verdict.kind == "exact":
        return []
    if not replay or cell.engine == "native":  # the strategies' replays explain the Python engine's runs
        return anatomy.from_record(verdict, record)
    strategy = get_registry().strategy(cell.strategy)()
    try:
        steps = strategy.anatomy(cell.spec, cell.workers, dict(cell.options), verdict)
    except Exception as exc:  # an explanation must never cost the verdict
        return [*anatomy.from_record(verdict, record), anatomy.row(note=f"no replay: {type(exc).__name__}: {exc}")]
    return steps if steps else anatomy.from_record(verdict, record)



def _child_main(argv: list[str]) -> int:
    cell = Cell.from_dict(json.loads(Path(argv[0]).read_text()))
    try:
        outcome = execute(cell)
    except PluginError as exc:
        Path(argv[1]).write_text(json.dumps({"plugin_error": str(exc)}))
        return 0
    Path(argv[1]).write_text(json.dumps(_outcome_to_dict(outcome), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
