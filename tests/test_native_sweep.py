"""The native engine in the sweep: the ``engines`` axis, its one-line errors, per-engine baselines, the
prediction join, and a pyperf worker timing a native cell (its replay loop as ``loop_s``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from factories import make_summary, summary_row

from tickpar.host.paths import REPO_ROOT

pytest.importorskip("tickpar_native")
pytest.importorskip("snakemake")

from tickpar.pipeline.aggregate import aggregate
from tickpar.pipeline.sweep import SweepError, load_sweep

WIDE = {"lps": 4, "population": 2, "end_tick": 3000, "work_us": 1}


def _config(**extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "seeds": [1],
        "workers": [1, 2],
        "engines": ["python", "native"],
        "workloads": {
            "phold": {
                "shapes": {"wide": dict(WIDE)},
                "sweep": [
                    {"base": "wide", "param": "work_us", "values": [10, 100], "workers": [2], "engines": ["python"]},
                    {"base": "wide", "param": "work_us", "values": [0.1, 10], "workers": [2], "engines": ["native"]},
                ],
            }
        },
        "strategies": {
            "sequential": {"orders": ["gem5", "canonical"]},
            "tick-barrier": {"variants": {"component": {"lock_key": "component", "executor": "threads"}}},
            "conservative": {
                "orders": ["canonical"],
                "variants": {"threads": {"backend": "threads"}, "processes": {"backend": "processes"}},
            },
            "optimistic": {"orders": ["canonical"], "workers": [2]},
        },
    }
    cfg.update(extra)
    return cfg


def test_engines_expand_native_cells_only_where_the_engine_runs_them() -> None:
    sweep = load_sweep(_config(), "test")
    cells = {c.key: c for c in sweep.cells}
    native = [c for c in sweep.cells if c.engine == "native"]
    assert native and all("/native/w" in c.check_path and c.label.endswith("[native]") for c in native)
    assert all(c.cli_args()[-2:] == ["--engine", "native"] for c in native)
    # not native: optimistic (no native implementation), conservative on processes (an option it does not take)
    assert not any(c.strategy == "optimistic" or c.variant == "processes" for c in native)
    assert any(c.strategy == "optimistic" for c in sweep.cells)
    # each sweep's derived shapes run its own engines only: Python never at 0.1 us, native not at 100 us
    engines_at = {(c.shape, c.engine) for c in sweep.cells}
    assert ("wide.work_us0.1", "python") not in engines_at and ("wide.work_us0.1", "native") in engines_at
    assert ("wide.work_us100", "native") not in engines_at and ("wide.work_us100", "python") in engines_at
    assert {("wide.work_us10", "python"), ("wide.work_us10", "native")} <= engines_at  # made by both sweeps
    # every timed native cell has its native sequential baseline on the same shape and order
    for c in native:
        if c.timed and c.strategy != "sequential":
            base = c.key.replace(f"/{c.strategy}/{c.variant}/", "/sequential/default/").replace(
                f"/w{c.workers}-", "/w1-"
            )
            assert cells[base].engine == "native" and cells[base].timed
    # the golden run stays the Python sequential run (one per shape, order, seed)
    assert {"wide.work_us0.1"} <= {shape for _, shape, _, _ in sweep.goldens}
    assert "variants the native engine does not run" in sweep.summary()
    assert "on sweep-derived shapes of another engine" in sweep.summary()


def test_bad_engines_are_one_line_naming_the_value() -> None:
    with pytest.raises(SweepError) as err:
        load_sweep(_config(engines=["python", "cuda"]), "test")
    assert "engines[1]" in str(err.value) and "'cuda'" in str(err.value) and "native" in str(err.value)
    assert "\n" not in str(err.value)
    cfg = _config()
    cfg["strategies"]["optimistic"]["engines"] = ["native"]
    with pytest.raises(SweepError) as err:
        load_sweep(cfg, "test")
    assert str(err.value).startswith("strategies.optimistic.engines: 'native' is not allowed for optimistic")
    cfg = _config()
    cfg["strategies"]["sequential"]["engines"] = ["python"]
    with pytest.raises(SweepError) as err:
        load_sweep(cfg, "test")
    assert "'native' has no sequential baseline" in str(err.value)
    cfg = _config()
    cfg["workloads"]["phold"]["sweep"][1]["engines"] = ["gpu"]
    with pytest.raises(SweepError) as err:
        load_sweep(cfg, "test")
    assert str(err.value).startswith("workloads.phold.sweep[1].engines[0]")


def test_native_without_the_extension_says_how_to_build_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from tickpar import native
    from tickpar.pipeline import expansion

    monkeypatch.setattr(expansion, "native_available", lambda: False)
    with pytest.raises(SweepError) as err:
        load_sweep(_config(), "test")
    assert str(err.value) == f"engines: {native.BUILD_HINT}"
    load_sweep(_config(engines=["python"]), "test")  # a Python-only sweep needs no extension


def _entry(cell: str, strategy: str, workers: int, engine: str) -> dict[str, Any]:
    tag = " [native]" if engine == "native" else ""
    return {
        "cell": cell, "workload": "w", "shape": "s", "family": "s", "strategy": strategy, "variant": "default",
        "label": strategy + tag, "base_label": strategy, "workers": workers, "seed": 1, "order": "gem5",
        "work": "gil-release", "interpreter": "default", "engine": engine, "timed": True, "mpi": False,
        "processes": False, "expected_verdict": "exact", "params": {"work_us": 1.0}, "options": {},
        "check_path": cell + ".check", "timing_path": cell + ".time",
    }  # fmt: skip


def _synthetic() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Python: sequential 10 ms, par 8 ms (1.25x); native: sequential 1 ms, par 0.5 ms (2x)."""
    manifest, records = [], {}
    for engine, t_seq, t_par in (("python", 0.010, 0.008), ("native", 0.001, 0.0005)):
        for strategy, workers, t in (("sequential", 1, t_seq), ("par", 2, t_par)):
            cell = f"{engine}-{strategy}"
            manifest.append(_entry(cell, strategy, workers, engine))
            records[cell + ".check"] = {"verdict": {"kind": "exact", "reason": "ok"}, "events": 100, "engine": engine}
            values = [t * f for f in (0.98, 1.0, 1.02, 0.99, 1.01, 1.0)]
            records[cell + ".time"] = {"status": "ok", "values": values, "loop_values": values, "n_values": 6}
    return manifest, records


