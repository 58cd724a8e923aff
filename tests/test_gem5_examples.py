"""The example gem5 runs that ship in examples/gem5-traces/: present, small, tracked, described, and swept by
the default config at each run's own cost per event (issue #44)."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tickpar.gem5.stats import read_stats, stats_kind
from tickpar.pipeline.sweep import SweepError, load_sweep
from tickpar.plugins.registry import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "gem5-traces"
#: The runs, with the `executed` lines of each trace (the provenance README's table).
RUNS = {
    "tg-random-2core": 17_113,
    "memtest-2-2-1": 38_923,
    "garnet-mesh-16node": 58_942,
}
#: Host µs per event of each untraced run, as the README gives it (2 decimals).
COST_US = {
    "tg-random-2core": 1.37,
    "memtest-2-2-1": 0.89,
    "garnet-mesh-16node": 2.19,
}
LIMIT_BYTES = 10 * 1024 * 1024


def _files() -> list[Path]:
    return sorted(p for p in EXAMPLES.iterdir() if p.is_file())


def test_every_run_has_its_trace_and_both_stats_compressed_and_10_mb_at_most() -> None:
    names = {p.name for p in _files()}
    for stem in RUNS:
        for suffix in (".events.txt.gz", ".stats.txt.gz", ".untraced.stats.txt.gz"):
            assert stem + suffix in names, stem + suffix
    assert names - {f"{s}{x}" for s in RUNS for x in (".events.txt.gz", ".stats.txt.gz", ".untraced.stats.txt.gz")} \
        == {"README.md"}
    assert sum(p.stat().st_size for p in _files()) <= LIMIT_BYTES


@pytest.mark.parametrize("stem", RUNS)
def test_each_trace_has_the_executed_lines_its_readme_gives(stem: str) -> None:
    with gzip.open(EXAMPLES / f"{stem}.events.txt.gz", "rt") as f:
        executed = sum(1 for line in f if " executed @ " in line)
    assert executed == RUNS[stem]
    readme = (EXAMPLES / "README.md").read_text()
    assert re.search(rf"\| `{re.escape(stem)}` \|.*\| {RUNS[stem]:,} \| {COST_US[stem]:.2f} \|", readme), stem


@pytest.mark.parametrize("stem", RUNS)
def test_each_untraced_stats_gives_the_host_cost_its_readme_gives(stem: str) -> None:
    """host time (simTicks / hostTickRate) over the executed lines, in µs, to the README's two decimals; the file's
    name says untraced, the traced run's own says traced."""
    stats = read_stats(EXAMPLES / f"{stem}.untraced.stats.txt.gz")
    seconds, _ = stats.host_time()
    assert seconds / RUNS[stem] * 1e6 == pytest.approx(COST_US[stem], abs=0.005)
    trace = EXAMPLES / f"{stem}.events.txt.gz"
    assert stats_kind(EXAMPLES / f"{stem}.untraced.stats.txt.gz", trace)[0] == "untraced"
    assert stats_kind(EXAMPLES / f"{stem}.stats.txt.gz", trace)[0] == "traced"


def test_the_readme_gives_provenance_and_licence() -> None:
    text = (EXAMPLES / "README.md").read_text()
    for needle in ("v24.0.0.1", "b1a44b89c7", "NULL ISA", "BSD 3-Clause", "tg_multicore.py", "--debug-flags=Event",
                   "memtest.py", "garnet_synth_traffic.py"):  # fmt: skip
        assert needle in text, needle
    assert "/work/" not in text  # no path on a particular machine


@pytest.mark.skipif(shutil.which("git") is None or not (REPO_ROOT / ".git").exists(), reason="not a git checkout")
def test_the_examples_are_not_git_ignored() -> None:
    paths = [str(p.relative_to(REPO_ROOT)) for p in _files()]
    res = subprocess.run(["git", "check-ignore", *paths], cwd=REPO_ROOT, capture_output=True, text=True)
    assert res.stdout.strip() == "", res.stdout  # check-ignore prints the ignored ones


def test_the_default_sweep_replays_every_example_natively_at_its_own_cost() -> None:
    config = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())
    entry = config["workloads"]["gem5trace"]
    assert set(entry["shapes"]) == set(RUNS)
    for stem, params in entry["shapes"].items():
        assert params["trace"] == f"examples/gem5-traces/{stem}.events.txt.gz"
        assert (REPO_ROOT / params["trace"]).is_file()
        if "gem5_stats" in params:  # the run's own cost: its untraced stats
            assert params["gem5_stats"] == f"examples/gem5-traces/{stem}.untraced.stats.txt.gz"
            assert not params.get("work_us")
        else:
            assert params["work_us"] == pytest.approx(COST_US[stem])
        assert entry["shape_engines"][stem] == ["native"]
    for strategy in ("split", "tick-barrier"):
        assert set(RUNS) <= set(config["strategies"][strategy]["shapes"]), strategy


def test_the_default_sweep_runs_each_real_run_at_2_workers_on_the_native_engine() -> None:
    """shape_workers: [2] and shape_engines: [native]: per run, sequential in both order modes, tick-barrier by
    component and conservative (window, canonical) checked and timed; split's three variants and tick-barrier by
    name checked; nothing at 1 (but the baseline) or 4 workers, nothing on the Python engine."""
    sweep = load_sweep(yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text()), "default")
    for stem in RUNS:
        cells = [c for c in sweep.cells if c.workload == "gem5trace" and c.shape == stem]
        assert {c.engine for c in cells} == {"native"}
        got = sorted((c.strategy, c.variant, c.workers, c.order, c.timed) for c in cells)
        assert got == sorted([
            ("sequential", "default", 1, "gem5", True), ("sequential", "default", 1, "canonical", True),
            ("tick-barrier", "component", 2, "gem5", True), ("conservative", "window-threads", 2, "canonical", True),
            ("tick-barrier", "name", 2, "gem5", False), ("split", "name", 2, "gem5", False),
            ("split", "nochecks", 2, "gem5", False), ("split", "component", 2, "gem5", False),
        ]), stem  # fmt: skip
    assert sweep.skipped["outside shape_workers"] > 0


def test_shape_workers_names_a_declared_shape() -> None:
    config = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())
    config["workloads"]["phold"]["shape_workers"] = {"nope": [2]}
    with pytest.raises(SweepError, match=r"workloads\.phold\.shape_workers\.nope: not a declared shape of phold"):
        load_sweep(config, "default")
