"""One figure, one number: the break-even, the best 2-worker speedup and the model's error that page 1's table,
answer.csv and the findings page give for a strategy variant are the same numbers (one computation each, quoted
three times); the gem5-like cost is the same on every page that names it; a model figure that is not validated is
greyed out; the real runs' finding leads and agrees with their rows."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from factories import make_summary, summary_row

from tickpar.report.answer import NOT_CITABLE, answer_findings, answer_table, speed_columns
from tickpar.report.answer_page import GREY, LEGEND, answer_html, answer_pdf
from tickpar.report.findings import findings
from tickpar.report.gem5_cost import DEFAULT_US, gem5_like_cost
from tickpar.report.model_error import model_error, recompute

SPEED = re.compile(r"^(\w+) engine, 2 workers, ([0-9.]+) µs per event")


def _column(table: pd.DataFrame, engine: str, kind: str) -> str:
    """Page 1's ``break-even`` or ``model`` column of ``engine``."""
    start = {"break-even": f"{engine} engine break-even:", "model": f"{engine} engine model (preset "}[kind]
    return next(c for c in table.columns if str(c).startswith(start))

#: (label, engine) -> loop speedup at 2 workers per work per event (µs); the end-to-end speedup is 0.8 of it, so a
#: page quoting the other measure would show another number.
LOOPS: dict[tuple[str, str], dict[float, float]] = {
    ("tick-barrier/component", "python"): {1.0: 0.4, 10.0: 0.9, 100.0: 1.5, 1000.0: 1.9},
    ("conservative/window-threads", "python"): {1.0: 0.6, 10.0: 1.1, 100.0: 1.7, 1000.0: 1.85},
    ("conservative/window-processes", "python"): {1.0: 0.3, 10.0: 0.7, 100.0: 1.2, 1000.0: 1.8},
    ("tick-barrier/component", "native"): {0.1: 0.8, 1.0: 1.4, 10.0: 1.8},
    ("conservative/window-threads", "native"): {0.1: 1.1, 1.0: 1.6, 10.0: 1.9},
}


#: (label, engine) -> the model's relative error at every measured point of the sweep: each page must quote it.
ERRORS: dict[tuple[str, str], float] = {
    ("tick-barrier/component", "python"): 0.05, ("conservative/window-threads", "python"): 0.3,
    ("conservative/window-processes", "python"): -0.08, ("tick-barrier/component", "native"): 0.03,
    ("conservative/window-threads", "native"): -0.2,
}  # fmt: skip
#: The shape each engine's model is validated on as if held out (prediction.csv's validation), and the worker counts
#: the model is priced at.
HELD_OUT = {"python": 100.0, "native": 10.0}
WORKERS = (1, 2, 16, 64)


def _prediction(measured: dict[tuple[str, str, float, int], float] | None = None) -> pd.DataFrame:
    """The model of :func:`_sweep`'s cells: off by :data:`ERRORS` at 2 workers (and at ``measured``'s extra points,
    (label, engine, work, workers) -> loop speedup)."""
    works = {"python": (1.0, 10.0, 100.0, 1000.0), "native": (0.1, 1.0, 10.0)}
    rows = []
    for (label, engine), loops in LOOPS.items():
        strategy, variant = label.split("/")
        for work in works[engine]:
            for p in WORKERS:
                loop = (measured or {}).get((label, engine, work, p), loops[work] if p == 2 else 0.9 * p)
                rows.append({"workload": "phold", "shape": f"wide.work_us{work:g}", "strategy": strategy,
                             "variant": variant, "preset": "here" if engine == "python" else "cxx", "workers": p,
                             "order": "gem5", "work": "gil-release", "engine": engine,
                             "model": loop * (1 + ERRORS[(label, engine)]) if p > 1 else 1.0,
                             "validation": "held-out" if work == HELD_OUT[engine] else "sweep"})  # fmt: skip
    return pd.DataFrame(rows)