def test_each_engine_is_its_own_baseline() -> None:
    manifest, records = _synthetic()
    df = aggregate(manifest, bootstrap=200, load=lambda p: records.get(p)).set_index("cell")
    assert df.loc["native-par", "baseline_cell"] == "native-sequential"
    assert df.loc["python-par", "baseline_cell"] == "python-sequential"
    assert df.loc["native-par", "speedup"] == pytest.approx(2.0, rel=1e-9)
    assert df.loc["python-par", "speedup"] == pytest.approx(1.25, rel=1e-9)
    assert list(df["engine"]) == ["python", "python", "native", "native"]


def test_prediction_joins_cxx_with_native_and_here_with_python(tmp_path: Path) -> None:
    from tickpar.perf.predict.prediction import SHAPE_FORMAT, prediction_table

    rows = [
        {"strategy": "par", "variant": "default", "order": "gem5", "work": "gil-release", "preset": preset,
         "workers": 2, "predicted_speedup": predicted, "bound_speedup": None}
        for preset, predicted in (("here", 1.5), ("cxx", 1.8))
    ]  # fmt: skip
    shape = tmp_path / "s.json"
    shape.write_text(json.dumps({"format": SHAPE_FORMAT, "workload": "w", "shape": "s", "rows": rows, "ideal": []}))
    summary = pd.DataFrame(
        [
            {"workload": "w", "shape": "s", "strategy": "par", "variant": "default", "order": "gem5",
             "work": "gil-release", "workers": 2, "engine": engine, "verdict": "exact", "speedup": s,
             "loop_speedup": s, "timed_exact": True, "contended": False, "interpreter": "default"}
            for engine, s in (("python", 1.25), ("native", 2.0))
        ]
    )  # fmt: skip
    table = prediction_table(summary, [shape]).set_index("preset")
    assert table.loc["cxx", "engine"] == "native" and table.loc["cxx", "measured_speedup"] == 2.0
    assert table.loc["cxx", "rel_error"] == pytest.approx((1.8 - 2.0) / 2.0)
    assert table.loc["here", "engine"] == "python" and table.loc["here", "measured_speedup"] == 1.25
    python_only = summary[summary["engine"] == "python"]
    assert math.isnan(prediction_table(python_only, [shape]).set_index("preset").loc["cxx", "measured_speedup"])


