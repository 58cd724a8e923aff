"""``tickpar``: the command line (thin: load, call, print).

Exit status (:data:`EXIT_CODES`): 0 success (``check``: verdict ``exact``), 1 a verdict other
than ``exact`` (``check``: one its strategy promised, or with no promise), 2 bad input (one line
on stderr, never a traceback; a plugin whose own code fails, ``build()`` or ``stats()``, is bad
input too), 3 (``check``) a verdict that breaks the strategy's promise.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tickpar.cellargs import add_cell_options, add_spec_options
from tickpar.cellargs import cell_from_args as _cell_from_args
from tickpar.kernel import kernel_build
from tickpar.kernel.params import ParamError, parse_assignments
from tickpar.plugins import BASELINE
from tickpar.plugins.registry import PluginError, get_registry
from tickpar.verify.oracle import OracleRecord

__all__ = ["main"]

EXIT_OK, EXIT_VERDICT, EXIT_BAD_INPUT, EXIT_BROKEN_PROMISE = 0, 1, 2, 3
#: What each exit status means (the README's table).
EXIT_CODES = {
    EXIT_OK: "success; check: verdict exact (and the promise kept)",
    EXIT_VERDICT: "check: a verdict other than exact, as promised (or with no promise); run: the run failed",
    EXIT_BAD_INPUT: "bad input: a bad value, an unknown or broken plugin, or a plugin whose build() or stats() fails",
    EXIT_BROKEN_PROMISE: "check: the verdict breaks the strategy's promise for the cell",
}


class CLIError(Exception):
    """Bad input: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors: one line, exit 2
        raise CLIError(f"{self.prog}: {message}")


