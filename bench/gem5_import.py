"""Import and profile a large gem5 trace: wall time and peak memory (issue #37's scale goal).

The trace is a ``multicore`` run that tickpar emits itself (``--emit-gem5-trace``), sized to about
``--events`` events (default 1,000,000), written once into ``--cache`` (default .cache/bench-gem5/) and
reused.  Each repeat runs, in a fresh process, what ``tickpar trace-profile`` runs: the streamed
import (:func:`tickpar.gem5.import_trace`) and the profile (:func:`tickpar.gem5.profile.trace_profile`),
and reports their wall times and the process's peak RSS.  Goal: <= 10 s and <= 1 GiB on a 2-core
machine (the figures go to bench/README.md).

    python bench/gem5_import.py [--events 1000000] [--format event|insert-log] [--repeats 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVENTS_PER_REQUEST = 5.16  # multicore's default shape: 20,647 events for 4 x 1,000 requests
CHILD = """
import json, resource, sys, time
from tickpar.gem5 import import_trace
from tickpar.gem5.profile import trace_profile
path, fmt, mapping = sys.argv[1], sys.argv[2], sys.argv[3] or None
t0 = time.perf_counter()
trace = import_trace(path, fmt, mapping)
t1 = time.perf_counter()
profile = trace_profile(trace)
t2 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"import_s": t1 - t0, "profile_s": t2 - t1, "total_s": t2 - t0, "peak_rss_bytes": rss,
                  "events": profile["events"], "lines": profile["lines"]["read"]}))
"""


def make_trace(events: int, fmt: str, cache: Path) -> tuple[Path, Path | None]:
    """The cached emitted trace of about ``events`` events (and its components mapping)."""
    from tickpar.gem5.emit import emit_trace
    from tickpar.runner import resolve_cell

    cores = 16
    per_core = max(1, round(events / EVENTS_PER_REQUEST / cores))
    path = cache / f"multicore-{cores}x{per_core}.{fmt}.txt.gz"
    mapping = path.with_name(path.name + ".components")
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        cell = resolve_cell("multicore", {"cores": cores, "requests_per_core": per_core}, "sequential", {}, 1, 1)
        lines, _ = emit_trace(cell.spec, path, fmt)
        print(f"emitted {lines:,} lines to {path} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path, mapping if mapping.exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--format", choices=("event", "insert-log"), default="event")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench-gem5")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    path, mapping = make_trace(args.events, args.format, args.cache)
    runs = []
    for i in range(args.repeats):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), args.format, str(mapping or "")],
            check=True, capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        run = json.loads(out.stdout)
        runs.append(run)
        print(
            f"run {i + 1}: {run['events']:,} events ({run['lines']:,} lines): import {run['import_s']:.2f} s, "
            f"profile {run['profile_s']:.2f} s, total {run['total_s']:.2f} s, peak RSS "
            f"{run['peak_rss_bytes'] / 2**20:,.0f} MiB"
        )
    summary = {
        "trace": str(path),
        "format": args.format,
        "events": runs[0]["events"],
        "total_s_median": statistics.median(r["total_s"] for r in runs),
        "import_s_median": statistics.median(r["import_s"] for r in runs),
        "profile_s_median": statistics.median(r["profile_s"] for r in runs),
        "peak_rss_mib_max": max(r["peak_rss_bytes"] for r in runs) / 2**20,
        "runs": runs,
    }
    print(
        f"median total {summary['total_s_median']:.2f} s (import {summary['import_s_median']:.2f} s, profile "
        f"{summary['profile_s_median']:.2f} s), peak RSS {summary['peak_rss_mib_max']:,.0f} MiB "
        f"(goal: <= 10 s, <= 1024 MiB)"
    )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
