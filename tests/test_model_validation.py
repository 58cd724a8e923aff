"""The prediction model's validation (issue #17): held-out shapes, overheads fitted from 1-worker runs, the bound
judged with the speedup's interval, and the model's error recomputed from summary.csv and prediction.csv alone."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from factories import make_summary, summary_row
from helpers import CALIBRATION, independent_dag  # tests/helpers.py (tests/ is on sys.path: rootdir conftest)

from tickpar.perf.predict.prediction import (
    PREDICTION_COLUMNS,
    measured_speedups,
    model_rows,
    one_worker_fits,
    prediction_table,
    shape_bounds,
)
from tickpar.pipeline.sweep import SweepError, load_config_file, load_sweep
from tickpar.report.model_error import COLUMNS, model_error_table, recompute
from tickpar.runner import resolve_cell

REPO = Path(__file__).resolve().parents[1]
SMALL = {"cores": 4, "l2_banks": 2, "requests_per_core": 6, "link_latency": 2000, "work_us": 100}


# -- held-out shapes in the sweep ---------------------------------------------------------------------
def _config(**sweep: object) -> dict:
    config = load_config_file(REPO / "config" / "test.yaml")
    entry = config["workloads"]["phold"]
    entry["sweep"] = [dict(entry["sweep"]), {"base": "tiny", "param": "lps", "values": [8], **sweep}]
    return config


def test_held_out_sweep_makes_its_own_family_timed_only_at_its_workers() -> None:
    """A held_out sweep with fixed params: named {base}.{param}{value}.{key}{value}, family {base}.{param}{value},
    timed, flagged held_out in the manifest; no correctness-only cells."""
    sweep = load_sweep(_config(params={"work_us": 1}, held_out=True))
    held = [c for c in sweep.cells if c.held_out]
    assert held and {c.shape for c in held} == {"tiny.lps8.work_us1"}
    assert {c.family for c in held} == {"tiny.lps8"}
    assert all(c.timed for c in held) and all(c.params["lps"] == 8 and c.params["work_us"] == 1 for c in held)
    assert all(row["held_out"] == (row["shape"] == "tiny.lps8.work_us1") for row in sweep.manifest())
    plain = [c for c in sweep.cells if c.shape.startswith("tiny.work_us")]
    assert plain and not any(c.held_out for c in plain) and {c.family for c in plain} == {"tiny"}


def test_held_out_sweep_bad_config_is_one_line() -> None:
    with pytest.raises(SweepError, match=r"params: 'lps' is the swept param"):
        load_sweep(_config(params={"lps": 3}, held_out=True))
    with pytest.raises(SweepError, match="held_out"):
        load_sweep(_config(held_out="yes"))
    with pytest.raises(SweepError, match="nope"):
        load_sweep(_config(params={"nope": 1}))


# -- 1-worker fits and the model priced again -----------------------------------------------------------
def _record() -> dict:
    spec = resolve_cell("multicore", dict(SMALL), "sequential", {}, 1, 1).spec
    cells = [{"strategy": "conservative", "variant": "wt", "options": {"sync": "window", "backend": "threads"},
              "order": "canonical", "work": "gil-release"},
             {"strategy": "tick-barrier", "variant": "component", "options": {}, "order": "gem5",
              "work": "gil-release"}]  # fmt: skip
    return shape_bounds("multicore", "small", spec, cells, CALIBRATION, (1, 2), "cal.json", recordings=1)


def _row(*, strategy: str, workers: int, variant: str = "default", **kw: object) -> dict:
    label = strategy if variant == "default" else f"{strategy}/{variant}"
    columns = {"workload": "multicore", "shape": "small", "events": 1000, "loop_speedup": 1.0, "held_out": False}
    return summary_row(label, workers, 1.0, **{**columns, **kw})


def _sweep() -> pd.DataFrame:
    rows = [
        _row(cell="seq-c", strategy="sequential", order="canonical", workers=1, time_loop_median_s=0.100),
        _row(cell="seq-g", strategy="sequential", order="gem5", workers=1, time_loop_median_s=0.100),
        # 1 worker: 5 ms more than its baseline over 1000 events -> o_event 5 µs
        _row(cell="c1", strategy="conservative", variant="wt", order="canonical", workers=1,
             time_loop_median_s=0.105, baseline_cell="seq-c", loop_speedup=0.95),
        _row(cell="c2", strategy="conservative", variant="wt", order="canonical", workers=2,
             time_loop_median_s=0.070, baseline_cell="seq-c", loop_speedup=1.4, loop_speedup_lo=1.3,
             loop_speedup_hi=1.5),
        _row(cell="t1", strategy="tick-barrier", variant="component", order="gem5", workers=1,
             time_loop_median_s=0.090, baseline_cell="seq-g", loop_speedup=1.11, loop_speedup_lo=0.98,
             loop_speedup_hi=1.2),
    ]  # fmt: skip
    return make_summary(rows)


def test_one_worker_fit_is_the_per_event_loop_time_beyond_the_baseline() -> None:
    """Only conservative (whose 1-worker run is its LP machinery) is fitted; tick-barrier at 1 worker runs the
    plain loop, so its 1-worker run fits nothing.  Contended or other workloads' cells are not fitted on."""
    fits = one_worker_fits(_sweep(), "multicore")
    assert set(fits) == {("conservative", "wt", "canonical", "gil-release", "python")}
    fit = fits[("conservative", "wt", "canonical", "gil-release", "python")]
    assert fit["o_event_s"] == pytest.approx(5e-6) and "1 worker" in fit["source"] and fit["shapes"] == ["small"]
    assert one_worker_fits(_sweep(), "phold") == {}
    contended = _sweep()
    contended.loc[contended["cell"] == "c1", "contended"] = True
    assert one_worker_fits(contended, "multicore") == {}


