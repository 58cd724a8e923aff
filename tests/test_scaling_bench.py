"""bench/scaling.py: the many-core scaling run without Snakemake (cells, core budget, resume, tables).

Timing is never asserted: only which cells run, that every step's records are the pipeline's, and that a
resumed run keeps what was already written.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from tickpar import native
from tickpar.pipeline.sweep import BASELINE, load_sweep

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import scaling  # noqa: E402

TINY = """
description: tiny scaling sweep of the test suite
seeds: [1]
orders: [gem5]
work: [gil-release]
workers: [1, 2, 64]
check_workers: []
timeout_s: 60
timing: {processes: 1, values: 5, warmups: 0, timeout_s: 60, min_cpu_available: 0.0, retimes: 0,
         baseline_max_spread: 0, max_round_shift: 0}
report: {bootstrap: 100}
workloads:
  phold:
    shapes:
      tiny: {lps: 4, population: 2, end_tick: 400, lookahead: 50, granularity: 50, work_us: 5}
strategies:
  sequential:
    orders: [gem5, canonical]
  conservative:
    orders: [canonical]
    variants:
      window-threads: {sync: window, backend: threads, stall_s: 20}
"""


def _sweep(tmp_path: Path, text: str = TINY):
    import yaml

    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path, load_sweep(yaml.safe_load(text), str(path))


def test_parse_workers_names_the_bad_value() -> None:
    assert scaling.parse_workers(None) is None
    assert scaling.parse_workers("1,2, 16") == {1, 2, 16}
    for bad in ("1,two", "0,2", ""):
        with pytest.raises(ValueError, match="--workers") as err:
            scaling.parse_workers(bad)
        assert repr(bad) in str(err.value)


def test_cells_above_the_cores_or_not_asked_for_are_left_out_with_a_reason(tmp_path: Path) -> None:
    _, sweep = _sweep(tmp_path)
    kept, dropped = scaling.select_cells(sweep.timed, cores=2, wanted=None)
    assert {c.workers for c in kept if c.strategy != BASELINE} == {1, 2}
    assert sum(c.strategy == BASELINE for c in kept) == 2  # both orders' baselines, always
    assert dropped == ["64 workers: above the 2 usable cores"]
    kept, dropped = scaling.select_cells(sweep.timed, cores=128, wanted={2})
    assert {c.workers for c in kept if c.strategy != BASELINE} == {2}
    assert dropped == ["1 workers: not in --workers", "64 workers: not in --workers"]


def test_core_budget_never_runs_more_than_its_cores_at_once() -> None:
    budget = scaling.CoreBudget(3)
    lock, busy, peak = threading.Lock(), [0], [0]

    def job(claim: int) -> None:
        def work() -> None:
            with lock:
                busy[0] += min(claim, 3)
                peak[0] = max(peak[0], busy[0])
            time.sleep(0.01)
            with lock:
                busy[0] -= min(claim, 3)

        budget.run(claim, work)

    threads = [threading.Thread(target=job, args=(claim,)) for claim in (1, 2, 2, 1, 5, 3, 1, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert peak[0] <= 3 and busy[0] == 0 and budget.free == 3  # a claim of 5 ran alone, as 3


def test_checks_claim_the_cores_the_pipeline_rule_claims(tmp_path: Path) -> None:
    _, sweep = _sweep(tmp_path)
    for cell in sweep.timed:
        # threads under the GIL: one core, whatever the worker count (rules/common.smk check_threads)
        assert cell.check_cores == 1
    _, processes = _sweep(tmp_path, TINY.replace("backend: threads", "backend: processes"))
    assert {(c.workers, c.check_cores) for c in processes.timed if c.strategy != BASELINE} == {(1, 1), (2, 2), (64, 64)}


@pytest.mark.slow
def test_a_scaling_run_writes_the_pipelines_tables_and_resumes_without_rerunning(tmp_path: Path, capsys) -> None:
    path, _ = _sweep(tmp_path)
    out = tmp_path / "run"
    assert scaling.main(["--config", str(path), "--out-dir", str(out), "--workers", "1,2"]) == 0
    table = pd.read_csv(out / "scaling.csv")
    assert list(table.columns) == list(scaling.SCALING_COLUMNS)
    assert sorted(table["workers"]) == [1, 2]  # conservative at 1 and 2; 64 left out
    assert set(table["verdict"]) == {"exact"} and table["timed_exact"].all()
    assert table["loop_speedup"].notna().all() and table["model"].notna().all()
    assert (table.loc[table["workers"] == 1, "bound"] == 1.0).all()
    prediction = pd.read_csv(out / "prediction.csv")
    assert {"model", "bound", "measured_speedup", "validation"} <= set(prediction.columns)
    assert (out / "model_error.csv").exists() and (out / "environment.json").exists()
    timed = sorted((out / "results" / "timing").rglob("w*-s1.json"))
    assert len(timed) == 4  # two baselines, conservative at 1 and 2 workers
    stamps = {p: p.stat().st_mtime_ns for p in timed}
    capsys.readouterr()
    assert scaling.main(["--config", str(path), "--out-dir", str(out), "--workers", "1,2", "--resume"]) == 0
    err = capsys.readouterr().err
    assert "timed phold/tiny: kept from before" in err and "calibration here: kept from before" in err
    assert {p: p.stat().st_mtime_ns for p in timed} == stamps
    assert scaling.main(["--show", str(out)]) == 0
    assert "conservative/window-threads" in capsys.readouterr().out


def test_show_and_out_dir_errors_are_one_line(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        scaling.main(["--show", str(tmp_path)])
    assert "no scaling.csv there" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        scaling.main([])
    assert "--out-dir is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        scaling.main(["--out-dir", str(tmp_path), "--workers", "0"])
    assert "--workers '0'" in capsys.readouterr().err


@pytest.mark.skipif(not native.available(), reason="native engine not built")
def test_cxx_costs_without_a_file_are_measured_once_per_process(monkeypatch, tmp_path: Path) -> None:
    from tickpar.perf.predict import costs

    calls = []
    monkeypatch.delenv(costs.CALIBRATION_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # no results/calibration.json here
    costs.measured_now.cache_clear()
    real = native.calibrate
    monkeypatch.setattr(native, "calibrate", lambda budget: calls.append(budget) or real(0.05))
    try:
        first, second = costs.cxx_calibration(), costs.cxx_calibration()
    finally:
        costs.measured_now.cache_clear()
    assert len(calls) == 1 and first == second and first["file"].startswith("measured now")
