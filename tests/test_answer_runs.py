"""Page 1's real gem5 runs (tickpar.report.answer.run_row): a row per run beside the synthetic strategy variants,
in answer.csv, the PDF page and the HTML; and the pricing that feeds them
(tickpar.perf.predict.tables: each preset's own
bound, the fits a workload without 1-worker runs borrows)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from helpers import CALIBRATION  # tests/helpers.py (tests/ is on sys.path: rootdir conftest)

from tickpar.perf.predict.tables import fits_for, shape_bounds
from tickpar.report import answer
from tickpar.report import render as report
from tickpar.report.answer_page import RUNS_TITLE, answer_html, answer_pdf, split_table
from tickpar.runner import resolve_cell

TRACE = "examples/gem5-traces/tg-random-2core.events.txt.gz"
STATS = "examples/gem5-traces/tg-random-2core.untraced.stats.txt.gz"
COST = "1.37 us/event: host time 0.0234 s (simTicks/hostTickRate) of tg-random-2core.untraced.stats.txt.gz over " \
    "17,112 events (untraced run)"


def _row(label: str, workers: int, loop: float, *, workload: str = "phold", shape: str = "wide",
         engine: str = "native", order: str = "gem5", **kw: object) -> dict:  # fmt: skip
    strategy, _, variant = label.partition("/")
    return {
        "workload": workload, "shape": shape, "family": shape, "strategy": strategy, "variant": variant or "default",
        "label": f"{label} [native]", "base_label": label, "workers": workers, "seed": 1, "order": order,
        "work": "gil-release", "engine": engine, "interpreter": "default", "verdict": "exact", "as_expected": True,
        "promise_because": "its contract", "timing_status": "ok", "speedup": loop * 0.9, "speedup_lo": loop * 0.8,
        "speedup_hi": loop, "loop_speedup": loop, "loop_speedup_lo": loop * 0.95, "loop_speedup_hi": loop * 1.05,
        "param_work_us": 1.0, "timed_exact": True, "contended": False, "events": 1000, **kw,
    }  # fmt: skip


def _trace(label: str, workers: int, loop: float, **kw: object) -> dict:
    return _row(label, workers, loop, workload="gem5trace", shape="tg-random-2core", param_trace=TRACE,
                param_gem5_stats=STATS, param_work_us=0.0, event_cost_us=1.3687, event_cost=COST, events=17112,
                **kw)  # fmt: skip


def _summary() -> pd.DataFrame:
    nan = float("nan")
    rows = [
        _row("sequential", 1, 1.0), _row("tick-barrier/component", 2, 1.4),
        _trace("sequential", 1, 1.0), _trace("sequential", 1, 1.0, order="canonical"),
        _trace("tick-barrier/component", 2, 1.08, timed_exact=False,
               timing_reason="timed runs not exact: exact x2, race x4"),
        _trace("conservative/window-threads", 2, 1.2, order="canonical"),
        _trace("split/name", 2, nan, verdict="causality", timing_status="not timed"),
        _trace("split/nochecks", 2, nan, verdict="diverged", timing_status="not timed"),
    ]  # fmt: skip
    return report.prepare(pd.DataFrame(rows))


def _prediction() -> pd.DataFrame:
    rows = []
    for strategy, variant, order in (("tick-barrier", "component", "gem5"), ("conservative", "window-threads",
                                                                            "canonical")):  # fmt: skip
        for preset, scale in (("here", 0.5), ("cxx", 1.0)):
            for p in (1, 2, 4, 8, 16, 32, 64):
                rows.append({
                    "workload": "gem5trace", "shape": "tg-random-2core", "strategy": strategy, "variant": variant,
                    "preset": preset, "workers": p, "order": order, "work": "gil-release",
                    "engine": "native" if preset == "cxx" else "python", "model": scale * (1 + 0.01 * p),
                    "predicted_speedup": scale * (1 + 0.01 * p), "bound": scale * (1.2 + 0.001 * p),
                    "validation": "none", "measured_speedup": None,
                })  # fmt: skip
    return pd.DataFrame(rows)


def test_a_real_run_gets_one_row_with_every_run_column() -> None:
    table = answer.answer_table(_summary(), _prediction())
    runs = table[answer.is_run_row(table)]
    assert len(runs) == 1 and runs["scope"].iloc[0] == "trace tg-random-2core.events.txt.gz"
    row = runs.iloc[0]
    assert row[answer.RUN_COLUMNS[0]] == "tg-random-2core: 17,112 events; 1.37 µs: the run's own (its untraced stats)"
    assert row[answer.RUN_COLUMNS[1]] == (
        "sequential yes 2/2; tick-barrier yes 1/1 (timed: exact x2, race x4); conservative yes 1/1; "
        "split no 0/2 (causality 1, diverged 1)"
    )
    # tick-barrier's timed runs were not all exact: it never counts; conservative's 2-worker cell is the best
    assert row[answer.RUN_COLUMNS[2]] == "1.20 [1.14, 1.26] conservative/window-threads [native]"
    assert row[answer.RUN_COLUMNS[3]] == "1.08 [0.96, 1.20] conservative/window-threads [native]"
    bound, model = row[answer.RUN_COLUMNS[4]], row[answer.RUN_COLUMNS[5]]  # the native engine's cells: cxx
    assert bound == "tick-barrier/component 1.2x, 1.3x (cxx); conservative/window-threads 1.2x, 1.3x (cxx)"
    # each with the model's error; measured at 2 workers at most and never held out: not an answer (greyed)
    assert model == (
        "not citable (no measured native point at 2+ workers off the fit; no held-out native point): model "
        "tick-barrier/component 1.2x, 1.6x (cxx); not validated; conservative/window-threads 1.2x, 1.6x (cxx); "
        "error 15% over 1 point at 2 workers (every work_us); no held-out point"
    )
    # the synthetic rows keep their own columns, "-" in the run's
    synthetic = table[~answer.is_run_row(table)]
    assert synthetic["strategy variant"].tolist() == ["sequential", "tick-barrier/component"]
    assert (synthetic[list(answer.RUN_COLUMNS)] == "-").all().all()
    assert table.to_csv(index=False).count("tg-random-2core: 17,112 events") == 1  # answer.csv


def test_a_run_without_its_stats_says_its_cost_is_work_us_and_a_run_with_no_counted_cell_says_so() -> None:
    df = _summary().drop(columns=["event_cost_us", "event_cost"])
    df.loc[df["workload"] == "gem5trace", "param_work_us"] = 0.3
    df.loc[df["workload"] == "gem5trace", "contended"] = True
    row = answer.answer_table(df, _prediction()).iloc[-1]
    assert row[answer.RUN_COLUMNS[0]].endswith("0.3 µs: work_us, not the run's own")
    assert row[answer.RUN_COLUMNS[2]] == "- (contended: another load on the machine in every round, re-times included)"


def test_a_sweep_of_real_runs_alone_has_findings_and_a_page() -> None:
    """No synthetic workload: the table is the runs' alone, and the findings start with them."""
    df = _summary()
    df = df[df["workload"] == "gem5trace"]
    table = answer.answer_table(df, _prediction())
    assert answer.is_run_row(table).all()
    found = answer.answer_findings(df, _prediction(), table)
    assert found[0][1] == "traces" and found[0][0].startswith("Real gem5 runs (1), each replayed at its own")
    plt.close(answer_pdf(table, found, "runs alone"))


