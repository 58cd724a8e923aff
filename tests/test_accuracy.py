"""Quantitative error: workload statistics, relative errors against golden, accuracy.csv and its report page."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from factories import make_summary, summary_row, sweep_config

from tickpar.cli import main
from tickpar.pipeline.accuracy import accuracy_table, thresholds
from tickpar.pipeline.sweep import SweepError, load_sweep
from tickpar.plugins.registry import get_registry
from tickpar.report.accuracy import (
    ANCHORS,
    accuracy_findings,
    accuracy_sentences,
    fig_accuracy,
    pdf_pages,
    summary_page,
)
from tickpar.runner import Cell, check_cell, execute, execute_isolated, resolve_cell
from tickpar.verify.oracle import OracleRecord, compare, errors, failure_record

PHOLD = {"lps": 4, "population": 2, "end_tick": 600}
MULTICORE = {"cores": 2, "requests_per_core": 30}


def _record(final_tick: int, events: int, statistics: dict[str, float]) -> OracleRecord:
    return OracleRecord(events, final_tick, "d", {}, statistics=statistics)


# ---------------------------------------------------------------- errors against golden


def test_errors_are_signed_relative_differences() -> None:
    golden = _record(1000, 200, {"sim_ticks": 800.0, "hit_rate": 0.5, "zero": 0.0})
    got = _record(1100, 150, {"sim_ticks": 600.0, "hit_rate": 0.55, "zero": 2.0})
    errs = errors(golden, got)
    assert errs is not None
    assert list(errs) == ["final_tick", "events", "sim_ticks", "hit_rate", "zero"]
    assert errs["final_tick"] == pytest.approx(0.1)
    assert errs["events"] == pytest.approx(-0.25)
    assert errs["sim_ticks"] == pytest.approx(-0.25)
    assert errs["hit_rate"] == pytest.approx(0.1)
    assert errs["zero"] == pytest.approx(2.0)  # golden 0: the plain difference


def test_errors_of_a_missing_statistic_and_of_an_unfinished_run() -> None:
    golden = _record(10, 10, {"a": 1.0})
    assert errors(golden, _record(10, 10, {})) == {"final_tick": 0.0, "events": 0.0, "a": None}
    assert errors(golden, failure_record("crash", "boom")) is None


def test_compare_puts_errors_beside_every_finished_verdict() -> None:
    golden = OracleRecord(5, 50, "g", {"c": {"id": 0, "count": 5, "digest": "x"}}, statistics={"s": 4.0})
    same = OracleRecord(5, 50, "g", {"c": {"id": 0, "count": 5, "digest": "x"}}, statistics={"s": 4.0})
    off = OracleRecord(4, 40, "h", {"c": {"id": 0, "count": 4, "digest": "y"}}, statistics={"s": 5.0})
    exact = compare(golden, same)
    assert exact.kind == "exact" and exact.errors == {"final_tick": 0.0, "events": 0.0, "s": 0.0}
    diverged = compare(golden, off)
    assert diverged.kind == "diverged"
    assert diverged.errors == pytest.approx({"final_tick": -0.2, "events": -0.2, "s": 0.25})
    assert diverged.to_dict()["errors"] == diverged.errors
    assert compare(golden, failure_record("deadlock", "stuck")).errors is None


# ---------------------------------------------------------------- workload statistics


@pytest.mark.parametrize("workload", ["phold", "multicore"])
def test_statistics_are_the_declared_ones_and_not_in_the_digest(workload: str) -> None:
    params = PHOLD if workload == "phold" else MULTICORE
    spec = resolve_cell(workload, params, "sequential", {}, 1, 1).spec
    rec = get_registry().strategy("sequential")().run(spec, 1, {"checks": True}).record
    stats = spec.statistics(rec)
    assert list(stats) == list(get_registry().workload(workload).statistics)
    assert all(isinstance(v, float) and v > 0 for v in stats.values())
    assert rec.statistics == {}  # the strategy does not compute them; the runner does (below)


def test_phold_statistics() -> None:
    outcome = execute(resolve_cell("phold", PHOLD, "sequential", {}, 1, 3))
    stats = outcome.record.statistics
    assert stats["events_processed"] == outcome.record.events  # every event is received by one LP
    assert 0 < stats["mean_hops"] < outcome.record.events


def test_multicore_statistics_from_the_traces() -> None:
    """sim_ticks, mean load latency and L1 hit rate, recomputed independently from the traced events."""
    outcome = execute(resolve_cell("multicore", MULTICORE, "sequential", {}, 1, 2, trace=True))
    rec = outcome.record
    assert rec.traces is not None
    responses = [
        (when, payload)
        for name, trace in rec.traces.items()
        if name.count(".") == 1 and name.startswith("system.cpu")
        for when, _prio, ev, payload in trace
        if ev.endswith("recvTimingResp")
    ]
    read_resp = 3  # multicore's READ_RESP command
    loads = [when - payload[2] for when, payload in responses if payload[0] == read_resp]
    assert len(responses) == MULTICORE["cores"] * MULTICORE["requests_per_core"]
    stats = rec.statistics
    assert stats["sim_ticks"] == max(when for when, _ in responses) <= rec.final_tick
    assert stats["mean_load_latency"] == pytest.approx(sum(loads) / len(loads))
    lookups = sum(1 for name, trace in rec.traces.items() if name.endswith(".dcache")
                  for _w, _p, ev, _pl in trace if ev.endswith("cpuSidePort.recvTimingReq"))  # fmt: skip
    assert lookups == len(responses)
    assert 0 < stats["l1_hit_rate"] < 1


def test_statistics_survive_a_child_process_and_the_process_backend() -> None:
    """The record carries each component's state, so statistics of a partitioned run equal the golden ones."""
    golden = execute(resolve_cell("phold", PHOLD, "sequential", {}, 1, 1)).record
    isolated = execute_isolated(resolve_cell("phold", PHOLD, "sequential", {}, 1, 1), timeout=60).record
    assert isolated.statistics == golden.statistics
    cell = resolve_cell("phold", PHOLD, "conservative", {"backend": "processes"}, 2, 1, order="canonical")
    verdict, outcome = check_cell(cell)
    assert verdict.kind == "exact"
    assert outcome.record.statistics == execute(Cell(cell.spec, "sequential", {}, 1)).record.statistics
    assert verdict.errors is not None and set(verdict.errors.values()) == {0.0}