def _sweep(extra: Sequence[dict[str, object]] = ()) -> pd.DataFrame:
    rows = list(extra)
    works = {"python": (1.0, 10.0, 100.0, 1000.0), "native": (0.1, 1.0, 10.0)}
    for engine, values in works.items():
        tags = ("native",) if engine == "native" else ()
        for work in values:
            shape = f"wide.work_us{work:g}"
            common = {"shape": shape, "family": "wide", "engine": engine, "param_work_us": work, "as_expected": True,
                      "efficiency": 0.5, "us_per_event": 10.0, "overhead_us_per_event": 1.0}
            rows.append(summary_row("sequential", 1, 1.0, tags=tags, loop_speedup=1.0, **common))
            for (label, on), loops in LOOPS.items():
                if on == engine:
                    loop = loops[work]
                    rows.append(summary_row(label, 2, 0.8 * loop, tags=tags, loop_speedup=loop,
                                            loop_speedup_lo=loop * 0.95, loop_speedup_hi=loop * 1.05,
                                            bound_speedup=2.0, **common))  # fmt: skip
    return make_summary(rows, prepare=True)


def _page1_sentence(sentences: list[str], label: str) -> str:
    return next(s for s in sentences if s.startswith(f"Page 1's figures for {label} "))


def test_page1_answer_csv_and_findings_give_the_same_break_even_and_best_speedup() -> None:
    df = _sweep()
    table = answer_table(df, pd.DataFrame())
    csv = pd.read_csv(io.StringIO(table.to_csv(index=False)), dtype=str, keep_default_na=False)
    page = html.unescape(answer_html(table, []))
    sentences = findings(df, "work_us", None)
    columns = [c for c in table.columns if SPEED.match(c)]
    assert columns, "the sweep has speedup columns"
    checked = 0
    for label in sorted({label for label, _ in LOOPS}):
        row = table.set_index("strategy variant").loc[label]
        from_csv = csv.set_index("strategy variant").loc[label]
        quoted = _page1_sentence(sentences, label)
        for column in columns:
            cell = str(row[column])
            assert from_csv[column] == cell and cell in page
            if cell[0].isdigit():
                assert f"{column}: {cell}" in quoted
                loop = float(cell.split(" ")[0])
                engine, work = SPEED.match(column).group(1), float(SPEED.match(column).group(2))
                assert loop == round(LOOPS[(label, engine)][work], 2)  # the loop speedup, not end to end
                assert f"e2e {0.8 * loop:.2f}" in cell  # and the end-to-end one beside it
                checked += 1
        for engine in ("python", "native"):
            header = _column(table, engine, "break-even")
            cell = str(row[header])
            assert from_csv[header] == cell
            if cell != "-":
                assert f"{header}: {cell}" in quoted
                # the per-family finding quotes the same crossing
                tag = " [native]" if engine == "native" else ""
                family = next(s for s in sentences if s.startswith(f"{label}{tag} on phold/wide:"))
                found = re.search(r"work_us (?:breaks even at about|already faster at) ([0-9.]+)", family)
                assert found and found.group(1) in cell
                checked += 1
    assert checked >= 10


def test_a_column_never_shows_a_figure_from_another_work_per_event() -> None:
    df = _sweep()
    df = df[~((df["param_work_us"] == 1000.0) & (df["base_label"] == "conservative/window-processes"))]
    table = answer_table(df, pd.DataFrame()).set_index("strategy variant")
    assert ("python", 1000.0, 1000.0) in speed_columns(df)
    column = next(c for c in table.columns if c.startswith("python engine, 2 workers, 1000 µs per event"))
    assert column.endswith("shapes phold/wide.work_us1000")  # the header names the shapes its cells come from
    assert table.loc["conservative/window-processes", column] == "- (no counted 2-worker cell at 1000 µs)"


def test_the_legend_defines_every_shorthand_on_page_1_and_each_header_names_measure_workers_and_cost() -> None:
    for term in ("here", "cxx", "counted cell", "loop speedup", "end to end", "e2e", "correct?", "exact", "LIFO",
                 "promise", "gem5-like cost", "held-out", "not citable", "break-even", "[95% interval]"):  # fmt: skip
        assert term in LEGEND, term
    table = answer_table(_sweep(), _prediction())
    for column in table.columns[4:]:
        assert re.match(r"^(python|native) engine", column), column
        assert "µs per event" in column or "break-even: µs per event" in column, column  # its cost
        assert re.search(r"2 workers|2-worker|16 and 64 workers", column), column  # its worker count
        assert "loop speedup" in column, column  # its measure
        for shorthand in ("2w", "@", "P16", "pts"):
            assert shorthand not in column, column
    for cell in table.astype(str).values.ravel():
        assert not re.search(r"\bP ?\d|\bpts\b|\berr\b", cell), cell


