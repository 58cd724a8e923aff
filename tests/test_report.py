"""tickpar.report and tickpar.report.speed: counted points, bounds beside speedups, break-even, pages."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from factories import make_summary, summary_row
from helpers import CXX_CALIBRATION

from tickpar.report import render as report
from tickpar.report.appendix import diagnostics
from tickpar.report.data import palette
from tickpar.report.speed import (
    breakeven_points,
    counted,
    fig_breakeven,
    retime_finding,
    speed_findings,
    speedup_table,
    uncounted_finding,
)


def _row(shape: str, label: str, workers: int, work_us: float, speedup: float, **kw: object) -> dict[str, object]:
    columns = {
        "shape": shape, "efficiency": speedup / workers, "us_per_event": 10.0, "overhead_us_per_event": 1.0,
        "param_work_us": work_us, "bound_speedup": 1.0 if workers == 1 else 1.8, "ideal_speedup": float(workers),
    }  # fmt: skip
    return summary_row(label, workers, speedup, **{**columns, **kw})


def _sweep() -> pd.DataFrame:
    """Work 1, 10, 100 us: tick-barrier at 2 workers goes 0.5, 0.8, 1.6; conservative never reaches 1."""
    rows = []
    for work, shape in ((1.0, "fine"), (10.0, "fine.work_us10"), (100.0, "fine.work_us100")):
        rows.append(_row(shape, "sequential", 1, work, 1.0))
        for label, speeds in (("tick-barrier/component", (0.5, 0.8, 1.6)), ("conservative/w", (0.3, 0.4, 0.6))):
            speed = speeds[[1.0, 10.0, 100.0].index(work)]
            rows.append(_row(shape, label, 1, work, 0.9))
            rows.append(_row(shape, label, 2, work, speed, loop_speedup=speed * 1.1, loop_speedup_lo=speed,
                             loop_speedup_hi=speed * 1.2))  # fmt: skip
    return make_summary(rows, prepare=True)


def _prediction() -> pd.DataFrame:
    rows = []
    for preset in ("here", "cxx"):
        for p in (1, 2, 4, 8):
            rows.append({"workload": "phold", "shape": "fine.work_us100", "strategy": "tick-barrier",
                         "variant": "component", "preset": preset, "workers": p, "predicted_speedup": min(p, 1.5),
                         "measured_speedup": 1.76 if p == 2 else None,
                         "rel_error": (1.5 - 1.76) / 1.76 if p == 2 else None, "order": "gem5",
                         "work": "gil-release"})  # fmt: skip
    return pd.DataFrame(rows)


def test_only_exact_uncontended_timed_runs_count() -> None:
    """A point whose timed run was not exact, or that ran under contention, is drawn but never counted."""
    df = _sweep()
    assert len(counted(df)) == len(df)
    df.loc[df.index[4], "timed_exact"] = False
    df.loc[df.index[2], "contended"] = True
    assert len(counted(df)) == len(df) - 2
    assert len(counted(df.drop(columns=["timed_exact", "contended"]))) == len(df)  # the columns may be absent
    text = uncounted_finding(df) or ""  # a timing diagnostic: the appendix says it, not the findings
    assert "2 of 12 timed parallel cells do not count" in text
    assert "1 with a timed run that was not exact" in text and "1 timed under contention" in text
    assert text not in speed_findings(df, pd.DataFrame()) and uncounted_finding(_sweep()) is None


def test_findings_and_table_say_how_many_rounds_were_retimed_and_why() -> None:
    """The report says how many contended rounds were timed again, of which cells and why, and what was lost."""
    df = _sweep()
    assert retime_finding(df) is None  # a summary from before re-timing: nothing to say
    df["n_retimed"], df["retime_reasons"] = 0, ""
    assert "no round was re-timed" in retime_finding(df) and "No cell lost" in retime_finding(df)
    df.loc[df.index[0], ["n_retimed", "retime_reasons"]] = (2, "round 0: CPU available 0.84 before it (< 0.90)")
    df.loc[df.index[2], ["n_retimed", "contended"]] = (1, True)
    line = retime_finding(df)
    assert line.startswith("Timing: 3 contended round(s) of 2 cell(s) were re-timed")
    assert "sequential on phold/fine: round 0: CPU available 0.84 before it (< 0.90)" in line
    assert "1 timed cell(s) still had every round contended" in line
    assert line not in speed_findings(df, pd.DataFrame()) and line in diagnostics(df)  # the appendix's
    table = speedup_table(df)
    assert table.loc[(table["label"] == "sequential") & (table["where"] == "phold/fine"), "re-timed"].item() == 2


def test_findings_give_break_even_best_interval_bound_fraction_and_prediction_error() -> None:
    """Per strategy and family: log-space break-even or 'beyond X', the best loop speedup, of bound, rel error."""
    text = "\n".join(speed_findings(_sweep(), _prediction()))
    tick = next(line for line in text.splitlines() if line.startswith("tick-barrier/component on phold/fine"))
    assert "best loop speedup 1.76x (95% interval 1.60-1.92)" in tick and "98% of its bound 1.80x" in tick
    # the loop speedup (0.88 at 10 µs, 1.76 at 100 µs) crosses 1: the break-even page 1 quotes too
    assert f"breaks even at about {10 ** (1 + 0.12 / 0.88):.3g} (loop speedup crosses 1 at 2 workers)" in tick
    assert "model error 15% over 1 point at 2 workers (work_us>=10)" in tick  # page 1's (model_error.model_error)
    cons = next(line for line in text.splitlines() if line.startswith("conservative/w on phold/fine"))
    assert "break-even beyond 100 (the largest value swept)" in cons


def test_speedup_table_shows_both_speedups_with_intervals_and_achieved_over_bound() -> None:
    table = speedup_table(_sweep())
    row = table[(table["label"] == "tick-barrier/component") & (table["where"] == "phold/fine.work_us100")]
    row = row[row["P"] == 2].iloc[0]
    assert row["speedup [95%]"] == "1.60 [1.44, 1.76]" and row["loop [95%]"] == "1.76 [1.60, 1.92]"
    assert row["bound"] == "1.80" and row["of bound"] == "98%" and row["counted"] == "yes"


def test_breakeven_figure_has_a_log_x_axis() -> None:
    df = _sweep()
    pts = breakeven_points(df)
    assert sorted(pts["x"].unique()) == [1.0, 10.0, 100.0]
    fig = fig_breakeven(df, palette(df))
    assert {ax.get_xscale() for ax in fig.axes if ax.has_data()} == {"log"}
    plt.close(fig)


def test_render_writes_every_registered_page_and_a_new_page_is_one_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PDF has one page per registry entry, in order; adding a Page adds its figure file and PDF page."""
    plt.close("all")
    summary = tmp_path / "summary.csv"
    _sweep().to_csv(summary, index=False)
    prediction = tmp_path / "prediction.csv"
    _prediction().to_csv(prediction, index=False)

    def extra_page(data: report.ReportData) -> plt.Figure:
        fig, ax = plt.subplots()
        ax.plot([1, 2], [len(data.df), len(data.prediction)])
        return fig

    assert report.PDF_PAGES[:2] == ("answer", "findings") and report.PDF_PAGES[-1] == "appendix"
    assert "scaling" in report.FIGURES
    kept = [p for p in report.PAGES if p.name in ("findings", "scaling", "speedup table")]  # a fast subset
    monkeypatch.setattr(report, "PAGES", [*kept, report.Page("extra", extra_page)])
    names = [p.name for p in report.PAGES]
    figures = [p.name for p in report.PAGES if p.figure]
    outputs: dict[str, str | Path] = {name: tmp_path / f"{name}.png" for name in figures}
    outputs.update(findings=tmp_path / "f.html", environment=tmp_path / "e.html", pdf=tmp_path / "r.pdf")
    calibration = tmp_path / "calibration.json"  # the environment page lists the native costs beside their floors
    calibration.write_text(json.dumps(CXX_CALIBRATION))
    pages = report.render(summary, outputs, prediction=prediction, calibration=calibration)
    assert list(dict.fromkeys(pages)) == names
    for name in figures:
        assert Path(outputs[name]).stat().st_size > 1000, name
    assert names == ["findings", "scaling", "speedup table", "extra"]
    assert "of its bound" in Path(outputs["findings"]).read_text()
    env = Path(outputs["environment"]).read_text()
    assert "<th>native barrier_ns</th><td>500.0 ns = 5.0 x pingpong</td>" in env
    assert "<th>native event_ns</th><td>80.0 ns = 2.0 x heap</td>" in env