def test_a_summary_with_nothing_timed_yet_fits_nothing() -> None:
    """Before any shape is timed (bench/scaling.py writes its tables from the start) no row counts: no fit,
    and no row comes back from nowhere (pandas gives an empty frame the index of a Series assigned to it)."""
    untimed = _sweep().assign(speedup=math.nan, loop_speedup=math.nan, workers=[1, 1, 1, 2, 1])
    untimed["workers"] = untimed["workers"].astype(float)
    assert one_worker_fits(untimed, "multicore") == {}
    assert measured_speedups(untimed).empty


def test_config_validation_needs_no_snakemake_and_fills_the_same_defaults(monkeypatch, tmp_path: Path) -> None:
    """The sweep's defaults come from the schema through jsonschema alone (a machine running bench/scaling.py
    has no Snakemake); they are the ones ``snakemake.utils.validate(..., set_default=True)`` fills in."""
    import sys

    from snakemake.utils import validate

    from tickpar.pipeline.sweep import config_schema, validate_config

    config = load_config_file(REPO / "config" / "config.yaml")
    theirs = copy.deepcopy(config)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(config_schema()))
    validate(theirs, str(schema), set_default=True)
    mine = copy.deepcopy(config)
    monkeypatch.setitem(sys.modules, "snakemake", None)  # import snakemake -> ImportError
    monkeypatch.setitem(sys.modules, "snakemake.utils", None)
    validate_config(mine)
    assert mine == theirs and mine != config  # defaults were filled in, the same ones
    with pytest.raises(SweepError, match="workers"):
        validate_config({**copy.deepcopy(config), "workers": "two"})


def test_model_priced_with_the_fit_names_it_and_the_bound_does_not_move() -> None:
    record = json.loads(json.dumps(_record(), default=float))  # as the table step reads it back
    fits = one_worker_fits(_sweep(), "multicore")
    before = pd.DataFrame(model_rows(record)).set_index(["strategy", "preset", "workers"])
    after = pd.DataFrame(model_rows(record, fits)).set_index(["strategy", "preset", "workers"])
    key = ("conservative", "here", 1)
    assert after.loc[key, "predicted_speedup"] < before.loc[key, "predicted_speedup"]  # 5 µs > the 1 µs calibrated
    assert after.loc[key, "bound_speedup"] == before.loc[key, "bound_speedup"] == 1.0
    assert "fit:" in json.loads(after.loc[key, "model_sources"])["o_event"]
    assert "cal.json" in json.loads(before.loc[key, "model_sources"])["o_event"]
    tb = ("tick-barrier", "here", 2)
    assert after.loc[tb, "predicted_speedup"] == pytest.approx(before.loc[tb, "predicted_speedup"])
    # The record written by the shape job gives the same rows as model_rows on it.
    assert pd.DataFrame(record["rows"]).equals(pd.DataFrame(model_rows(record)))