def test_a_model_figure_without_a_validation_point_is_marked_not_validated() -> None:
    from test_answer import _prediction as answer_prediction  # its sweep's model: 1 sweep point per preset
    from test_answer import _sweep as answer_sweep

    pred = answer_prediction()
    pred.loc[pred["preset"] == "cxx", "validation"] = "fit"  # the native model's only measured point was fitted
    table = answer_table(answer_sweep(), pred)
    row = table.set_index("strategy variant").loc["conservative/window-threads"]
    native, python = row[_column(table, "native", "model")], row[_column(table, "python", "model")]
    assert native.startswith(f"{NOT_CITABLE} (no measured native point at 2+ workers off the fit")
    assert native.endswith("; not validated")
    # validated at 2 workers on no held-out shape: its 16 and 64 workers are no answer either
    assert python.startswith(f"{NOT_CITABLE} (no held-out python point): model 16 workers 13x, 64 workers 23x")


def test_a_runs_best_cell_from_a_strategy_marked_no_says_so() -> None:
    """The runs' finding never calls a strategy best without the 'no' its row gives it on that run."""
    from test_answer_runs import _prediction as runs_prediction  # one real run, conservative best at 1.2
    from test_answer_runs import _trace

    from tickpar.report import render as report
    from tickpar.report.answer import RUN_COLUMNS, answer_findings

    rows = [_trace("sequential", 1, 1.0), _trace("tick-barrier/component", 2, 1.5, seed=1),
            _trace("tick-barrier/component", 2, float("nan"), seed=2, verdict="race", timing_status="not timed")]
    df = report.prepare(pd.DataFrame(rows))
    table = answer_table(df, runs_prediction())
    run = table[table[RUN_COLUMNS[0]] != "-"].iloc[0]
    assert "tick-barrier no 1/2" in run[RUN_COLUMNS[1]]
    assert "tick-barrier is 'no' on this run" in run[RUN_COLUMNS[2]]
    real = next(text for text, page in answer_findings(df, runs_prediction(), table) if page == "traces")
    assert "tick-barrier is 'no' on this run" in real


def test_page1_answer_csv_and_findings_give_the_same_model_error() -> None:
    """THE model error (model_error.model_error): beside each model on page 1, in answer.csv, in the findings' model
    error sentence and in the per-family speed findings, the same words and numbers; no other model error is given."""
    df, pred = _sweep(), _prediction()
    table = answer_table(df, pred)
    csv = pd.read_csv(io.StringIO(table.to_csv(index=False)), dtype=str, keep_default_na=False)
    page = html.unescape(answer_html(table, []))
    sentences = findings(df, "work_us", pred)
    points = recompute(df, pred)
    for (label, engine), error in ERRORS.items():
        strategy, variant = label.split("/")
        err = model_error(points, engine, strategy, variant)
        assert err is not None and err.median == pytest.approx(abs(error)) and err.held_out == pytest.approx(err.median)
        assert (err.low, err.top, err.scope) == (2, 2, "work_us>=10")
        cell = table.set_index("strategy variant").loc[label, _column(table, engine, "model")]
        assert err.text() in cell and cell in page
        assert csv.set_index("strategy variant").loc[label, _column(table, engine, "model")] == cell
        pooled = next(s for s in sentences if s.startswith(f"Model error, {engine} engine"))
        assert f"{label}: {err.text()}" in pooled
        tag = " [native]" if engine == "native" else ""
        family = next(s for s in sentences if s.startswith(f"{label}{tag} on phold/wide:"))
        assert f"model {err.text()}" in family
    assert not [s for s in sentences if "rel_error|" in s or "prediction error" in s]  # no second definition
    # model_error.csv's pooled row at P = 2 (work_us>=10) is the pooled error the sentence gives
    from tickpar.report.model_error import model_error_table

    csv_rows = model_error_table(df, pred)
    for engine in ("python", "native"):
        row = csv_rows[(csv_rows["scope"] == "work_us>=10") & (csv_rows["strategy"] == "all")
                       & (csv_rows["engine"] == engine) & (csv_rows["workers"] == 2)]  # fmt: skip
        pooled = model_error(points, engine)
        assert pooled is not None and sorted(row["points"]) and sum(row["points"]) == pooled.points