def test_the_page_and_the_html_show_the_runs_in_a_table_of_their_own() -> None:
    table = answer.answer_table(_summary(), _prediction())
    synthetic, runs = split_table(table)
    assert list(runs.columns) == list(answer.RUN_COLUMNS) and len(runs) == 1
    assert not set(answer.RUN_COLUMNS) & set(synthetic.columns)
    found = answer.answer_findings(_summary(), _prediction(), table)
    real = next(text for text, page in found if page == "traces")
    assert real.startswith("Real gem5 runs (1), each replayed at its own measured cost per event (1.4 µs): best "
                           "measured 2-worker loop speedup 1.20 [1.14, 1.26] conservative/window-threads [native] on "
                           "tg-random-2core; exact in every checked cell: sequential, tick-barrier, conservative; "
                           "not always: split (on every run)")
    assert found[0][0] == real  # the real runs lead
    fig = answer_pdf(table, found, "test")
    texts = [t.get_text() for t in fig.texts]
    assert RUNS_TITLE in texts
    cells = [c.get_text().get_text() for ax in fig.axes for tab in ax.tables for c in tab.get_celld().values()]
    assert any(c.startswith("tg-random-2core: 17,112") for c in cells)
    plt.close(fig)
    html = answer_html(table, found)
    assert RUNS_TITLE in html and "tg-random-2core: 17,112 events" in html