def test_the_environment_page_takes_an_older_calibration_or_none(tmp_path: Path) -> None:
    """A calibration file from before pingpong_ns and heap_ns shows n/a beside its costs; no file, no rows."""
    from tickpar.report.environment import calibration_rows

    old = tmp_path / "calibration.json"
    old.write_text(json.dumps({k: v for k, v in CXX_CALIBRATION.items() if k not in ("pingpong_ns", "heap_ns")}))
    rows = dict(calibration_rows(old))
    assert rows["native pingpong_ns"] == "n/a" and rows["native mutex_ns"] == "20.0 ns = n/a x pingpong"
    assert rows["native calibration"].startswith(str(old))
    assert calibration_rows(None) == [] and calibration_rows(tmp_path / "absent.json") == []


def test_a_measured_speedup_above_its_bound_is_a_listed_defect() -> None:
    """A crafted summary: one counted cell's loop speedup above its bound is listed in the findings; none, none."""
    from tickpar.report.speed import bound_defects, bound_defects_finding

    df = _sweep()
    assert bound_defects(df).empty
    assert "No counted cell's measured speedup is above its bound" in (bound_defects_finding(df) or "")
    one = df.index[(df["label"] == "tick-barrier/component") & (df["workers"] == 1)][0]
    df.loc[one, ["speedup", "speedup_lo"]] = [1.2, 1.1]  # 1 worker: the bound is 1
    two = df.index[(df["label"] == "conservative/w") & (df["workers"] == 2)][0]
    df.loc[two, ["loop_speedup", "loop_speedup_lo", "loop_speedup_hi"]] = [1.9, 1.78, 2.0]  # the bound is 1.8
    assert list(bound_defects(df)["label"]) == ["tick-barrier/component"]  # an interval that reaches it: noise
    df.loc[two, "loop_speedup_lo"] = 1.85
    bad = bound_defects(df)
    assert list(bad["label"]) == ["tick-barrier/component", "conservative/w"]
    assert bad["achieved"].tolist() == pytest.approx([1.2, 1.9])
    text = "\n".join(diagnostics(df))  # the appendix lists the defects
    assert "DEFECT: 2 counted cell(s) measured above their bound" in text
    assert "1.20x against 1.00x" in text and "1.90x against 1.80x" in text
    df.loc[two, "contended"] = True  # a point that does not count is not a defect of the bound
    assert len(bound_defects(df)) == 1