def _add_cell_arguments(p: argparse.ArgumentParser) -> None:
    add_cell_options(p)
    p.add_argument("--timeout", type=float, default=None, help="run in a child process, killed after S seconds")
    p.add_argument("--out", help="write the JSON record to FILE (atomically)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tickpar", description="Parallel gem5-style event loops: run, check and measure.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p_list = sub.add_parser("list", help="list strategies and workloads with their parameters")
    p_list.add_argument("--json", action="store_true", help="machine-readable output")
    p_run = sub.add_parser("run", help="run one cell and print a summary")
    _add_cell_arguments(p_run)
    p_run.add_argument("--trace", action="store_true", help="keep full per-component traces in the record")
    p_run.add_argument(
        "--emit-gem5-trace",
        metavar="FILE",
        help="also write the run (sequential, Python engine) as a gem5 event trace to FILE (.gz: compressed)",
    )
    p_run.add_argument(
        "--trace-format",
        choices=("event", "insert-log"),
        default="event",
        help="the emitted trace's format: gem5's stock Event trace (default) or the insert log",
    )
    p_check = sub.add_parser("check", help="run the golden sequential run and the strategy; print the verdict")
    _add_cell_arguments(p_check)
    p_check.add_argument("--golden", help="reuse this golden record (written by `tickpar golden`)")
    p_check.add_argument("--explain", action="store_true", help="print the steps that led to a non-exact verdict")
    p_shrink = sub.add_parser("shrink", help="delta-debug a failing cell to a smallest one that fails the same way")
    _add_cell_arguments(p_shrink)
    p_shrink.add_argument("--budget", type=float, default=20.0, help="seconds to search (default 20)")
    p_golden = sub.add_parser("golden", help="run the sequential reference of a cell and save its traced record")
    _add_cell_arguments(p_golden)
    p_time = sub.add_parser("time", help="time one cell with pyperf (fresh processes, warm-ups); write its record")
    _add_cell_arguments(p_time)
    _add_time_arguments(p_time)
    _add_bounds_arguments(sub.add_parser("bounds", help="ideal speedups from the event DAG of a sequential run"))
    p_prof = sub.add_parser("trace-profile", help="the parallelism profile of one gem5 run, from its event trace")
    p_prof.add_argument("trace", metavar="TRACE", help="a gem5 event trace (stock Event trace or insert log; .gz too)")
    p_prof.add_argument("--format", default="auto", help="auto (default), event or insert-log")
    p_prof.add_argument("--components", metavar="FILE", help="a mapping file, 'REGEX -> COMPONENT' per line")
    p_prof.add_argument("--events", type=int, default=0, help="profile the whole ticks before the (N+1)-th event")
    p_prof.add_argument("--json", metavar="OUT", help="write the profile as JSON to OUT (atomically)")
    p_prof.add_argument(
        "--gem5-stats",
        metavar="STATS",
        help="the run's gem5 stats.txt (best an untraced run's): the bounds weigh events by its host cost per event",
    )
    p_prof.add_argument(
        "--cost-weights",
        metavar="FILE",
        help="with --gem5-stats: 'REGEX -> WEIGHT' per line, splits the run's cost over the components (mean kept)",
    )
    p_fit = sub.add_parser("trace-fit", help="the synthetic workload shape whose profile is nearest a gem5 run's")
    _add_trace_fit_arguments(p_fit)
    p_cal = sub.add_parser("calibrate", help="measure the native engine's primitive costs (the cxx preset's figures)")
    p_cal.add_argument("--out", help="write the JSON to FILE (default: print it)")
    p_cal.add_argument("--budget", type=float, default=1.0, help="seconds per measurement, roughly (default 1)")
    p_bn = sub.add_parser(
        "build-native",
        help="build native strategy plugins (.cpp) against the native engine's API: the given files or folders, "
        "default every one the registry finds (strategies/, TICKPAR_PLUGINS)",
    )
    p_bn.add_argument("paths", nargs="*", help="plugin .cpp files or folders holding them")
    p_bn.add_argument("--force", action="store_true", help="rebuild even where a current build exists")
    return parser


def _check_timeout(args: argparse.Namespace) -> None:
    if args.timeout is not None and args.timeout <= 0:
        raise CLIError(f"--timeout {args.timeout} is not allowed: a number of seconds > 0")


def _traits(info: dict[str, Any]) -> None:
    """Add each workload's traits at its default params, with what each one means, to ``info``."""
    from tickpar.kernel.params import resolve
    from tickpar.plugins import TRAITS, RunSpec

    registry = get_registry()
    for name, entry in info["workloads"].items():
        cls = registry.workload(name)
        spec = RunSpec(name, resolve(cls.params, {}, f"workload {name} parameter"), seed=1)
        entry["traits"] = {trait: TRAITS[trait] for trait in sorted(spec.traits())}


def cmd_list(args: argparse.Namespace) -> int:
    info = get_registry().describe()
    _traits(info)
    info["kernel"] = kernel_build()
    if args.json:
        print(json.dumps(info, indent=2))
        return EXIT_OK
    print(f"kernel: {info['kernel']} (the event queue's build: TICKPAR_COMPILED=1 pip install . compiles it)")
    print()
    for kind, key in (("strategies", "options"), ("workloads", "params")):
        print(f"{kind}:")
        for name, entry in info[kind].items():
            print(f"  {name}: {entry['summary']}")
            if "engines" in entry:
                print(f"      engines: {', '.join(entry['engines'])}")
            for pname, spec in entry[key].items():
                extra = ""
                if "choices" in spec:
                    extra = " {" + ", ".join(map(str, spec["choices"])) + "}"
                elif "min" in spec or "max" in spec:
                    extra = f" [{spec.get('min', '-inf')}, {spec.get('max', 'inf')}]"
                print(f"      {pname}={spec['default']!s:<10} {spec['type']}{extra}  {spec['help']}")
            if "traits" in entry:
                print(f"      traits at these defaults: {', '.join(entry['traits']) or 'none'}")
            for stat, meaning in (entry.get("statistics") or {}).items():
                print(f"      statistic {stat}: {meaning}")
        print()
    if info["broken"]:
        print("broken plugins (skipped):")
        for source, why in info["broken"].items():
            print(f"  {source}: {why}")
        print()
    return EXIT_OK


def _summary_line(record: dict[str, Any]) -> str:
    where = f"{record['events']} events, final tick {record['final_tick']}"
    if record.get("failure"):
        where = f"stopped after {record['events']} events at tick {record['final_tick']}"
    return (
        f"{record['strategy']} on {record['workload']} (workers={record['workers']}, seed={record['seed']}, "
        f"order={record['order']}, work={record['work']}): {where}, {record['wall_s']:.3f} s, "
        f"{record['events_per_s']:,.0f} events/s, digest {record['digest'] or '-'}"
    )


def _print_event_cost(record: dict[str, Any]) -> None:
    """The event cost a replayed gem5 run spent, and where it came from (``workload_info``)."""
    cost = (record.get("workload_info") or {}).get("event_cost")
    if cost:
        print(f"event cost: {cost['description']}")


def cmd_run(args: argparse.Namespace) -> int:
    from tickpar.runner import execute, execute_isolated, make_record, write_json_atomic

    _check_timeout(args)
    cell = _cell_from_args(args, trace=args.trace)
    if args.emit_gem5_trace:
        _emit(cell, args.emit_gem5_trace, args.trace_format)
    outcome = execute_isolated(cell, args.timeout) if args.timeout else execute(cell)
    record = make_record(cell, outcome)
    if args.trace and outcome.record.traces is not None:
        record["oracle"]["traces"] = outcome.record.traces
    if args.out:
        write_json_atomic(args.out, record)
    print(_summary_line(record))
    _print_event_cost(record)
    if outcome.record.failure is not None:
        print(f"failed: {outcome.record.failure['kind']}: {outcome.record.failure['message']}")
        return EXIT_VERDICT
    return EXIT_OK


def _emit(cell: Any, path: str, fmt: str) -> None:
    """Write ``cell``'s sequential run as a gem5 trace (``tickpar run --emit-gem5-trace``)."""
    from tickpar.gem5.emit import emit_trace

    if cell.engine != "python":
        raise CLIError("--emit-gem5-trace records the Python engine's run: drop --engine native")
    parent = Path(path).parent
    if not parent.is_dir():
        raise CLIError(f"--emit-gem5-trace {path}: no such directory {parent}")
    lines, mapping = emit_trace(cell.spec, path, fmt)
    extra = f"; components mapping {mapping} (pass it as components=)" if mapping else ""
    print(f"gem5 trace ({fmt}): {lines:,} lines -> {path}{extra}")


def cmd_trace_profile(args: argparse.Namespace) -> int:
    from tickpar.gem5 import FORMATS, TraceError, import_trace
    from tickpar.gem5.profile import summary_lines, trace_profile
    from tickpar.gem5.stats import run_event_cost
    from tickpar.runner import write_json_atomic

    if args.format not in FORMATS:
        raise CLIError(f"--format {args.format!r} is not allowed: one of {', '.join(FORMATS)}")
    if args.events < 0:
        raise CLIError(f"--events {args.events} is not allowed: an int >= 0 (0: all)")
    if args.cost_weights and not args.gem5_stats:
        raise CLIError(f"--cost-weights {args.cost_weights} needs --gem5-stats: the weights split that run's cost")
    try:
        trace = import_trace(args.trace, args.format, args.components, args.events)
        cost = None
        if args.gem5_stats:
            cost = run_event_cost(
                args.gem5_stats, trace, args.cost_weights, fmt=args.format, components=args.components,
                events=args.events,
            )
        profile = trace_profile(trace, cost=cost)
    except (TraceError, ValueError, OSError) as exc:
        raise CLIError(str(exc)) from None
    for line in summary_lines(profile):
        print(line)
    if args.json:
        write_json_atomic(args.json, profile)
        print(f"profile -> {args.json}")
    return EXIT_OK


#: trace-fit's search budget (tickpar.gem5.fit.search's defaults, checked equal by tests/test_trace_fit.py): written
#: here so that building the parser, which every command does, never imports the fit (numpy, yaml) into a cell.
FIT_MAX_CANDIDATES, FIT_MAX_EVENTS = 200, 20_000


def _add_trace_fit_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", metavar="TRACE", help="a gem5 event trace (stock Event trace or insert log; .gz too)")
    p.add_argument("--workload", default="multicore", help="the synthetic workload to fit (default multicore)")
    p.add_argument("--format", default="auto", help="the trace's format: auto (default), event or insert-log")
    p.add_argument("--components", metavar="FILE", help="the trace's mapping file, 'REGEX -> COMPONENT' per line")
    p.add_argument("--events", type=int, default=0, help="fit the whole ticks before the trace's (N+1)-th event")
    p.add_argument("-p", "--param", action="append", metavar="KEY=VALUE", help="pin a parameter (not searched)")
    p.add_argument("--seed", type=int, default=1, help="the seed every candidate runs with (default 1)")
    p.add_argument(
        "--max-candidates",
        type=int,
        default=FIT_MAX_CANDIDATES,
        help=f"candidate runs at most (default {FIT_MAX_CANDIDATES})",
    )
    p.add_argument(
        "--max-events",
        type=int,
        default=FIT_MAX_EVENTS,
        help=f"events of a candidate run, about (default {FIT_MAX_EVENTS:,}; at most the trace's)",
    )
    p.add_argument("--jobs", type=int, default=None, help="candidates run at once (default: the CPUs, at most 2)")
    p.add_argument("--name", help="the fitted shape's name (default fit-<trace file stem>)")
    p.add_argument("--json", metavar="OUT", help="write the whole result as JSON to OUT (atomically)")


def cmd_trace_fit(args: argparse.Namespace) -> int:
    import os

    from tickpar.gem5 import FORMATS, TraceError
    from tickpar.gem5.fit import FitError, fit_trace, summary_lines
    from tickpar.runner import write_json_atomic

    if args.format not in FORMATS:
        raise CLIError(f"--format {args.format!r} is not allowed: one of {', '.join(FORMATS)}")
    if args.events < 0:
        raise CLIError(f"--events {args.events} is not allowed: an int >= 0 (0: all)")
    if args.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}", args.name):
        raise CLIError(f"--name {args.name!r} is not allowed: a shape name (letters, digits, _.+-, at most 64)")
    jobs = args.jobs if args.jobs is not None else max(1, min(2, os.cpu_count() or 1))
    fixed = parse_assignments(args.param, "-p")
    try:
        result = fit_trace(
            args.trace,
            args.format,
            args.components,
            args.events,
            workload=args.workload,
            fixed=fixed,
            seed=args.seed,
            max_candidates=args.max_candidates,
            max_events=args.max_events,
            jobs=jobs,
            name=args.name,
        )
    except (TraceError, FitError, ValueError, OSError) as exc:
        raise CLIError(str(exc)) from None
    for line in summary_lines(result):
        print(line)
    if args.json:
        write_json_atomic(args.json, result)
        print(f"result -> {args.json}")
    return EXIT_OK


