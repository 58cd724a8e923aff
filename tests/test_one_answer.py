"""One figure, one number: the break-even and the best 2-worker speedup that page 1's table, answer.csv and the
findings page give for a strategy variant are the same numbers (one computation each, quoted three times)."""

from __future__ import annotations

import html
import io
import re

import pandas as pd
from factories import make_summary, summary_row

from tickpar.report.answer import answer_table, speed_columns
from tickpar.report.answer_page import LEGEND, answer_html
from tickpar.report.findings import findings

#: (label, engine) -> loop speedup at 2 workers per work per event (µs); the end-to-end speedup is 0.8 of it, so a
#: page quoting the other measure would show another number.
LOOPS: dict[tuple[str, str], dict[float, float]] = {
    ("tick-barrier/component", "python"): {1.0: 0.4, 10.0: 0.9, 100.0: 1.5, 1000.0: 1.9},
    ("conservative/window-threads", "python"): {1.0: 0.6, 10.0: 1.1, 100.0: 1.7, 1000.0: 1.85},
    ("conservative/window-processes", "python"): {1.0: 0.3, 10.0: 0.7, 100.0: 1.2, 1000.0: 1.8},
    ("tick-barrier/component", "native"): {0.1: 0.8, 1.0: 1.4, 10.0: 1.8},
    ("conservative/window-threads", "native"): {0.1: 1.1, 1.0: 1.6, 10.0: 1.9},
}


def _sweep() -> pd.DataFrame:
    rows = []
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
    columns = [c for c in table.columns if " 2w @" in c]
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
                engine, work = column.split(" ")[0], float(re.search(r"@([0-9.]+) µs", column).group(1))
                assert loop == round(LOOPS[(label, engine)][work], 2)  # the loop speedup, not end to end
                assert f"e2e {0.8 * loop:.2f}" in cell  # and the end-to-end one beside it
                checked += 1
        for engine in ("python", "native"):
            cell = str(row[f"{engine} break-even"])
            assert from_csv[f"{engine} break-even"] == cell
            if cell != "-":
                assert f"{engine} break-even: {cell}" in quoted
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
    assert table.loc["conservative/window-processes", "python 2w @1000 µs"] == (
        "- (no counted 2-worker cell at 1000 µs)"
    )


def test_the_legend_defines_every_shorthand_on_page_1() -> None:
    for term in ("2w", "@X µs", "P16", "pts", "here", "cxx", "counted cell", "loop", "end to end", "e2e",
                 "correct?", "exact", "LIFO", "promise"):  # fmt: skip
        assert term in LEGEND, term


def test_a_model_figure_without_a_validation_point_is_marked_not_validated() -> None:
    from test_answer import _prediction as answer_prediction  # its sweep's model: 1 sweep point per preset
    from test_answer import _sweep as answer_sweep

    pred = answer_prediction()
    pred.loc[pred["preset"] == "cxx", "validation"] = "fit"  # the native model's only measured point was fitted
    row = answer_table(answer_sweep(), pred).set_index("strategy variant").loc["conservative/window-threads"]
    assert row["native model P16, P64"].startswith("not validated: no measured native point")
    assert "not citable" in row["native model P16, P64"]
    assert row["python model P16, P64"] == "P16 13x, P64 23x; err 70%, 1 pts, P 2"  # validated: shown


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