def test_a_model_figure_is_an_answer_only_where_validated_held_out_within_target_and_measured() -> None:
    """Measured at 2 workers only: every model figure at 16 and 64 workers is greyed, with its reason, its held-out
    error and the worker count measured; measured up to 64 on a held-out shape within the target: shown."""
    table = answer_table(_sweep(), _prediction()).set_index("strategy variant")
    python = _column(table, "python", "model")
    for label, reason in (("tick-barrier/component", "beyond the 2 workers measured"),
                          ("conservative/window-threads", "held-out error above 10%")):  # fmt: skip
        cell = table.loc[label, python]
        assert cell.startswith(f"{NOT_CITABLE} (") and reason in cell.split("): model ")[0]
        assert "held-out" in cell and "at 2 workers" in cell
    # tick-barrier (5% off) measured at 16 and 64 workers too, its held-out shape included
    loops = {("tick-barrier/component", "python", w, p): 0.5 * p for w in (10.0, 100.0, 1000.0) for p in (16, 64)}
    extra = [summary_row("tick-barrier/component", p, loop, shape=f"wide.work_us{w:g}", family="wide",
                         engine="python", param_work_us=w, loop_speedup=loop, as_expected=True)
             for (_label, _engine, w, p), loop in loops.items()]  # fmt: skip
    df, pred = _sweep(extra), _prediction(loops)
    table = answer_table(df, pred)
    rows = table.set_index("strategy variant")
    shown = rows.loc["tick-barrier/component", _column(table, "python", "model")]
    assert not shown.startswith(NOT_CITABLE) and "error 5% over 9 points at 2-64 workers" in shown
    greyed = rows.loc["conservative/window-threads", _column(table, "python", "model")]
    assert greyed.startswith(NOT_CITABLE)
    page = answer_html(table, [])
    assert page.count('<td class="not-citable">') == sum(c.startswith(NOT_CITABLE) for c in table.values.ravel())
    assert html.escape(shown) in page and f'<td class="not-citable">{html.escape(shown)}' not in page
    fig = answer_pdf(table, [])
    cells = [c.get_text() for ax in fig.axes for tab in ax.tables for c in tab.get_celld().values()]
    grey = [t for t in cells if t.get_color() == GREY]
    assert grey and all(t.get_text().startswith(NOT_CITABLE) for t in grey)
    assert len(grey) == sum(c.startswith(NOT_CITABLE) for c in table.drop(columns="scope").values.ravel())
    plt.close(fig)
    # the findings cite no greyed figure: the model finding names only the shown one's, and says the rest are grey
    model = next(text for text, page in answer_findings(df, pred, table) if page == "scaling")
    assert "(tick-barrier/component)" in model and "greyed out on page 1" in model
    assert "conservative/window-threads" not in model.split("greyed out")[0]


def _runs(costs: dict[str, float]) -> list[dict[str, object]]:
    """A real gem5 run per ``costs`` item (shape -> own µs per event): sequential and tick-barrier on the native
    engine, at 2 workers."""
    rows = []
    for shape, us in costs.items():
        common = {"workload": "gem5trace", "shape": shape, "family": shape, "engine": "native", "param_work_us": 0.0,
                  "param_trace": f"examples/gem5-traces/{shape}.events.txt.gz", "event_cost_us": us,
                  "event_cost": f"{us} us/event: host time of {shape}.untraced.stats.txt.gz (untraced run)",
                  "events": 1000, "as_expected": True}  # fmt: skip
        rows.append(summary_row("sequential", 1, 1.0, tags=("native",), loop_speedup=1.0, **common))
        rows.append(summary_row("tick-barrier/component", 2, 1.1, tags=("native",), loop_speedup=1.2,
                                loop_speedup_lo=1.1, loop_speedup_hi=1.3, **common))  # fmt: skip
    return rows