def _load_golden(path: str, spec: Any) -> OracleRecord:
    """The oracle record of a ``tickpar golden`` file; one of another cell is bad input."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise CLIError(f"--golden {path}: cannot read a JSON record ({exc})") from None
    oracle = data.get("oracle") if isinstance(data, dict) else None
    if not isinstance(oracle, dict) or "components" not in oracle:
        raise CLIError(f"--golden {path}: not a tickpar record (no 'oracle' section)")
    for key, want in (("workload", spec.workload), ("seed", spec.seed), ("order", spec.order), ("params", spec.params)):
        got = data.get(key, want)
        if json.dumps(got, sort_keys=True) != json.dumps(want, sort_keys=True, default=str):
            raise CLIError(f"--golden {path}: the golden record of another cell ({key} {got}, this cell's {want})")
    return OracleRecord.from_dict(oracle)


def cmd_golden(args: argparse.Namespace) -> int:
    from tickpar.runner import execute, golden_cell, make_record, write_json_atomic

    cell = golden_cell(_cell_from_args(args, trace=True))
    outcome = execute(cell)
    record = make_record(cell, outcome)
    record["oracle"] = outcome.record.to_dict(with_traces=True)
    if args.out:
        write_json_atomic(args.out, record)
    print(_summary_line(record))
    return EXIT_OK if outcome.record.failure is None else EXIT_VERDICT


def cmd_check(args: argparse.Namespace) -> int:
    from tickpar.runner import cell_promise, check_cell, explain, make_record, write_json_atomic
    from tickpar.verify.anatomy import format_steps

    _check_timeout(args)
    cell = _cell_from_args(args)
    golden = _load_golden(args.golden, cell.spec) if args.golden else None
    promise = cell_promise(cell)
    verdict, outcome = check_cell(cell, golden, args.timeout)
    # A replay costs about a run: not when the run itself used a third of its time limit or more.
    replay = args.timeout is None or outcome.wall_s < args.timeout / 3
    outcome.record.anatomy = explain(cell, verdict, outcome.record, replay)
    record = make_record(cell, outcome, verdict)
    record["anatomy"] = outcome.record.anatomy
    kept = promise.kept(verdict.kind)
    record["promise"] = {**promise.to_dict(), "kept": kept}
    if args.out:
        write_json_atomic(args.out, record)
    print(_summary_line(record))
    _print_event_cost(record)
    print(f"verdict: {verdict.kind}: {verdict.reason}")
    print(promise_line(promise, kept))
    if args.explain and record["anatomy"]:
        print("anatomy:")
        print(format_steps(record["anatomy"]))
    if verdict.errors is not None:
        print(_errors_line(verdict.errors))
    if kept is False:
        return EXIT_BROKEN_PROMISE
    return EXIT_OK if verdict.kind == "exact" else EXIT_VERDICT


def promise_line(promise: Any, kept: bool | None) -> str:
    """``promise: <what> (<traits>): kept`` (or ``BROKEN``), then why; ``promise: none`` without one."""
    if promise.verdict is None:
        return f"promise: none ({promise.because})"
    basis = ", ".join(promise.traits) or "contract"
    return f"promise: {promise.verdict} ({basis}): {'kept' if kept else 'BROKEN'}\n  because: {promise.because}"


def cmd_shrink(args: argparse.Namespace) -> int:
    from tickpar.pipeline.shrink import command, shrink
    from tickpar.runner import explain, make_record, write_json_atomic
    from tickpar.verify.anatomy import format_steps

    if args.timeout is not None:
        raise CLIError("--timeout is not used by shrink: every candidate runs in this process (--budget bounds it)")
    if not args.budget > 0:
        raise CLIError(f"--budget {args.budget} is not allowed: a number of seconds > 0")
    cell = _cell_from_args(args)
    print(f"shrinking: {command(cell)}")
    try:
        result = shrink(cell, args.budget, log=lambda line: print(f"  kept {line}", flush=True))
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    (c0, e0), (c1, e1) = result.size_before, result.size
    how = "a local minimum" if result.exhausted else "budget spent"
    print(
        f"shrunk in {result.elapsed_s:.1f} s, {result.tries} cells tried ({how}):"
        f" {c0} -> {c1} components, {e0} -> {e1} events (sequential run)"
    )
    print(command(result.cell))
    print(f"verdict: {result.verdict.kind}: {result.verdict.reason}")
    anatomy = explain(result.cell, result.verdict, result.outcome.record)
    if anatomy:
        print("anatomy:")
        print(format_steps(anatomy))
    if args.out:
        result.outcome.record.anatomy = anatomy
        record = make_record(result.cell, result.outcome, result.verdict)
        record["anatomy"] = anatomy
        record["shrink"] = result.to_dict()
        write_json_atomic(args.out, record)
    return EXIT_OK


def _errors_line(errors: dict[str, float | None]) -> str:
    """``errors vs golden: final_tick +0.00%, events -1.25%, ...`` (relative, signed)."""
    parts = [f"{name} {'-' if err is None else f'{err:+.2%}'}" for name, err in errors.items()]
    return "errors vs golden: " + ", ".join(parts)


def _add_bounds_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_options(p)
    p.add_argument("--workers-max", type=int, default=64, help="largest worker count (default 64; 1, 2, 4, ...)")
    p.add_argument(
        "--overheads", default="calibrated", help="calibrated (this machine), cxx (native engine's calibration) or zero"
    )
    p.add_argument("--calibration", help="cxx: the `tickpar calibrate` file (default $TICKPAR_CALIBRATION, "
                   "else results/calibration.json)")
    p.add_argument("--o-event", type=float, default=None, metavar="S", help="override the per-event overhead (s)")
    p.add_argument("--o-sync", type=float, default=None, metavar="S", help="override the per-barrier overhead (s)")
    p.add_argument("--out", help="write the tidy table to FILE.csv")
    p.add_argument("--dag-out", help="write the recorded event DAG to FILE.json")


def cmd_bounds(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from tickpar.perf.predict import bounds
    from tickpar.runner import resolve_cell

    if args.overheads not in bounds.OVERHEAD_PRESETS:
        raise CLIError(f"--overheads {args.overheads!r} is not allowed: one of {', '.join(bounds.OVERHEAD_PRESETS)}")
    if args.workers_max < 1:
        raise CLIError(f"--workers-max {args.workers_max} is not allowed: an int >= 1")
    for flag, value in (("--o-event", args.o_event), ("--o-sync", args.o_sync)):
        if value is not None and not value >= 0:
            raise CLIError(f"{flag} {value} is not allowed: seconds >= 0")
    spec = resolve_cell(
        args.workload, parse_assignments(args.param, "--param"), BASELINE, {}, 1, args.seed, args.order, args.work
    ).spec
    workers = bounds.default_workers(args.workers_max)
    try:
        dag = bounds.record_dag(spec)
    except ValueError as exc:  # a run the DAG cannot describe: say what, in one line
        raise CLIError(f"workload {args.workload}: cannot record its event DAG: {exc}") from None
    if len(dag) == 0:
        raise CLIError(f"workload {args.workload} processed no events: nothing to bound")
    calibration = None
    try:
        if args.overheads == "cxx":
            costs = bounds.cxx_overheads(args.calibration)
            calibration = bounds.cxx_calibration(args.calibration)  # its figures, printed beside their floors
        else:
            costs = bounds.overheads(args.overheads, workers)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.o_event is not None:
        costs = replace(costs, name=f"{costs.name}+given", o_event=args.o_event)
    if args.o_sync is not None:
        costs = replace(costs, name=f"{costs.name}+given", o_sync=args.o_sync)
    table = bounds.bounds(dag, workers, costs)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out, index=False)
    if args.dag_out:
        dag.save(args.dag_out)
    print(bounds.summary_text(dag, table, costs, calibration))
    return EXIT_OK


def _add_time_arguments(p: argparse.ArgumentParser) -> None:
    from tickpar.perf.timing import add_cli_options

    add_cli_options(p)


def cmd_time(args: argparse.Namespace) -> int:
    from tickpar.perf.timing import run_cli

    _check_timeout(args)
    try:
        return run_cli(args, _cell_from_args(args))
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def cmd_build_native(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tickpar import native
    from tickpar.native.plugins import build, is_native_plugin
    from tickpar.plugins.native_declaration import read_declaration

    native.require()
    sources: list[Path] = []
    for item in args.paths:
        path = Path(item)
        if path.is_dir():
            sources.extend(sorted(p for p in path.glob("*.cpp") if not p.name.startswith("_")))
        elif path.is_file() and path.suffix == ".cpp":
            sources.append(path)
        else:
            raise CLIError(f"build-native: {item} is not allowed: a .cpp file or a folder holding some")
    if not args.paths:
        sources = [Path(cls.native_source) for cls in get_registry().strategies.values() if is_native_plugin(cls)]
    if not sources:
        print("tickpar: no native strategy plugin to build (strategies/*.cpp, TICKPAR_PLUGINS, or give paths)")
        return EXIT_OK
    for source in sources:
        declaration, _raw = read_declaration(source)  # a bad declaration: one line, before compiling
        library = build(source, force=args.force, quiet=True)
        print(f"{declaration['name']}: {source} -> {library}")
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    from tickpar import native
    from tickpar.runner import write_json_atomic

    if not args.budget > 0:
        raise CLIError(f"--budget {args.budget} is not allowed: seconds > 0")
    native.require()
    data = native.calibrate(args.budget)
    if args.out:
        write_json_atomic(args.out, data)
    keys = ("mutex_ns", "barrier_ns", "message_ns", "pingpong_ns", "event_ns", "heap_ns")
    print(", ".join(f"{k} {data[k]:.4g}" for k in keys) + (f" -> {args.out}" if args.out else ""))
    if not args.out:
        print(json.dumps(data, indent=1))
    return EXIT_OK


_DISPATCH: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": cmd_list,
    "run": cmd_run,
    "check": cmd_check,
    "shrink": cmd_shrink,
    "golden": cmd_golden,
    "time": cmd_time,
    "bounds": cmd_bounds,
    "calibrate": cmd_calibrate,
    "build-native": cmd_build_native,
    "trace-profile": cmd_trace_profile,
    "trace-fit": cmd_trace_fit,
}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.command != "list":  # list shows them itself
            for why in get_registry().broken.values():
                print(f"tickpar: warning: skipped a broken plugin: {why}", file=sys.stderr)
        return _DISPATCH[args.command](args)
    except (CLIError, ParamError, PluginError) as exc:
        print(f"tickpar: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("tickpar: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