def test_prediction_table_validation_and_the_bound_judged_with_the_interval(tmp_path: Path) -> None:
    path = tmp_path / "small.json"
    path.write_text(json.dumps(_record(), default=float))
    held = tmp_path / "held.json"
    record = _record()
    record["shape"] = "held"
    held.write_text(json.dumps(record, default=float))
    summary = _sweep()
    extra = _row(cell="h2", shape="held", strategy="conservative", variant="wt", order="canonical", workers=2,
                 time_loop_median_s=0.07, baseline_cell="seq-c", loop_speedup=1.3, held_out=True)  # fmt: skip
    summary = pd.concat([summary, pd.DataFrame([extra])], ignore_index=True)
    table = prediction_table(summary, [path, held])
    assert tuple(table.columns) == PREDICTION_COLUMNS
    here = table[table["preset"] == "here"].set_index(["shape", "strategy", "workers"])
    assert here.loc[("small", "conservative", 1), "validation"] == "fit"
    assert here.loc[("small", "conservative", 2), "validation"] == "sweep"
    assert here.loc[("held", "conservative", 2), "validation"] == "held-out"
    assert here.loc[("held", "conservative", 1), "validation"] == "none"
    # tick-barrier at 1 worker: 1.11x against a bound of 1, but its interval reaches 0.98: not a defect.
    tb = here.loc[("small", "tick-barrier", 1)]
    assert tb["validation"] == "sweep" and bool(tb["above_bound_point"]) and not bool(tb["above_bound"])
    assert (tb["measured_lo"], tb["measured_hi"]) == (pytest.approx(0.98), pytest.approx(1.2))
    # With the whole interval above the bound it is one.
    summary.loc[summary["cell"] == "t1", "loop_speedup_lo"] = 1.05
    tb = prediction_table(summary, [path]).set_index(["preset", "strategy", "workers"]).loc[("here", "tick-barrier", 1)]
    assert bool(tb["above_bound"])
    # Without an interval the point decides.
    summary = summary.drop(columns=["loop_speedup_lo", "loop_speedup_hi"])
    tb = prediction_table(summary, [path]).set_index(["preset", "strategy", "workers"]).loc[("here", "tick-barrier", 1)]
    assert bool(tb["above_bound"]) and math.isnan(tb["measured_lo"])


# -- the error recomputed ---------------------------------------------------------------------------------
def _pair() -> tuple[pd.DataFrame, pd.DataFrame]:
    summary, pred = [], []
    points = (("tick-barrier", 1.6, 1.8, 100), ("tick-barrier", 1.0, 1.1, 10), ("tick-barrier", 0.5, 1.0, 1),
              ("conservative", 1.5, 1.2, 100), ("conservative", 1.25, 1.5, 300))  # fmt: skip
    for i, (strategy, measured, model, work_us) in enumerate(points):
        shape = f"s{i}"
        for seed, jitter in ((1, 0.0), (2, 0.2), (3, -0.2)):  # the median over seeds is the measurement
            summary.append(_row(cell=f"{shape}-{seed}", shape=shape, strategy=strategy, order="gem5", workers=2,
                                seed=seed, loop_speedup=measured + jitter, param_work_us=work_us))  # fmt: skip
        summary.append(_row(cell=f"{shape}-x", shape=shape, strategy=strategy, order="gem5", workers=2, seed=4,
                            loop_speedup=9.0, contended=True, param_work_us=work_us))  # fmt: skip
        pred.append({"workload": "multicore", "shape": shape, "strategy": strategy, "variant": "default",
                     "order": "gem5", "work": "gil-release", "workers": 2, "preset": "here", "model": model,
                     "rel_error": (model - measured) / measured, "validation": "sweep"})  # fmt: skip
    return pd.DataFrame(summary), pd.DataFrame(pred)


