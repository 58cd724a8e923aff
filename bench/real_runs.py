"""Real multi-core gem5 runs at their own event cost: each run's profile, bounds and measured 2-worker speedups.

For every stock trace given (default: the repository's examples, ``examples/gem5-traces``; ``--traces DIR``
for another folder, e.g. ``../shared/gem5-traces``), with the run's own host cost per event from its
untraced gem5 stats (``STEM.untraced.stats.txt[.gz]`` beside ``STEM.events.txt.gz``):

1. the profile (``tickpar trace-profile --gem5-stats``): events, components, available parallelism, and
   the tick-barrier and conservative bounds at 2, 16 and 64 workers, each event at its cost;
2. native loop speedups at 2 workers against native sequential in the same order mode: tick-barrier (gem5
   order), conservative with windows (canonical; static, and ``schedule=adaptive`` where the engine has
   it), each the median of ``--repeats`` calls of ``--replays`` replays, sequential and parallel
   interleaved.  A run whose digests differ from sequential's, or that fails, is printed with what went
   wrong instead of a speedup: a figure is only ever the figure of an exact run.

Usage::

    python bench/real_runs.py [--traces DIR] [--repeats 5] [--replays 5] [--only STEM ...]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from tickpar.gem5 import import_trace
from tickpar.gem5.profile import trace_profile
from tickpar.gem5.stats import event_cost
from tickpar.native.engine import engine_args, recorded
from tickpar.runner import resolve_cell

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = [  # (label, strategy, options, order)
    ("tick-barrier", "tick-barrier", {"lock_key": "component"}, "gem5"),
    ("conservative window", "conservative", {"sync": "window"}, "canonical"),
    ("conservative window-adaptive", "conservative", {"sync": "window", "schedule": "adaptive"}, "canonical"),
]


def stats_of(trace: Path) -> Path | None:
    """The untraced stats beside ``STEM.events.txt.gz`` (plain or .gz), or ``None``."""
    stem = trace.name.split(".")[0]
    for name in (f"{stem}.untraced.stats.txt", f"{stem}.untraced.stats.txt.gz"):
        if (trace.parent / name).is_file():
            return trace.parent / name
    return None


def timed(tn: Any, dag: Any, spec: Any, strategy: str, options: dict[str, Any], workers: int, replays: int) -> Any:
    return tn.run(dag, strategy, workers, replays=replays, **engine_args(spec, strategy, workers, options))


def measure(trace: Path, stats: Path, label: str, strategy: str, options: dict[str, Any], order: str,
            repeats: int, replays: int) -> str:  # fmt: skip
    """One variant's 2-worker loop speedup over sequential, or why there is none."""
    import tickpar_native as tn

    params = {"trace": str(trace), "gem5_stats": str(stats)}
    try:
        cell = resolve_cell("gem5trace", params, strategy, options, 2, 1, order, engine="native")
    except Exception as exc:  # an option this engine does not have (schedule=adaptive before #48)
        return f"{label}: not run ({str(exc).splitlines()[0]})"
    seq = resolve_cell("gem5trace", params, "sequential", {}, 1, 1, order, engine="native")
    _rec, dag = recorded(cell.spec)
    ts, tp = [], []
    for _ in range(repeats):
        s = timed(tn, dag, seq.spec, "sequential", {}, 1, replays)
        p = timed(tn, dag, cell.spec, strategy, cell.options, 2, replays)
        if p.failure is not None:
            return f"{label} ({order}): {p.failure['kind']}: no speedup"
        if p.races:
            return f"{label} ({order}): race ({len(p.races)} races): no speedup"
        if list(p.digests) != list(s.digests):
            return f"{label} ({order}): diverged (digests differ from sequential's): no speedup"
        ts.append(s.stats["loop_s"])
        tp.append(p.stats["loop_s"])
    speedup = statistics.median(ts) / statistics.median(tp)
    return (f"{label} ({order}): sequential {statistics.median(ts) * 1e3:.2f} ms, 2 workers "
            f"{statistics.median(tp) * 1e3:.2f} ms, loop speedup {speedup:.2f}x (median of {repeats})")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", default=str(ROOT / "examples" / "gem5-traces"), help="a folder of STEM.events.txt.gz")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--replays", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=[], help="these stems only")
    a = ap.parse_args()
    if a.repeats < 1 or a.replays < 1:
        raise SystemExit(f"real_runs.py: --repeats {a.repeats} and --replays {a.replays} must be >= 1")
    folder = Path(a.traces)
    traces = sorted(folder.glob("*.events.txt.gz"))
    if a.only:
        traces = [t for t in traces if t.name.split(".")[0] in a.only]
    if not traces:
        raise SystemExit(f"real_runs.py: no STEM.events.txt.gz in {folder}")
    for trace in traces:
        stats = stats_of(trace)
        if stats is None:
            print(f"{trace.name}: no untraced stats beside it: skipped")
            continue
        imported = import_trace(trace)
        cost = event_cost(str(stats), imported)
        prof = trace_profile(imported, workers=(1, 2, 16, 64), cost=cost)
        b = prof["bounds"]
        print(f"{trace.name.split('.')[0]}: {prof['events']:,} events, {prof['components']} components, "
              f"{cost.mean_us:.2f} us/event ({cost.kind}), available parallelism {prof['available_parallelism']:.1f}")
        for strategy in ("tick-barrier", "conservative"):
            print(f"  bound {strategy}: " + ", ".join(f"P{p} {b[strategy][p]:.2f}" for p in ("2", "16", "64")))
        for label, strategy, options, order in VARIANTS:
            print("  " + measure(trace, stats, label, strategy, options, order, a.repeats, a.replays), flush=True)


if __name__ == "__main__":
    main()