def test_the_gem5_like_cost_is_the_real_runs_own_on_every_page_and_their_finding_leads() -> None:
    costs = {"tg-random-2core": 1.37, "memtest-2-2-1": 0.89, "garnet-mesh-16node": 2.19}
    df = _sweep(_runs(costs))
    cost = gem5_like_cost(df)
    assert (cost.us, cost.low, cost.high) == (1.37, 0.89, 2.19) and set(cost.runs) == set(costs)
    table = answer_table(df, pd.DataFrame())
    first = next(c for c in table.columns if SPEED.match(c))
    assert first.startswith("native engine, 2 workers, 1 µs per event (nearest to the gem5-like cost, 1.4 µs)")
    found = answer_findings(df, pd.DataFrame(), table)
    assert found[0][0].startswith("Real gem5 runs (3), each replayed at its own measured cost per event "
                                  "(0.89-2.2 µs): best measured 2-worker loop speedup 1.20 [1.10, 1.30]")
    assert any(text.startswith(f"Best at the gem5-like cost, {cost.text()}, native engine:") for text, _ in found)
    assert "the median own cost of 3 real gem5 runs, 0.89-2.2 µs" in cost.text()
    sentences = findings(df, "work_us", None)
    assert sentences[0] == found[0][0]  # the findings page leads with the same sentence
    assert any(f"{first}: " in s for s in sentences)  # and quotes page 1's column by its header
    # without real runs: the default, said to be one
    plain = gem5_like_cost(_sweep())
    assert plain.us == DEFAULT_US and not plain.runs and "the default" in plain.text()
    header = next(c for c in answer_table(_sweep(), pd.DataFrame()).columns if SPEED.match(c))
    assert header.startswith(f"native engine, 2 workers, {DEFAULT_US:g} µs per event (the gem5-like cost)")


def test_the_docs_define_the_gem5_like_cost_where_the_report_does() -> None:
    from tickpar.plugins.registry import REPO_ROOT

    native = (REPO_ROOT / "docs" / "how-to" / "native-engine.md").read_text()
    traces = (REPO_ROOT / "config" / "gem5-traces.yaml").read_text()
    for text in (native, traces):
        assert "tickpar/report/gem5_cost.py" in text and "hundred nanoseconds" not in text
    assert re.findall(r"x86-hello-\w+\.insert-log\.txt, work_us: ([0-9.]+)\}", traces) == [f"{DEFAULT_US:g}"] * 2


def test_the_runs_findings_say_what_their_rows_say() -> None:
    """Which strategies the real runs' finding calls exact everywhere is read from the runs' rows: each one says
    'yes' on every run, each other one 'no' on some; with no synthetic strategy beyond the baseline, no finding
    claims that only the baseline is exact."""
    from test_answer_runs import _row, _trace

    from tickpar.report import render as report
    from tickpar.report.answer import RUN_COLUMNS, is_run_row

    def memtest(label: str, workers: int, loop: float, **kw: object) -> dict:
        return _row(label, workers, loop, workload="gem5trace", shape="memtest",
                    param_trace="examples/gem5-traces/memtest-2-2-1.events.txt.gz", param_work_us=0.0, **kw)

    rows = [_trace("sequential", 1, 1.0), _trace("tick-barrier/component", 2, 1.3),
            _trace("conservative/window-threads", 2, 1.2, order="canonical"),
            _trace("split/name", 2, float("nan"), verdict="causality", timing_status="not timed"),
            memtest("sequential", 1, 1.0),
            memtest("tick-barrier/component", 2, float("nan"), verdict="race", timing_status="not timed"),
            memtest("conservative/window-threads", 2, 1.1, order="canonical")]  # fmt: skip
    synthetic = [summary_row("sequential", 1, 1.0, engine="native", tags=("native",), loop_speedup=1.0,
                             efficiency=1.0, us_per_event=10.0, overhead_us_per_event=0.0)]  # fmt: skip
    df = report.prepare(pd.concat([pd.DataFrame(rows), pd.DataFrame(synthetic)], ignore_index=True))
    table = answer_table(df, pd.DataFrame())
    runs = table[is_run_row(table)]
    found = answer_findings(df, pd.DataFrame(), table)
    text = found[0][0]
    exact = re.search(r"exact in every checked cell: ([^;]+)", text).group(1).split(", ")
    not_always = re.findall(r"(\S+) \(on ", text.split("not always: ")[1])
    assert exact == ["sequential", "conservative"] and not_always == ["tick-barrier", "split"]
    for strategy in exact:
        assert all(f"{strategy} yes " in r for r in runs[RUN_COLUMNS[1]])
    for strategy in not_always:
        assert any(f"{strategy} no " in r for r in runs[RUN_COLUMNS[1]])
    everything = [t for t, _ in found] + findings(df, "work_us", None)
    assert not [t for t in everything if re.search(r"[Ee]xact in every checked cell: sequential\.", t)]
