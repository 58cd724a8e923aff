"""Engine benchmark: events/s of tickpar's ``sequential`` strategy on PHOLD against SimPy and a bare heapq loop.

Run (see bench/README.md)::

    .venv/bin/python bench/engine.py --fast -o /tmp/engine.json

Every implementation runs the same PHOLD model (``bench/phold_baselines.py``
says what "same" means and why all of them process exactly the same events).
Each pyperf loop builds one simulation untimed and times only its event loop;
the loop times are divided by the simulation's event count (pyperf's
``inner_loops``), so every value is *seconds per event* and events/s is
``1 / mean``.  The parent process runs each implementation once first, checks
that the per-LP event counts agree, and hands the counts to the workers,
which check every timed simulation against them.

Every process first runs each implementation on a tiny model
:data:`QUICKEN_RUNS` times (untimed): CPython 3.11 specialises a function's
bytecode only after it has been *called* about 8 times, however long its
loops run, and a simulation calls its event loop once, so without this the
timed runs would measure tickpar's loop as generic bytecode (about 12% more
instructions per event) while SimPy's per-event ``step()`` is specialised
after 8 events.  ``--cold`` skips it.

At the end the parent prints events/s of each implementation and the two
ratios the project aims at (reported, never asserted):

* ``tickpar / SimPy``  (goal >= 1.5, against the faster SimPy form that ran);
* ``tickpar / heapq``  (goal >= 0.5).

``--show FILE`` prints the same summary for a JSON file written with ``-o``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pyperf

sys.path.insert(0, str(Path(__file__).resolve().parent))

from phold_baselines import DEFAULT_SEED, IMPLEMENTATIONS, Outcome, PholdParams, check_counts

TICKPAR = "tickpar_sequential"
SIMPY = ("simpy_callbacks", "simpy_process")
HEAPQ = "heapq_bare"
COMPILED = "tickpar_compiled"
#: The compiled kernel joins the defaults where one was built (phold_baselines.compiled_tree).
DEFAULT_IMPLS = (TICKPAR, *((COMPILED,) if COMPILED in IMPLEMENTATIONS else ()), "simpy_callbacks", HEAPQ)
GOAL_VS_SIMPY = 1.5
GOAL_VS_HEAPQ = 0.5

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
    group.add_argument("--show", metavar="FILE", help="print the summary of a JSON file written with -o, and exit")
    group.add_argument(
        "--interleave",
        type=int,
        metavar="ROUNDS",
        default=0,
        help="instead of pyperf's one-implementation-after-another: ROUNDS rounds, each running every "
        "implementation once (order rotated per round), in this process; medians, 95%% intervals and "
        "per-round ratios (a load that comes and goes hits every implementation alike)",
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
    """The implementations named by ``--impl``, in :data:`IMPLEMENTATIONS` order."""
    if spec.strip() == "all":
        return list(IMPLEMENTATIONS)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in IMPLEMENTATIONS]
    if unknown or not names:
        raise SystemExit(f"--impl {spec!r}: unknown {unknown}; choose from {', '.join(IMPLEMENTATIONS)} or 'all'")
    return [n for n in IMPLEMENTATIONS if n in names]


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
    """Call every implementation :data:`QUICKEN_RUNS` times on a tiny model, so CPython 3.11 specialises it."""
    for name in impls:
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


def summary_lines(benchmarks: dict[str, pyperf.Benchmark]) -> list[str]:
    """The summary table: seconds per event, events/s, and the two goal ratios."""
    rates: dict[str, float] = {}
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
        events = bench.get_metadata().get("phold_events", 0)
        lines.append(f"{name:<20} {events:>10} {mean * 1e6:>9.3f} +- {sd * 1e6:<5.3f} {rates[name]:>12,.0f}")
    for mine in (TICKPAR, COMPILED):
        if mine not in rates:
            continue
        label = "tickpar" if mine == TICKPAR else "tickpar compiled"
        simpy = [n for n in SIMPY if n in rates]
        if simpy:
            best = max(simpy, key=rates.__getitem__)
            ratio = rates[mine] / rates[best]
            verdict = "met" if ratio >= GOAL_VS_SIMPY else "not met"
            lines.append(f"ratio {label}/SimPy ({best}): {ratio:.3f}  (goal >= {GOAL_VS_SIMPY}: {verdict})")
        if HEAPQ in rates:
            ratio = rates[mine] / rates[HEAPQ]
            verdict = "met" if ratio >= GOAL_VS_HEAPQ else "not met"
            lines.append(f"ratio {label}/heapq ({HEAPQ}): {ratio:.3f}  (goal >= {GOAL_VS_HEAPQ}: {verdict})")
    return lines


def show(path: str) -> None:
    suite = pyperf.BenchmarkSuite.load(path)
    print("\n".join(summary_lines({b.get_name(): b for b in suite.get_benchmarks()})))


def _median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """The median and a distribution-free ~95% interval for it (order statistics of the binomial)."""
    xs = sorted(values)
    n = len(xs)
    half = 0.98 * n**0.5  # 1.96 * sqrt(n) / 2
    lo = max(0, int(n / 2 - half))
    hi = min(n - 1, int(n / 2 + half))
    mid = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    return mid, xs[lo], xs[hi]


def interleaved(impls: Sequence[str], params: PholdParams, seed: int, rounds: int) -> list[str]:
    """Run ``rounds`` rounds of every implementation (rotated order); the summary lines."""
    rates: dict[str, list[float]] = {name: [] for name in impls}
    events: dict[str, int] = {}
    for r in range(rounds):
        order = list(impls[r % len(impls) :]) + list(impls[: r % len(impls)])
        for name in order:
            out = IMPLEMENTATIONS[name](params, seed)
            if events.setdefault(name, out.events) != out.events:
                raise RuntimeError(f"{name}: {out.events} events, earlier {events[name]}")
            rates[name].append(out.events / out.loop_s)
    lines = [f"PHOLD {params.describe()} seed={seed}: {rounds} interleaved rounds, events/s median [95% interval]"]
    for name in impls:
        mid, lo, hi = _median_interval(rates[name])
        lines.append(f"{name:<20} {mid:>12,.0f} [{lo:,.0f} .. {hi:,.0f}]")
    pairs = [(a, b) for a in (TICKPAR, COMPILED) for b in (*SIMPY, HEAPQ) if a in rates and b in rates]
    if TICKPAR in rates and COMPILED in rates:
        pairs.append((COMPILED, TICKPAR))
    for a, b in pairs:
        mid, lo, hi = _median_interval([x / y for x, y in zip(rates[a], rates[b], strict=True)])
        lines.append(f"ratio {a}/{b}: {mid:.3f} [{lo:.3f} .. {hi:.3f}] (per-round ratios)")
    return lines


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=forward_options)
    runner.metadata["description"] = "PHOLD events/s: tickpar sequential vs SimPy vs bare heapq (values: s/event)"
    add_options(runner.argparser)
    args = runner.parse_args()
    if args.show:
        show(args.show)
        return
    params = params_from(args)
    impls = selected_impls(args.impl)
    if not args.cold:
        quicken(impls, args.seed)
    if args.interleave:
        reference_runs(params, args.seed, impls)  # the same events everywhere, checked once
        print("\n".join(interleaved(impls, params, args.seed, args.interleave)))
        return

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
