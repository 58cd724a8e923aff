"""2-worker speedups of a sweep's shapes without Snakemake: a thin front end of the pipeline's own timing.

For every timed workload shape of a sweep config (default ``config/config.yaml``)
whose ``work_us`` is in ``--work-us``, the sequential baselines and the
2-worker cells are timed exactly as the pipeline's timing stage times a shape
(:func:`tickpar.perf.timing.measure_cells`: interleaved rounds of fresh pyperf
processes, every timed run's digests checked against a golden record, CPU
availability probed around each round), and ``speedup`` / ``loop_speedup`` with
their 95% intervals come from :func:`tickpar.pipeline.aggregate.speedup_columns`, as in
``results/summary.csv``.  Contended values and timed runs that are not exact get
no speedup, as there.  The figures to cite are the pipeline's (``make report``:
``results/summary.csv``); this script is for a quick look at a few shapes.

Run:  ``.venv/bin/python bench/speedup.py [--config F] [--work-us 300,1000] [--out-dir DIR]`` (rounds, values,
warm-ups and the contention threshold default to the config's ``timing`` settings).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tickpar.perf.timing import TimingJob, measure_cells
from tickpar.pipeline.aggregate import speedup_columns, usable_values
from tickpar.pipeline.sweep import BASELINE, SweepCell, SweepError, load_config_file, load_sweep


def baseline_of(cell: SweepCell, cells: Sequence[SweepCell]) -> SweepCell | None:
    """The sequential cell ``cell``'s speedup is taken over, as the pipeline takes it (tickpar.pipeline.aggregate):
    the same order, engine and interpreter (a native cell over the native replay, never the Python loop)."""
    return next((b for b in cells if b.strategy == BASELINE and b.order == cell.order
                 and b.engine == cell.engine and b.interpreter == cell.interpreter), None)  # fmt: skip


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml", help="sweep whose shapes and cells are timed")
    parser.add_argument("--work-us", default="300,1000", help="comma-separated work_us values to time")
    parser.add_argument("--workers", type=int, default=2, help="worker count of the parallel cells (default 2)")
    for flag, key, what in (
        ("--rounds", "processes", "interleaved rounds (fresh processes) per cell"),
        ("--values", "values", "values per round"),
        ("--warmups", "warmups", "warm-ups per round"),
        ("--min-cpu-available", "min_cpu_available", "contention threshold"),
    ):
        kind = float if key == "min_cpu_available" else int
        parser.add_argument(flag, type=kind, dest=key, help=f"{what} (default: the config's timing.{key})")
    parser.add_argument("--out-dir", help="keep the timing records here (default: a temporary directory)")
    args = parser.parse_args(argv)
    try:
        wanted = {float(x) for x in args.work_us.split(",")}
        config = load_config_file(args.config)
        sweep = load_sweep(config, args.config)
    except (ValueError, OSError, SweepError) as exc:
        parser.error(str(exc))
    settings = {key: config["timing"][key] if getattr(args, key) is None else getattr(args, key)
                for key in ("processes", "values", "warmups", "min_cpu_available")}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="tickpar-speedup-") as tmp:
        root = Path(args.out_dir or tmp)
        for (workload, shape), cells in sweep.timing_groups.items():
            cells = [c for c in cells if float(c.params.get("work_us", -1)) in wanted]
            cells = [c for c in cells if c.strategy == BASELINE or c.workers == args.workers]
            if not any(c.strategy != BASELINE for c in cells):
                continue
            jobs = []
            for c in cells:
                entry = c.timing_entry()
                entry.update(timing_path=str(root / c.timing_path), pyperf_path=str(root / c.pyperf_path))
                jobs.append(TimingJob.from_entry(entry, golden=False))
            records = measure_cells(
                jobs, rounds=settings["processes"], values=settings["values"], warmups=settings["warmups"],
                min_cpu_available=settings["min_cpu_available"],
                baseline_max_spread=config["timing"]["baseline_max_spread"],
                max_round_shift=config["timing"]["max_round_shift"],
            )  # fmt: skip
            usable = {c.key: usable_values(r) for c, r in zip(cells, records, strict=True)}
            print(f"{workload}/{shape}:")
            for c, rec in zip(cells, records, strict=True):
                if c.strategy == BASELINE:
                    continue
                base = baseline_of(c, cells)
                cols = speedup_columns(usable.get(base.key) if base else None, usable[c.key], 2000, 0.95, 1)
                flags = "exact" if rec.get("timed_exact") else f"NOT exact/{rec['status']}"
                flags += ", contended" if rec.get("contended") else ""
                whole = f"{cols['speedup']:.2f} [{cols['speedup_lo']:.2f}, {cols['speedup_hi']:.2f}]"
                loop = f"{cols['loop_speedup']:.2f} [{cols['loop_speedup_lo']:.2f}, {cols['loop_speedup_hi']:.2f}]"
                print(f"  {c.label:<32} speedup {whole}  loop {loop}  ({flags})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