def test_scaling_page_marks_points_above_their_bound() -> None:
    """The scaling figure draws the bound line and a red cross on a measured point above it."""
    from tickpar.report.speed import fig_scaling

    pred = _prediction()
    pred["bound"] = [1.0, 1.7, 3.0, 5.0, None, None, None, None]  # measured 1.76 at P=2 is above 1.7
    fig = fig_scaling(_sweep(), pred, {"tick-barrier/component": "C0"})
    crosses = [c for ax in fig.axes for c in ax.collections if c.get_offsets().shape[0] and
               tuple(c.get_facecolor()[0][:3]) == (1.0, 0.0, 0.0)]  # fmt: skip
    assert len(crosses) == 1 and crosses[0].get_offsets()[0].tolist() == [2.0, 1.76]
    plt.close(fig)


def test_scaling_lines_name_their_validation_error_and_range() -> None:
    """A model line with a measured point is labelled with its median |rel_error| and the largest measured P."""
    from tickpar.report.speed import fig_scaling, validation

    pred = _prediction()
    here = pred[pred["preset"] == "here"]
    err, low, top, kind = validation(here)
    assert (low, top, kind) == (2, 2, "sweep") and err == pytest.approx(abs((1.5 - 1.76) / 1.76))
    assert validation(pred[pred["preset"] == "cxx"].assign(measured_speedup=None, rel_error=None)) is None
    fig = fig_scaling(_sweep(), pred, {"tick-barrier/component": "C0"})
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    texts = [t.get_text().replace("\n", " ") for legend in legends for t in legend.get_texts()]
    # page 1's model error (model_error.model_error): the same words; cxx has no native measurement to be judged by
    assert "tick-barrier/component here model: error 15% over 1 point at 2 workers (work_us>=10); no held-out " \
        "point" in texts
    assert "tick-barrier/component cxx model: not validated" in texts
    assert not [t for ax in fig.axes for t in ax.texts]  # no label drawn on the plot, where labels collided
    plt.close(fig)
    # A fitted point is no validation; a line measured only on a held-out shape says so.
    fitted = here.assign(validation=["fit", "sweep", "none", "none"][: len(here)])
    assert validation(fitted)[1:] == (2, 2, "sweep")
    held = here.assign(validation="held-out")
    assert validation(held)[3] == "held-out"
    assert validation(here.assign(validation="fit")) is None


def test_scaling_legends_overlap_no_panel_and_no_other_legend() -> None:
    """The scaling page's labels were drawn at line ends and collided; each panel's legend now sits clear of
    every panel and every other legend."""
    from tickpar.report.speed import fig_scaling

    pred = pd.concat([_prediction().assign(shape=shape) for shape in ("fine", "fine.work_us10", "fine.work_us100")])
    df = _sweep().assign(family=_sweep()["shape"])  # three families: three panels
    fig = fig_scaling(df, pred, {"tick-barrier/component": "C0"})
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.get_legend() is not None]
    assert len(panels) == 3
    boxes = [ax.get_legend().get_window_extent(renderer) for ax in panels]
    for i, box in enumerate(boxes):
        assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in panels), i
        assert not any(box.overlaps(other) for j, other in enumerate(boxes) if j != i), i
    plt.close(fig)