def test_model_error_is_recomputed_from_the_two_tables_per_strategy() -> None:
    summary, pred = _pair()
    pts = recompute(summary, pred)
    assert len(pts) == 5 and pts["measured_again"].tolist() == pytest.approx([1.6, 1.0, 0.5, 1.5, 1.25])
    table = model_error_table(summary, pred)
    assert tuple(table.columns) == COLUMNS
    row = table.set_index(["scope", "strategy"])
    tb = row.loc[("work_us>=10", "tick-barrier")]
    assert tb["points"] == 2 and tb["median_abs_rel_error"] == pytest.approx((0.125 + 0.1) / 2)
    assert tb["worst_abs_rel_error"] == pytest.approx(0.125) and tb["worst_at"] == "multicore/s0"
    assert row.loc[("all", "tick-barrier"), "worst_abs_rel_error"] == pytest.approx(1.0)  # work_us 1: all only
    pooled = row.loc[("work_us>=10", "all")]
    assert pooled["points"] == 4 and pooled["worst_abs_rel_error"] == pytest.approx(0.2)
    assert table["max_disagreement"].max() == pytest.approx(0.0, abs=1e-12)
    wrong = copy.deepcopy(pred)
    wrong.loc[0, "rel_error"] = 0.5  # a prediction.csv whose join went wrong shows up
    assert model_error_table(summary, wrong)["max_disagreement"].max() == pytest.approx(0.375)


def test_one_worker_fit_comes_from_the_most_engine_bound_shape() -> None:
    """A shape with 300 µs of work per event says little about a 5 µs overhead: the fit takes the shape whose
    baseline spends the least time per event."""
    summary = _sweep()
    heavy = [
        _row(cell="seq-h", shape="heavy", strategy="sequential", order="canonical", workers=1, time_loop_median_s=0.3),
        _row(cell="c1h", shape="heavy", strategy="conservative", variant="wt", order="canonical", workers=1,
             time_loop_median_s=0.297, baseline_cell="seq-h"),  # noise: -3 µs per event
    ]  # fmt: skip
    summary = pd.concat([summary, pd.DataFrame(heavy)], ignore_index=True)
    fit = one_worker_fits(summary, "multicore")[("conservative", "wt", "canonical", "gil-release", "python")]
    assert fit["o_event_s"] == pytest.approx(5e-6) and fit["shapes"] == ["small"]


def test_work_overlap_inflates_released_work_beside_another_thread_only() -> None:
    """The calibrated work_overlap (a GIL-releasing call's time beside a second thread over alone) slows the
    model's threads at P >= 2 (interpolated by call size); a size measured under contention is left out;
    processes take none."""
    from tickpar.perf.predict.prediction import preset, strategy_time

    overlap = {"call_us": [10.0, 100.0], "inflation": [2.0, 1.0], "cpu_available": [1.0, 1.0]}
    calibration = {**CALIBRATION, "work_overlap": overlap}
    costs = preset("here", "threads", "gil-release", calibration)
    assert costs.inflation(np.array([5.0, 10.0, 31.6227766, 100.0, 500.0])).tolist() == pytest.approx(
        [2.0, 2.0, 1.5, 1.0, 1.0]
    )
    assert preset("here", "processes", "gil-release", calibration).work_overlap == ()
    contended = {**overlap, "cpu_available": [0.5, 1.0]}
    assert preset("here", "threads", "gil-release", {**CALIBRATION, "work_overlap": contended}).work_overlap == (
        (100.0, 1.0),
    )
    dag = independent_dag(4, 0.0, 10.0)
    plain = preset("here", "threads", "gil-release", CALIBRATION)
    _, fast = strategy_time(dag, "tick-barrier", {}, plain, (1, 2), optimistic=False)
    _, slow = strategy_time(dag, "tick-barrier", {}, costs, (1, 2), optimistic=False)
    assert slow[1] == fast[1] and slow[2] > fast[2]