def test_each_preset_prices_its_own_bound() -> None:
    """The cxx preset's bound is the DAG at the native engine's costs (a gem5 trace at its run's own cost), beside
    here's at the Python engine's; each is at least its model."""
    spec = resolve_cell("phold", {"lps": 4, "population": 2, "end_tick": 500, "work_us": 1.0}, "sequential", {}, 1,
                        1).spec  # fmt: skip
    cells = [{"strategy": "tick-barrier", "variant": "component", "options": {}, "order": "gem5", "work": "none"}]
    record = shape_bounds("phold", "tiny", spec, cells, CALIBRATION, (1, 2, 4), "cal.json", recordings=1)
    for preset in ("here", "cxx"):
        rows = [r for r in record["rows"] if r["preset"] == preset]
        assert rows and all(r["bound_speedup"] is not None for r in rows), preset
        assert all(r["bound_speedup"] >= r["predicted_speedup"] * (1 - 1e-9) for r in rows), preset


def test_a_workload_without_1_worker_runs_borrows_another_workloads_fit() -> None:
    base = {"strategy": "conservative", "variant": "window-threads", "order": "canonical", "work": "gil-release",
            "engine": "native", "verdict": "exact", "timed_exact": True, "contended": False, "interpreter": "default",
            "speedup": 1.0, "events": 1000, "shape": "wide"}  # fmt: skip
    summary = pd.DataFrame([
        {**base, "workload": "phold", "cell": "seq", "strategy": "sequential", "variant": "default", "workers": 1,
         "time_loop_median_s": 0.010, "baseline_cell": "seq"},
        {**base, "workload": "phold", "cell": "c1", "workers": 1, "time_loop_median_s": 0.011, "baseline_cell": "seq"},
        {**base, "workload": "gem5trace", "cell": "t2", "workers": 2, "time_loop_median_s": 0.02,
         "baseline_cell": "tseq", "shape": "tg-random-2core"},
    ])  # fmt: skip
    key = ("conservative", "window-threads", "canonical", "gil-release", "native")
    own = fits_for(summary, "phold")
    assert own[key]["o_event_s"] == pytest.approx(1e-6) and "borrowed" not in own[key]["source"]
    borrowed = fits_for(summary, "gem5trace")
    assert borrowed[key]["o_event_s"] == pytest.approx(1e-6)
    assert "borrowed: gem5trace has no 1-worker run of conservative/window-threads on the native engine" in \
        borrowed[key]["source"]


def test_a_page_too_full_for_its_findings_moves_them_to_the_next_page() -> None:
    """30 strategy variants and the run: both tables stay on page 1 (rows and font shrink), and the findings go on
    a page of their own right after it."""
    df = _summary()
    many = pd.DataFrame([_row(f"quantum/r{i}", 2, 1.0, verdict="diverged", promise_because="x " * 40)
                         for i in range(30)])  # fmt: skip
    df = report.prepare(pd.concat([df, many], ignore_index=True))
    table = answer.answer_table(df, _prediction())
    found = answer.answer_findings(df, _prediction(), table)
    figs = answer_pdf(table, found, "full")
    assert isinstance(figs, list) and len(figs) == 2
    first = [c.get_text().get_text() for ax in figs[0].axes for tab in ax.tables for c in tab.get_celld().values()]
    assert any(c.startswith("tg-random-2core: 17,112") for c in first)  # the run's row is on page 1
    assert "Findings, ranked: on the next page." in [t.get_text() for t in figs[0].texts]
    assert any(t.get_text().startswith("1. ") for t in figs[1].texts)
    for fig in figs:
        plt.close(fig)
