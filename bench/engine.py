"""Engine benchmark: PHOLD events/s of tickpar's ``sequential`` strategy against SimPy, desimpy, salabim, bare heapq.

Run (see bench/README.md)::

    .venv/bin/python bench/engine.py --fast -o /tmp/engine.json
    .venv/bin/python bench/engine.py --interleave 5 --impl all --json /tmp/interleaved.json

Every implementation runs the same PHOLD model (``bench/phold_baselines.py``
says what "same" means and why all of them process exactly the same events).
Each pyperf loop builds one simulation untimed and times only its event loop;
the loop times are divided by the simulation's event count (pyperf's
``inner_loops``), so every value is *seconds per event* and events/s is
``1 / mean``.  The parent process runs each implementation once first, checks
that the per-LP event counts agree, and hands the counts to the workers,
which check every timed simulation against them.  A peer whose library does
not import (or ``tickpar_compiled`` without a compiled kernel) is left out
with one line saying why (``phold_baselines.UNAVAILABLE``).

Every process first runs each implementation on a tiny model
:data:`QUICKEN_RUNS` times (untimed): CPython 3.11 specialises a function's
bytecode only after it has been *called* about 8 times, however long its
loops run, and a simulation calls its event loop once, so without this the
timed runs would measure tickpar's loop as generic bytecode (about 12% more
instructions per event) while SimPy's per-event ``step()`` is specialised
after 8 events.  ``--cold`` skips it.

At the end the parent prints events/s of each implementation and tickpar's
ratios to SimPy's callback loop and to the bare heapq loop, with the goals of
``bench/goals.py`` (``GOALS``) for the kernel build that ran (reported,
never asserted): the pure kernel >= 1.0x SimPy callbacks; the compiled one
>= 1.5x SimPy callbacks and >= 0.5x the bare heapq loop.

``--interleave ROUNDS`` runs every implementation once per round instead (order
rotated) and prints medians with distribution-free 95% intervals and per-round
ratios; ``--json FILE`` writes that result as a record (the report's
environment page reads it: ``tickpar/report/engine_bench.py`` documents the
fields).  There an implementation that crashes or disagrees on the event counts
is recorded as failed and the others go on.

``--show FILE`` prints the same summary for a JSON file written with ``-o`` or ``--json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyperf

sys.path.insert(0, str(Path(__file__).resolve().parent))

from goals import GOALS, goal_lines
from phold_baselines import (
    DEFAULT_SEED,
    IMPLEMENTATIONS,
    LIBRARIES,
    UNAVAILABLE,
    Outcome,
    PholdParams,
    check_counts,
    kernel_of,
    library_version,
)

from tickpar.host.atomic import write_json_atomic
from tickpar.report.engine_bench import FORMAT, KIND, REFERENCE, median_interval, notes

TICKPAR = "tickpar_sequential"
SIMPY = ("simpy_callbacks", "simpy_process")
HEAPQ = "heapq_bare"
COMPILED = "tickpar_compiled"
#: The defaults, where they can run: the compiled kernel joins them where one was built
#: (phold_baselines.compiled_tree), SimPy where it imports.
DEFAULT_CANDIDATES = (TICKPAR, COMPILED, "simpy_callbacks", HEAPQ)
DEFAULT_IMPLS = tuple(n for n in DEFAULT_CANDIDATES if n in IMPLEMENTATIONS)
#: What the interleaved record keeps per-round ratios against (where they ran).
RATIO_TO = (REFERENCE, HEAPQ, TICKPAR)

_PARAM_OPTIONS = ("lps", "population", "remote", "lookahead", "mean", "end_tick")

#: Untimed calls of each implementation on :data:`QUICKEN_PARAMS` before timing (see the module docstring).
QUICKEN_RUNS = 10
QUICKEN_PARAMS = PholdParams(lps=4, population=2, end_tick=200)


def add_options(parser: argparse.ArgumentParser) -> None:
    """The benchmark's own options (pyperf's are already on ``parser``)."""
    d = PholdParams()
    group = parser.add_argument_group("PHOLD model (workloads/phold.py, work=none, granularity=1)")
    group.add_argument("--lps", type=int, default=d.lps, help=f"logical processes (default {d.lps})")
    group.add_argument(
        "--population", type=int, default=d.population, help=f"initial events per LP (default {d.population})"
    )
    group.add_argument(
        "--remote", type=float, default=d.remote, help=f"fraction sent to another LP (default {d.remote})"
    )
    group.add_argument(
        "--lookahead", type=int, default=d.lookahead, help=f"minimum delay in ticks (default {d.lookahead})"
    )
    group.add_argument("--mean", type=float, default=d.mean, help=f"mean exponential delay (default {d.mean})")
    group.add_argument("--end-tick", type=int, default=d.end_tick, help=f"last tick run (default {d.end_tick})")
    group.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"run seed (default {DEFAULT_SEED})")
    group.add_argument(
        "--impl",
        default=",".join(DEFAULT_IMPLS),
        help=f"comma-separated implementations to run, or 'all' (default {','.join(DEFAULT_IMPLS)}; "
        f"known: {','.join(IMPLEMENTATIONS)})",
    )
    group.add_argument(
        "--cold",
        action="store_true",
        help=f"skip the {QUICKEN_RUNS} untimed tiny runs per implementation that let CPython specialise the code",
    )
    group.add_argument(
        "--show", metavar="FILE", help="print the summary of a JSON file written with -o or --json, and exit"
    )
    group.add_argument(
        "--interleave",
        type=int,
        metavar="ROUNDS",
        default=0,
        help="instead of pyperf's one-implementation-after-another: ROUNDS rounds, each running every "
        "implementation once (order rotated per round), in this process; medians, 95%% intervals and "
        "per-round ratios (a load that comes and goes hits every implementation alike)",
    )
    group.add_argument(
        "--json",
        metavar="FILE",
        default=None,
        help="with --interleave: write the result as a JSON record (medians, intervals, ratios, model, environment; "
        "an existing FILE is replaced)",
    )
    # Set by the parent for its workers: the event count of each implementation's simulation.
    group.add_argument("--expected-events", default=None, help=argparse.SUPPRESS)


def forward_options(cmd: list[str], args: argparse.Namespace) -> None:
    """pyperf's ``add_cmdline_args``: pass the benchmark's options on to every worker."""
    for name in _PARAM_OPTIONS:
        cmd.extend([f"--{name.replace('_', '-')}", str(getattr(args, name))])
    cmd.extend(["--seed", str(args.seed), "--impl", ",".join(selected_impls(args.impl))])
    if args.cold:
        cmd.append("--cold")
    if args.expected_events:
        cmd.extend(["--expected-events", args.expected_events])


def selected_impls(spec: str) -> list[str]:
    """The implementations named by ``--impl``, in :data:`IMPLEMENTATIONS` order; one-line exit otherwise."""
    if spec.strip() == "all":
        return list(IMPLEMENTATIONS)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in IMPLEMENTATIONS and n not in UNAVAILABLE]
    if unknown or not names:
        raise SystemExit(
            f"engine.py: --impl {spec!r}: unknown {', '.join(unknown) or '(none named)'}; choose from "
            f"{', '.join(IMPLEMENTATIONS)} or 'all'"
        )
    missing = [n for n in names if n in UNAVAILABLE]
    if missing:
        why = "; ".join(f"{n}: {UNAVAILABLE[n]}" for n in missing)
        raise SystemExit(
            f"engine.py: --impl {spec!r}: not available here ({why}); choose from {', '.join(IMPLEMENTATIONS)}"
        )
    return [n for n in IMPLEMENTATIONS if n in names]


def skipped_impls(spec: str) -> dict[str, str]:
    """The implementations ``--impl`` would take that cannot run here, with why (``all`` or the default)."""
    wanted = (
        list(LIBRARIES)
        if spec.strip() == "all"
        else list(DEFAULT_CANDIDATES)
        if spec == ",".join(DEFAULT_IMPLS)
        else []
    )
    return {n: UNAVAILABLE[n] for n in wanted if n in UNAVAILABLE}


def params_from(args: argparse.Namespace) -> PholdParams:
    try:
        return PholdParams(**{name: getattr(args, name) for name in _PARAM_OPTIONS})
    except ValueError as err:
        raise SystemExit(f"engine.py: {err}") from None


def reference_runs(params: PholdParams, seed: int, impls: Sequence[str]) -> dict[str, Outcome]:
    """One untimed-for-pyperf simulation of each implementation; raises if their events differ."""
    outcomes = {name: IMPLEMENTATIONS[name](params, seed) for name in impls}
    check_counts(outcomes)
    if not next(iter(outcomes.values())).events:
        raise SystemExit("engine.py: the simulation processed no events (raise --end-tick)")
    return outcomes


def quicken(impls: Sequence[str], seed: int) -> None:
    """Call every implementation :data:`QUICKEN_RUNS` times on a tiny model, so CPython 3.11 specialises it.

    Not ``tickpar_compiled``: each of its simulations is a fresh child process, which warms itself up
    (``phold_baselines.simulate_tickpar_compiled``), so warming it here would only start 10 more children.
    """
    for name in impls:
        if name == COMPILED:
            continue
        for _ in range(QUICKEN_RUNS):
            IMPLEMENTATIONS[name](QUICKEN_PARAMS, seed)


def encode_events(outcomes: dict[str, Outcome]) -> str:
    return ",".join(f"{name}={out.events}" for name, out in outcomes.items())


def decode_events(text: str) -> dict[str, int]:
    pairs = (item.split("=", 1) for item in text.split(",") if item)
    return {name: int(count) for name, count in pairs}


def time_func(simulate: Callable[[PholdParams, int], Outcome], params: PholdParams, seed: int, events: int):
    """pyperf ``bench_time_func`` body: ``loops`` whole simulations, returning their summed loop seconds."""

    def run(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            out = simulate(params, seed)
            if out.events != events:
                raise RuntimeError(f"simulation processed {out.events} events, the reference run {events}")
            total += out.loop_s
        return total

    return run


def _goal_text(kernel: str | None, peer: str, ratio: float) -> str:
    goal = next((g for g in GOALS if g.kernel == kernel and g.peer == peer), None)
    if goal is None:
        return ""
    return f"  (goal >= {goal.at_least:g} for the {kernel} kernel: {'met' if ratio >= goal.at_least else 'not met'})"


def summary_lines(benchmarks: dict[str, pyperf.Benchmark]) -> list[str]:
    """The summary table: seconds per event, events/s, and tickpar's ratios with their goals."""
    rates: dict[str, float] = {}
    kernels: dict[str, str | None] = {}
    lines = []
    first = next(iter(benchmarks.values()))
    meta = first.get_metadata()
    lines.append(
        f"PHOLD {meta.get('phold_params', '?')} seed={meta.get('phold_seed', '?')} "
        f"code warm-up: {meta.get('phold_code_warmup', '?')}"
    )
    lines.append(f"{'implementation':<20} {'events/sim':>10} {'us/event':>18} {'events/s':>12}")
    for name, bench in benchmarks.items():
        mean = bench.mean()
        sd = bench.stdev() if bench.get_nvalue() >= 2 else 0.0
        rates[name] = 1.0 / mean
        kernels[name] = bench.get_metadata().get("phold_kernel") or kernel_of(name)
        events = bench.get_metadata().get("phold_events", 0)
        lines.append(f"{name:<20} {events:>10} {mean * 1e6:>9.3f} +- {sd * 1e6:<5.3f} {rates[name]:>12,.0f}")
    for mine in (TICKPAR, COMPILED):
        if mine not in rates:
            continue
        label = "tickpar" if mine == TICKPAR else "tickpar compiled"
        simpy = next((n for n in SIMPY if n in rates), None)  # the callback form where it ran
        if simpy:
            ratio = rates[mine] / rates[simpy]
            lines.append(f"ratio {label}/SimPy ({simpy}): {ratio:.3f}{_goal_text(kernels[mine], simpy, ratio)}")
        if HEAPQ in rates:
            ratio = rates[mine] / rates[HEAPQ]
            lines.append(f"ratio {label}/heapq ({HEAPQ}): {ratio:.3f}{_goal_text(kernels[mine], HEAPQ, ratio)}")
    return lines