def test_check_prints_errors_and_the_cell_record_holds_them(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "cell.json"
    golden = tmp_path / "golden.json"
    args = ["-w", "phold", "-p", "lps=4", "-p", "end_tick=600", "--seed", "2"]
    assert main(["golden", *args, "--out", str(golden)]) == 0
    assert json.loads(golden.read_text())["oracle"]["statistics"]["events_processed"] > 0
    rc = main(["check", *args, "-s", "split", "-n", "2", "-o", "checks=false", "-o", "lock_key=component",
               "--golden", str(golden), "--out", str(out)])  # fmt: skip
    text = capsys.readouterr().out
    record = json.loads(out.read_text())
    assert rc == (0 if record["verdict"]["kind"] == "exact" else 1)
    assert list(record["errors"]) == ["final_tick", "events", "events_processed", "mean_hops"]
    assert record["errors"] == record["verdict"]["errors"]
    assert set(record["statistics"]) == {"events_processed", "mean_hops"}
    line = next(x for x in text.splitlines() if x.startswith("errors vs golden: "))
    assert f"events {record['errors']['events']:+.2%}" in line


# ---------------------------------------------------------------- accuracy.csv


def _sweep() -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    cell = {"workload": "multicore", "shape": "fine", "order": "canonical"}
    for ratio, err in ((1.0, 0.0), (2.0, 0.004), (10.0, 0.05), (100.0, 0.3)):
        for seed, sign in ((1, 1), (2, -1)):
            rows.append(summary_row(f"quantum/r{ratio:g}", 2, 1.0 + ratio / 100 + seed / 10, **cell, seed=seed,
                                    verdict="exact" if not err else "diverged", stat_quantum_ratio=ratio,
                                    stat_late_events=10 * ratio, error_final_tick=sign * err, error_events=0.0,
                                    error_sim_ticks=sign * err / 2))  # fmt: skip
    rows.append(summary_row("sequential", 1, 1.0, **cell, error_final_tick=0.0, error_events=0.0,
                            error_sim_ticks=0.0))  # fmt: skip
    rows.append(summary_row("split/name", 2, 0.9, **{**cell, "order": "gem5"}, verdict="causality"))
    return make_summary(rows)


def test_accuracy_table_groups_seeds_and_takes_absolute_errors() -> None:
    table = accuracy_table(_sweep())
    assert list(table.columns[:7]) == ["workload", "shape", "strategy", "variant", "quantum_ratio", "workers",
                                       "speedup"]  # fmt: skip
    assert [c for c in table.columns if c.startswith("error_")] == [
        "error_final_tick", "error_events", "error_sim_ticks"]  # fmt: skip
    assert list(table["strategy"]) == ["quantum"] * 4  # no baseline, no cell without errors
    assert list(table["quantum_ratio"]) == [1.0, 2.0, 10.0, 100.0]
    r10 = table[table["quantum_ratio"] == 10.0].iloc[0]
    assert r10["error_final_tick"] == pytest.approx(0.05) and r10["error_sim_ticks"] == pytest.approx(0.025)
    assert r10["max_error"] == pytest.approx(0.05)
    assert r10["speedup"] == pytest.approx(1.1 + 0.15) and r10["seeds"] == 2 and r10["verdict"] == "diverged"
    assert r10["late_events"] == 100


def test_thresholds_name_the_first_ratio_past_each_level() -> None:
    limits = thresholds(accuracy_table(_sweep())).set_index("level")
    assert limits.loc[0.01, "passes"] == 10.0 and limits.loc[0.01, "within"] == 2.0
    assert limits.loc[0.15, "passes"] == 100.0 and limits.loc[0.15, "within"] == 10.0
    calm = thresholds(accuracy_table(_sweep().query("stat_quantum_ratio < 5")), levels=(0.01,))
    assert math.isnan(calm.iloc[0]["passes"]) and calm.iloc[0]["within"] == 2.0


def test_empty_accuracy_table() -> None:
    table = accuracy_table(_sweep().drop(columns=[c for c in _sweep().columns if c.startswith("error_")]))
    assert table.empty and "quantum_ratio" in table.columns
    only_baseline = accuracy_table(_sweep().query("strategy == 'sequential'"))  # errors, but no parallel cell
    assert only_baseline.empty and "error_final_tick" in only_baseline.columns
    assert thresholds(only_baseline).empty


def test_accuracy_page_has_reference_lines_and_findings() -> None:
    table = accuracy_table(_sweep())
    fig = fig_accuracy(table)
    ax = fig.axes[0]
    levels = sorted(line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "--")
    assert levels == [100 * level for level, _ in ANCHORS]
    assert {t.get_text() for t in ax.texts} >= {"1x", "2x", "10x", "100x"}
    plt.close(fig)
    sentences = accuracy_sentences(table)
    assert sentences == [
        "quantum on multicore/fine, 2 workers: worst error passes 1% at 10x (within it up to 2x); "
        "passes 15% at 100x (within it up to 10x)."
    ]
    assert accuracy_findings(_sweep()) == sentences and accuracy_findings(pd.DataFrame()) == []
    page = summary_page(_sweep())  # the same page, derived from summary.csv alone
    assert any("passes 15% at 100x" in t.get_text() for t in page.texts)
    plt.close(page)
    (name, page), = pdf_pages(table.iloc[0:0])
    assert name == "accuracy" and "no timed cell" in page.axes[0].texts[0].get_text()
    plt.close(page)


# ---------------------------------------------------------------- the sweep's per-strategy workers and shapes


def test_a_strategy_may_name_its_own_workers_and_shapes() -> None:
    cfg = sweep_config(workers=[1])
    cfg["strategies"]["conservative"] = {"orders": ["gem5"], "workers": [2], "shapes": ["tiny"],
                                         "variants": {"w": {"sync": "window"}}}  # fmt: skip
    sweep = load_sweep(cfg, "test")
    cons = [c for c in sweep.cells if c.strategy == "conservative"]
    assert {(c.shape, c.workers, c.timed) for c in cons} == {("tiny", 2, True)}
    cfg["strategies"]["conservative"]["shapes"] = ["nope"]
    with pytest.raises(SweepError, match=r"^strategies.conservative.shapes: 'nope' is not a shape of any workload"):
        load_sweep(cfg, "test")


def test_a_run_that_is_not_exact_gets_the_speed_of_its_approximate_answer() -> None:
    """summary.csv gives a non-exact timed run no speedup; accuracy.csv takes baseline time / its time."""
    rows = [
        {"cell": "base", "workload": "phold", "shape": "s", "strategy": "sequential", "variant": "default",
         "order": "canonical", "workers": 1, "verdict": "exact", "speedup": 1.0, "time_median_s": 0.3,
         "baseline_cell": "base", "error_final_tick": 0.0},
        {"cell": "q", "workload": "phold", "shape": "s", "strategy": "quantum", "variant": "r10",
         "order": "canonical", "workers": 2, "verdict": "diverged", "speedup": math.nan, "time_median_s": 0.2,
         "baseline_cell": "base", "stat_quantum_ratio": 10.0, "error_final_tick": 0.1},
    ]  # fmt: skip
    table = accuracy_table(pd.DataFrame(rows))
    assert list(table["strategy"]) == ["quantum"] and table.iloc[0]["speedup"] == pytest.approx(1.5)