def test_a_pyperf_worker_times_the_native_replay(tmp_path: Path) -> None:
    """``tickpar time --engine native``: every timed run is the C++ replay (loop_s from its stats), checked exact."""
    out = tmp_path / "t.json"
    res = subprocess.run(
        [sys.executable, "-m", "tickpar", "time", "--engine", "native", "-w", "phold", "-p", "lps=4", "-p",
         "end_tick=3000", "-p", "work_us=0.1", "-s", "tick-barrier", "-n", "2", "--processes", "1", "--values", "5",
         "--warmups", "1", "--retimes", "0", "--out", str(out)],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
    )  # fmt: skip
    record = json.loads(out.read_text())
    assert record["status"] == "ok", res.stdout[-2000:] + res.stderr[-2000:]
    assert record["timed_exact"] is True and record["loop_source"] == "stat"
    assert record["cell"]["engine"] == "native"
    meta = record["pyperf_metadata"]
    assert meta.get("tickpar_engine") == "native" and meta.get("tickpar_spin_per_us", 0) > 0


def _sweep() -> pd.DataFrame:
    """Python par breaks even between 10 and 100 us, native par between 0.1 and 1 us; native split: 3 seeds."""
    rows = []
    for engine, points in (("python", ((10.0, 0.6), (100.0, 1.5))), ("native", ((0.1, 0.5), (1.0, 1.6)))):
        tags = ("native",) if engine == "native" else ()
        for x, s in points:
            rows.append(summary_row("par", 2, s, tags=tags, workload="w", shape=f"s{x:g}", family="s", engine=engine,
                                    loop_speedup=s, param_work_us=x))  # fmt: skip
    for seed, verdict in ((1, "causality"), (2, "exact"), (3, "diverged")):
        rows.append(summary_row("split/name", 2, math.nan, tags=("native",), workload="w", shape="s1", family="s",
                                seed=seed, engine="native", verdict=verdict, verdict_reason=f"first violation {seed}",
                                timing_status="not timed"))  # fmt: skip
    return make_summary(rows)


def test_the_engines_page_and_findings_with_and_without_native_rows() -> None:
    import matplotlib.pyplot as plt

    from tickpar.report.engines import engine_breakevens, engine_findings, fig_engines

    df = _sweep()
    be = engine_breakevens(df).set_index("engine")
    assert be.loc["python", "kind"] == "at" and 10 < be.loc["python", "x"] < 100
    assert be.loc["native", "kind"] == "at" and 0.1 < be.loc["native", "x"] < 1
    text = " ".join(engine_findings(df))
    assert "Break-even of par on w/s" in text and "python breaks even at about" in text and "native breaks" in text
    assert "2 of 3 checked runs not exact" in text and "first violation 1" in text
    assert "rel_error" not in text  # the model's error is model_error's sentence, once (tests/test_one_answer.py)
    fig = fig_engines(df)
    assert len(fig.axes) == 3  # two engine panels and the split text
    plt.close(fig)
    python_only = df[df["engine"] == "python"]
    assert engine_findings(python_only) == []
    fig = fig_engines(python_only.drop(columns=["engine"]))
    plt.close(fig)