def show(path: str) -> None:
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SystemExit(f"engine.py: --show {path}: {err}") from None
    if isinstance(record, dict) and record.get("kind") == KIND:
        print("\n".join(interleaved_lines(record)))
        return
    suite = pyperf.BenchmarkSuite.load(path)
    print("\n".join(summary_lines({b.get_name(): b for b in suite.get_benchmarks()})))


def _interval(values: Sequence[float]) -> dict[str, float]:
    mid, lo, hi = median_interval(values)
    return {"median": mid, "lo": lo, "hi": hi}


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".strip().splitlines()[0][:500]


def interleaved(
    impls: Sequence[str], params: PholdParams, seed: int, rounds: int, *, cold: bool = False,
    skipped: dict[str, str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """``rounds`` rounds of every implementation (order rotated per round): the record (see the module docstring).

    Every implementation is warmed up (unless ``cold``) and run once untimed first; its per-LP counts
    must equal the first one's.  One that raises or disagrees is recorded in ``failed`` with why, and
    loses its values; the others go on.
    """
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    failed: dict[str, str] = {}
    reference: dict[str, Outcome] = {}
    for name in impls:
        try:
            if not cold:
                quicken([name], seed)
            reference[name] = IMPLEMENTATIONS[name](params, seed)
        except Exception as err:
            failed[name] = f"untimed first run: {_error(err)}"
    if reference:
        first = next(iter(reference))
        for name in [n for n in reference if n != first]:
            try:
                check_counts({first: reference[first], name: reference[name]})
            except AssertionError as err:
                failed[name] = f"event counts differ: {err}"
                del reference[name]
        if not reference[first].events:
            raise SystemExit("engine.py: the simulation processed no events (raise --end-tick)")
    running = [n for n in impls if n in reference]
    rates: dict[str, list[float]] = {name: [] for name in running}
    for r in range(rounds):
        if not running:
            break
        shift = r % len(running)
        for name in running[shift:] + running[:shift]:
            try:
                out = IMPLEMENTATIONS[name](params, seed)
                if out.received != reference[name].received:
                    raise RuntimeError(f"{out.events} events, its first run {reference[name].events}")
            except Exception as err:
                failed[name] = f"round {r + 1}: {_error(err)}"
                continue
            rates[name].append(out.events / max(out.loop_s, 1e-9))
        running = [n for n in running if n not in failed]
    implementations: dict[str, Any] = {}
    for name in running:
        ratios = {
            peer: _interval([x / y for x, y in zip(rates[name], rates[peer], strict=True)])
            for peer in RATIO_TO
            if peer in running
        }
        implementations[name] = {
            "events": reference[name].events,
            "kernel": kernel_of(name),
            "library": library_version(name),
            "events_per_s": _interval(rates[name]),
            "rates": rates[name],
            "ratios": ratios,
        }
    status = "ok" if not failed else "partial" if implementations else "failed"
    from tickpar.host.envinfo import environment, versions

    libs = {d: (library_version(n) or "").rpartition(" ")[2] or None for n, d in LIBRARIES.items() if d}
    return {
        "kind": KIND,
        "format": FORMAT,
        "status": status,
        "error": None
        if implementations
        else "no implementation ran: " + "; ".join(f"{k}: {v}" for k, v in failed.items()),
        "rounds": rounds,
        "reference": REFERENCE,
        "model": {
            **params.workload_params(),
            "seed": seed,
            "events": next(iter(reference.values())).events if reference else None,
        },
        "code_warmup": "no" if cold else f"{QUICKEN_RUNS} tiny runs",
        "implementations": implementations,
        "skipped": dict(skipped or {}),
        "failed": failed,
        "environment": {**environment(), "executable": sys.executable},
        "versions": {**versions(), **libs},
        "started": started_at,
        "wall_s": round(time.perf_counter() - started, 3),
    }


def interleaved_lines(record: dict[str, Any]) -> list[str]:
    """The printed summary of an interleaved record: events/s, ratios, the goals, what was skipped or failed."""
    model = record.get("model") or {}
    params = " ".join(f"{k}={v}" for k, v in model.items() if k != "events")
    lines = [
        f"PHOLD {params}: {model.get('events', '?')} events, {record.get('rounds')} interleaved rounds, "
        "median [95% interval]"
    ]
    impls = record.get("implementations") or {}
    peers = [p for p in RATIO_TO if p in impls]
    head = f"{'implementation':<20} {'kernel':<9} {'events/s median [95% interval]':>35}"
    head += "".join(f"  {'÷ ' + p:>27}" for p in peers)
    if impls:
        lines.append(head)
    for name, entry in impls.items():
        e = entry["events_per_s"]
        row = f"{name:<20} {entry.get('kernel') or '-':<9} {e['median']:>12,.0f} [{e['lo']:>8,.0f} .. {e['hi']:>8,.0f}]"
        for peer in peers:
            r = entry["ratios"].get(peer)
            row += f"  {r['median']:>8.3f} [{r['lo']:.3f} .. {r['hi']:.3f}]" if r else f"  {'-':>27}"
        lines.append(row)
    if record.get("status") != "failed":
        lines += goal_lines(record)
    lines += notes(record)
    return lines


def write_record(path: str, record: dict[str, Any]) -> None:
    """``record`` to ``path``, atomically (a reader never sees half a file)."""
    write_json_atomic(path, record)


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=forward_options)
    runner.metadata["description"] = "PHOLD events/s: tickpar sequential vs its peers (values: s/event)"
    add_options(runner.argparser)
    args = runner.parse_args()
    if args.show:
        show(args.show)
        return
    if args.json and not args.interleave:
        raise SystemExit("engine.py: --json needs --interleave ROUNDS (pyperf's own runs write JSON with -o)")
    if args.interleave < 0:
        raise SystemExit(f"engine.py: --interleave {args.interleave}: must be a positive number of rounds")
    params = params_from(args)
    impls = selected_impls(args.impl)
    skipped = skipped_impls(args.impl)
    if not args.worker:
        for name, why in skipped.items():
            print(f"engine.py: {name} skipped: {why}", file=sys.stderr, flush=True)
    if args.interleave:
        record = interleaved(impls, params, args.seed, args.interleave, cold=args.cold, skipped=skipped)
        if args.json:
            write_record(args.json, record)
        print("\n".join(interleaved_lines(record)))
        if record["status"] != "ok":
            sys.exit(1)
        return
    if not args.cold:
        quicken(impls, args.seed)

    if args.expected_events:
        events = decode_events(args.expected_events)
    else:
        # Parent (or a worker started by hand): one reference run of each, checked against the others.
        started = time.perf_counter()
        outcomes = reference_runs(params, args.seed, impls)
        events = {name: out.events for name, out in outcomes.items()}
        args.expected_events = encode_events(outcomes)
        if not args.worker and not args.quiet:
            print(
                f"reference runs: {next(iter(events.values()))} events each, per-LP counts identical "
                f"({time.perf_counter() - started:.1f} s)",
                flush=True,
            )

    results: dict[str, pyperf.Benchmark] = {}
    for name in impls:
        metadata = {
            "phold_params": params.describe(),
            "phold_seed": args.seed,
            "phold_events": events[name],
            "phold_code_warmup": "no" if args.cold else f"{QUICKEN_RUNS} tiny runs",
            **({"phold_kernel": kernel} if (kernel := kernel_of(name)) else {}),
        }
        bench = runner.bench_time_func(
            name,
            time_func(IMPLEMENTATIONS[name], params, args.seed, events[name]),
            inner_loops=events[name],
            metadata=metadata,
        )
        if bench is not None:
            results[name] = bench

    if not args.worker and results and not args.compare_to:
        print()
        print("\n".join(summary_lines(results)))


if __name__ == "__main__":
    main()
