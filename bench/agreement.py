"""Pipeline vs standalone: does a finished sweep's timed value of a cell agree with a standalone `tickpar time`?

For each named cell (its key under ``results/timing/``, e.g.
``phold/wide.work_us300/conservative/window-threads/canonical/gil-release/w2-s1``)
this runs ``tickpar time`` on the cell with the sweep's own timing settings
(rounds, values, warm-ups: the same statistic) and the pipeline's work
calibration (``--work-rate``: exactly the same work per event), and prints the pipeline's median,
the standalone median and their ratio (the goal: within 5%), with each side's
contention flag.  Run it on a quiet machine, from the directory the sweep ran in:

    .venv/bin/python bench/agreement.py [--config config/config.yaml] CELL [CELL ...]

Without CELL it picks three: the first 2-worker threads cell, the first
process-backend cell and the first sequential cell at the largest work_us.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tickpar.pipeline.sweep import BASELINE, SweepCell, load_config_file, load_sweep


def _default_cells(cells: list[SweepCell]) -> list[SweepCell]:
    top = max(float(c.params.get("work_us", 0)) for c in cells)
    at_top = [c for c in cells if float(c.params.get("work_us", 0)) == top]
    picks = [
        next((c for c in at_top if c.workers == 2 and not c.processes and c.strategy != BASELINE), None),
        next((c for c in at_top if c.workers == 2 and c.processes), None),
        next((c for c in at_top if c.strategy == BASELINE), None),
    ]
    return [c for c in picks if c is not None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml", help="the sweep that ran")
    parser.add_argument("cells", nargs="*", help="cell keys (paths under results/timing/ without .json)")
    args = parser.parse_args(argv)
    config = load_config_file(args.config)
    sweep = load_sweep(config, args.config)
    timing = config["timing"]
    try:
        chosen = [sweep.by_key[key] for key in args.cells] or _default_cells(sweep.timed)
    except KeyError as exc:
        parser.error(f"not a cell of {args.config}: {exc}")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="tickpar-agreement-") as tmp:
        for cell in chosen:
            piped = json.loads(Path(cell.timing_path).read_text())
            out = Path(tmp, "standalone.json")
            cmd = [
                sys.executable, "-m", "tickpar", "time", *cell.cli_args(), "--processes", str(timing["processes"]),
                "--values", str(timing["values"]), "--warmups", str(timing["warmups"]), "--out", str(out),
                "--min-cpu-available", str(timing["min_cpu_available"]),
                *(["--work-rate", repr(piped["work_units_per_us"])] if piped.get("work_units_per_us") else []),
            ]  # fmt: skip
            subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
            alone = json.loads(out.read_text())
            ratio = piped["median_s"] / alone["median_s"]
            worst = max(worst, abs(ratio - 1.0))
            print(
                f"{cell.key}: pipeline median {piped['median_s'] * 1e3:.2f} ms (contended: {piped.get('contended')}),"
                f" standalone {alone['median_s'] * 1e3:.2f} ms (contended: {alone.get('contended')}),"
                f" ratio {ratio:.3f}",
                flush=True,
            )
    print(f"largest deviation {worst:.1%} ({'within' if worst <= 0.05 else 'NOT within'} 5%)")
    return 0 if worst <= 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
