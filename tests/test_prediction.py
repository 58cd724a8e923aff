"""tickpar.perf.predict.prediction: cost presets, the sync-cost model, per-strategy bounds and predictions,
the tables."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from factories import make_summary, summary_row
from helpers import CALIBRATION, independent_dag  # tests/helpers.py (tests/ is on sys.path: rootdir conftest)

from tickpar.perf.predict.bounds import Overheads, cxx_costs
from tickpar.perf.predict.prediction import (
    PREDICTION_COLUMNS,
    Preset,
    bound_columns,
    fit_sync,
    main,
    measured_speedups,
    prediction_table,
    preset,
    shape_bounds,
    strategy_time,
)
from tickpar.runner import resolve_cell


def _costs(gil: bool, o_sync: float = 0.0) -> Preset:
    return Preset("t", "threads", "gil-release", Overheads("t", 0.0, o_sync), None, 0.0, 1.0, gil)


def test_fit_sync_is_least_squares_in_log2_p() -> None:
    """a + b log2 P through exact points; one point or a falling trend gives a flat model."""
    a, b = fit_sync({1: 3.0, 2: 5.0, 4: 7.0})
    assert (a, b) == pytest.approx((3.0, 2.0))
    assert fit_sync({2: 4.0}) == (4.0, 0.0)
    assert fit_sync({1: 5.0, 2: 3.0}) == (4.0, 0.0)
    with pytest.raises(ValueError):
        fit_sync({})


def test_presets_carry_their_costs_and_cxx_names_its_calibration_file() -> None:
    """cxx: every figure from the native engine's calibration file; here: from the calibration, sync by its model."""
    costs = cxx_costs()
    for name, entry in costs.items():
        assert (entry["value"] >= 0 and "calibration.json" in entry["source"]) or name == "sync_a_s", name
    cxx = preset("cxx", "threads", "gil-release")
    assert cxx.event_s == pytest.approx(80e-9) and not cxx.gil
    assert cxx.tb_batch_s == pytest.approx(5e-6)  # tick-barrier's measured batch cost, in place of the barrier
    assert cxx.tb_event_s == pytest.approx(50e-9)  # ... and its measured cost per event of a parallel batch
    assert cxx.overheads.sync(64) == pytest.approx(6 * 500e-9)
    here = preset("here", "threads", "gil-release", CALIBRATION)
    assert here.gil and here.event_s is None
    assert here.overheads.sync(16) == pytest.approx(5e-5 + 4 * 1e-5)
    assert preset("here", "processes", "gil-release", CALIBRATION).overheads.sync(1) == 0.0
    assert not preset("here", "mpi", "gil-release", CALIBRATION).gil
    for bad in (("fast", "threads"), ("here", "threads"), ("cxx", "gpu")):
        with pytest.raises(ValueError, match=r"not allowed|needs a calibration"):
            preset(bad[0], bad[1], "none")


def test_tick_barrier_time_with_and_without_the_gil() -> None:
    """Four independent events of 1 s engine + 3 s work: 4 workers -> 4 s, but the GIL serialises the engine parts."""
    dag = independent_dag(4, 1.0, 3.0)
    t1, free = strategy_time(dag, "tick-barrier", {}, _costs(gil=False), (1, 2, 4), optimistic=True)
    assert t1 == pytest.approx(16.0)
    assert free == pytest.approx({1: 16.0, 2: 8.0, 4: 4.0})
    _, held = strategy_time(dag, "tick-barrier", {}, _costs(gil=True, o_sync=0.5), (1, 2, 4), optimistic=False)
    assert held == pytest.approx({1: 16.0, 2: 8.5, 4: 4.5})  # the model: GIL floor 4 s + one barrier: 4.5 s
    _, bound = strategy_time(dag, "tick-barrier", {}, _costs(gil=True, o_sync=0.5), (1, 2, 4), optimistic=True)
    assert bound == pytest.approx({1: 16.0, 2: 8.0, 4: 4.0})  # the bound: no barrier, no GIL floor
    assert strategy_time(dag, "sequential", {}, _costs(gil=True), (1, 4), optimistic=True)[1] == {1: 16.0, 4: 16.0}


def test_bound_is_never_below_the_prediction_and_never_above_p() -> None:
    """On a real PHOLD DAG: for every modelled strategy, speedup(prediction) <= speedup(bound) <= P."""
    spec = resolve_cell("phold", {"end_tick": 800, "granularity": 20, "work_us": 50}, "sequential", {}, 1, 3).spec
    cells = [
        {"strategy": "tick-barrier", "variant": "component", "options": {}, "order": "gem5", "work": "gil-release"},
        {"strategy": "conservative", "variant": "w", "options": {"sync": "window"}, "order": "gem5",
         "work": "gil-release"},
        {"strategy": "conservative", "variant": "n", "options": {"sync": "null-message", "backend": "processes"},
         "order": "gem5", "work": "gil-release"},
        {"strategy": "split", "variant": "name", "options": {}, "order": "gem5", "work": "gil-release"},
        {"strategy": "mystery", "variant": "x", "options": {}, "order": "gem5", "work": "gil-release"},
    ]  # fmt: skip
    record = shape_bounds("phold", "g20", spec, cells, CALIBRATION, (1, 2, 4, 16))
    assert record["unmodelled"] == ["mystery"]
    rows = pd.DataFrame(record["rows"])
    assert len(rows) == 4 * 2 * 4  # strategies x presets x P
    here = rows[rows["preset"] == "here"]
    assert (here["predicted_speedup"] <= here["bound_speedup"] + 1e-9).all()
    assert (rows["predicted_speedup"] <= rows["workers"] + 1e-9).all()
    cxx = rows[rows["preset"] == "cxx"]  # its own bound: the DAG at the native engine's costs
    assert (cxx["predicted_speedup"] <= cxx["bound_speedup"] + 1e-9).all()
    assert (cxx["bound_speedup"] <= cxx["workers"] + 1e-9).all()
    ideal = pd.DataFrame(record["ideal"])
    assert (ideal["ideal_speedup"] <= ideal["workers"] + 1e-9).all() and ideal["ideal_speedup"].iloc[0] == 1.0
    json.dumps(record)  # the record is what the pipeline writes


def _sweep() -> pd.DataFrame:
    rows = []
    for seed, (speed, loop, timed_exact, contended) in enumerate(((1.5, 1.6, True, False), (1.7, 1.8, False, False),
                                                                   (1.4, 1.5, True, True))):  # fmt: skip
        rows.append(summary_row("conservative/w", 2, speed, shape="s", order="canonical", seed=seed, loop_speedup=loop,
                                timed_exact=timed_exact, contended=contended))  # fmt: skip
    return make_summary(rows)


def _shape_file(tmp_path: Path) -> Path:
    rows = [{"strategy": "conservative", "variant": "w", "order": "canonical", "work": "gil-release", "preset": pre,
             "workers": p, "predicted_speedup": 1.2 * p ** 0.5, "bound_speedup": 1.9 if pre == "here" else None}
            for pre in ("here", "cxx") for p in (1, 2, 4)]  # fmt: skip
    ideal = [{"order": "canonical", "work": "gil-release", "workers": p, "ideal_speedup": float(p)} for p in (1, 2, 4)]
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": "tickpar.shape-bounds/1", "workload": "phold", "shape": "s",
                                "rows": rows, "ideal": ideal}))  # fmt: skip
    return path


def test_measured_points_count_only_exact_uncontended_timed_runs() -> None:
    """timed_exact false and contended rows are left out; loop_speedup is preferred; absent columns mean 'counts'."""
    got = measured_speedups(_sweep())
    assert len(got) == 1 and got["measured"].iloc[0] == pytest.approx(1.6) and got["measure"].iloc[0] == "loop_speedup"
    bare = _sweep().drop(columns=["timed_exact", "contended", "loop_speedup"])
    assert measured_speedups(bare)["measured"].iloc[0] == pytest.approx(1.5)  # median of 1.4, 1.5, 1.7


def test_bound_columns_and_prediction_table(tmp_path: Path) -> None:
    """The summary gets the here-bound and the ideal per cell; prediction.csv the relative error at measured P."""
    path = _shape_file(tmp_path)
    summary = _sweep()
    summary.loc[len(summary)] = {**summary.iloc[0].to_dict(), "shape": "other"}
    out = bound_columns(summary, [path, tmp_path / "missing.json"])
    assert list(out.index) == list(summary.index)
    assert out["bound_speedup"].iloc[0] == pytest.approx(1.9) and out["ideal_speedup"].iloc[0] == pytest.approx(2.0)
    assert math.isnan(out["bound_speedup"].iloc[-1])
    table = prediction_table(summary, [path])
    assert tuple(table.columns) == PREDICTION_COLUMNS and len(table) == 6
    at2 = table[(table["workers"] == 2) & (table["preset"] == "here")].iloc[0]
    assert at2["measured_speedup"] == pytest.approx(1.6)
    assert at2["rel_error"] == pytest.approx((1.2 * 2**0.5 - 1.6) / 1.6)
    assert table[table["workers"] == 4]["measured_speedup"].isna().all()
    assert prediction_table(summary, []).empty


def test_bound_at_one_worker_is_one_for_every_strategy(tmp_path: Path) -> None:
    """A one-worker cell's bound_speedup is 1, a plugin strategy's included (no shape record models it);
    beyond one worker an unmodelled strategy's stays empty."""
    summary = _sweep()
    plugin = {**summary.iloc[0].to_dict(), "strategy": "reverse-bin", "variant": "default"}
    summary.loc[len(summary)] = {**plugin, "workers": 1}
    summary.loc[len(summary)] = {**plugin, "workers": 2}
    for paths in ([_shape_file(tmp_path)], []):
        out = bound_columns(summary, paths)
        assert out["bound_speedup"].iloc[-2] == 1.0
        assert math.isnan(out["bound_speedup"].iloc[-1])


def test_shape_command_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m tickpar.perf.predict.prediction shape` with bad cells or params: exit 2, one line on stderr."""
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps(CALIBRATION))
    base = ["shape", "-w", "phold", "--shape", "s", "--calibration", str(cal), "--out", str(tmp_path / "o.json")]
    for extra in (["--cells", "{nope"], ["--cells", "[]", "-p", "lps=0"], ["--cells", "[]", "--workers", "0"]):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("tickpar.perf.predict.prediction: error:"), err
    assert main([*base, "--cells", "[]", "-p", "end_tick=300"]) == 0
    assert json.loads((tmp_path / "o.json").read_text())["rows"] == []
    assert np.isfinite(json.loads((tmp_path / "o.json").read_text())["seconds"])


def test_calibrate_measures_every_figure_the_here_preset_needs() -> None:
    """One calibration: positive per-event, per-message and window-exchange costs; a preset per backend from it."""
    from tickpar.perf.predict.prediction import calibrate

    cal = calibrate(cores=2, work_modes=("gil-release",))
    assert cal["o_event_s"] > 0 and set(cal["o_msg_s"]) == {"threads", "processes", "mpi"}
    assert all(v > 0 for v in cal["sync_measured"]["processes"].values())
    assert all(v > 0 for v in cal["sync_measured"]["threads"].values())
    per_call, per_us = cal["work"]["gil-release"]
    assert per_us > 0 and per_call >= 0
    assert 1 <= cal["gil_release_bytes"] <= 1 << 16  # measured: the smallest hash a waiting thread runs beside
    handoff = cal["gil_handoff"]  # under the GIL: what a second thread's hand-offs add, per call size
    assert len(handoff["call_us"]) == len(handoff["excess_s"]) == len(handoff["cpu_available"]) >= 2
    assert handoff["hold_s"] > 0 and all(e >= 0 for e in handoff["excess_s"])
    own = cal["thread_handoff"]  # each thread strategy's own excess per call, solved on its 2-worker runs
    assert set(own["strategies"]) == {"tick-barrier", "conservative"}
    for solved in own["strategies"].values():
        assert len(solved["excess_s"]) == len(own["call_us"]) and min(solved["excess_s"]) >= 0
    tb = cal["tick_barrier"]  # its machinery per event and its hand-off per batch, on a shape of its own
    assert tb["parallel_batches"] > 0 and tb["parallel_events"] > tb["parallel_batches"]
    assert tb["event_s"] >= 0 and tb["batch_s"] >= 0 and tb["inline_s"] > 0
    for backend in ("threads", "processes", "mpi"):
        costs = preset("here", backend, "gil-release", json.loads(json.dumps(cal)))
        assert costs.overheads.sync(1) == 0.0 and costs.overheads.sync(64) >= costs.overheads.sync(2) > 0


#: multicore's `wide` shape (config/config.yaml) at a work_us where the work dominates.
MULTICORE_WIDE = {"cores": 16, "l2_banks": 8, "working_set_kib": 16, "think_cycles": 0, "link_latency": 2000,
                  "max_outstanding": 8, "requests_per_core": 16, "work_us": 1000}  # fmt: skip


def _wide_rows() -> pd.DataFrame:
    spec = resolve_cell("multicore", dict(MULTICORE_WIDE), "sequential", {}, 1, 1).spec
    cells = [{"strategy": "conservative", "variant": w, "options": {"sync": "window", "partition_weights": w},
              "order": "canonical", "work": "gil-release"} for w in ("events", "count")]  # fmt: skip
    cells.append({"strategy": "tick-barrier", "variant": "component", "options": {}, "order": "gem5",
                  "work": "gil-release"})  # fmt: skip
    cells.append({"strategy": "split", "variant": "name", "options": {}, "order": "gem5", "work": "gil-release"})
    record = shape_bounds("multicore", "wide", spec, cells, CALIBRATION, (1, 2), "cal.json", recordings=2)
    assert record["partition_fallback"] == {} and record["recordings"] == 2
    return pd.DataFrame(record["rows"])


def test_bound_is_zero_overhead_exactly_one_at_one_worker_and_uses_the_strategys_partition() -> None:
    """At one worker the bound is 1 for every modelled strategy (the model, with o_event, is below);
    the conservative bound follows its own partition_weights: events allow more than counts."""
    rows = _wide_rows()
    here = rows[rows["preset"] == "here"].set_index(["strategy", "variant", "workers"])
    for strategy, variant in (("conservative", "events"), ("conservative", "count"), ("tick-barrier", "component"),
                              ("split", "name")):  # fmt: skip
        assert here.loc[(strategy, variant, 1), "bound_speedup"] == 1.0
        at2 = here.loc[(strategy, variant, 2)]
        assert at2["predicted_speedup"] <= at2["bound_speedup"]
    assert here.loc[("conservative", "count", 1), "predicted_speedup"] < 1.0
    by_events = here.loc[("conservative", "events", 2), "bound_speedup"]
    by_count = here.loc[("conservative", "count", 2), "bound_speedup"]
    assert by_count < 1.6 < by_events  # the count partition leaves one LP two thirds of the events
    bound_sources = json.loads(here.loc[("conservative", "events", 2), "bound_sources"])
    assert {bound_sources[k] for k in ("o_event", "o_sync", "o_msg")} == {"none"}
    model_sources = json.loads(here.loc[("conservative", "events", 2), "model_sources"])
    assert all("cal.json" in model_sources[k] for k in ("o_event", "o_sync", "o_msg", "work"))


def test_prediction_table_has_bound_model_and_flags_points_above_the_bound(tmp_path: Path) -> None:
    """prediction.csv: `bound` and `model` columns, with provenance; a measured point above its bound is flagged."""
    summary = _sweep()
    summary["loop_speedup"] = 2.5  # above the shape file's bound of 1.9 at every P
    table = prediction_table(summary, [_shape_file(tmp_path)])
    at2 = table[(table["workers"] == 2) & (table["preset"] == "here")].iloc[0]
    assert at2["bound"] == pytest.approx(1.9) and at2["model"] == at2["predicted_speedup"]
    assert bool(at2["above_bound"])
    assert not table[table["preset"] == "cxx"]["above_bound"].any()  # no cxx bound: nothing to be above


def test_model_holds_the_gil_for_gil_release_calls_below_the_hash_threshold() -> None:
    """Threads, gil-release: calls hashing fewer than 2,048 bytes hold the GIL, so at 1 µs four events do not
    overlap their work in the model; the bound (no GIL floor) and calls above the threshold still do."""
    from tickpar.kernel.work import GIL_RELEASE_MIN_BYTES

    calibration = {**CALIBRATION, "work_units_per_us": {"gil-release": GIL_RELEASE_MIN_BYTES / 5.0}}  # threshold 5 µs
    costs = preset("here", "threads", "gil-release", calibration)
    assert costs.gil_hold_below_us == pytest.approx(5.0)
    small, large = independent_dag(4, 0.0, 1.0), independent_dag(4, 0.0, 50.0)
    _, held = strategy_time(small, "tick-barrier", {}, costs, (1, 4), optimistic=False)
    _, released = strategy_time(large, "tick-barrier", {}, costs, (1, 4), optimistic=False)
    t1_small = 4 * (1e-6 + 1e-6)  # per call + per µs, as CALIBRATION's work line says
    assert held[4] >= t1_small  # serialised: no faster than sequential
    assert released[4] < 0.7 * 4 * (1e-6 + 50e-6)  # overlapped: one event plus a barrier, below T1
    _, bound = strategy_time(small, "tick-barrier", {}, costs, (1, 4), optimistic=True)
    assert bound[4] == pytest.approx(t1_small / 4)
    assert preset("here", "threads", "gil-release", CALIBRATION).gil_hold_below_us == 0.0  # no rate: unknown
    measured = {**calibration, "gil_release_bytes": GIL_RELEASE_MIN_BYTES * 2}  # the calibration's own figure wins
    assert preset("here", "threads", "gil-release", measured).gil_hold_below_us == pytest.approx(10.0)
    never = {**calibration, "gil_release_bytes": None}  # no size released it: every call holds the GIL
    assert preset("here", "threads", "gil-release", never).gil_hold_below_us == math.inf


def test_gil_release_bytes_finds_the_hash_size_that_lets_another_thread_run() -> None:
    """A hash of a few bytes never lets a waiting thread run; one of 64 KiB does; the bisection lands between."""
    from tickpar.perf.predict.calibrate import gil_release_bytes, waiter_runs

    assert waiter_runs(16, 500) == 0
    found = gil_release_bytes()
    assert found is not None and 16 < found <= 1 << 16
    assert waiter_runs(found - 1, 2000) == 0  # below it the GIL is held: not a timing, a count


def test_gil_hand_off_excess_slows_threads_under_the_gil_at_two_workers_only() -> None:
    """The calibrated gil_handoff excess (per GIL-releasing call, by call size) lengthens each thread's calls
    at P >= 2 and the GIL floor by half as much; P = 1, processes and a size measured on a shared core take
    none, and with it the older work_overlap inflation is not applied on top."""
    from tickpar.perf.predict.prediction import strategy_time

    handoff = {"call_us": [10.0, 100.0], "excess_s": [20e-6, 2e-6], "cpu_available": [1.0, 1.0]}
    calibration = {**CALIBRATION, "gil_handoff": handoff}
    costs = preset("here", "threads", "gil-release", calibration)
    assert costs.excess_s(np.array([5.0, 10.0, 31.6227766, 100.0, 500.0])).tolist() == pytest.approx(
        [20e-6, 20e-6, 11e-6, 2e-6, 2e-6]
    )
    assert preset("here", "processes", "gil-release", calibration).gil_excess == ()
    shared = {**handoff, "cpu_available": [0.5, 1.0]}
    on_shared = preset("here", "threads", "gil-release", {**CALIBRATION, "gil_handoff": shared})
    assert on_shared.gil_excess == ((100.0, 2e-6),)
    overlap = {"call_us": [10.0], "inflation": [3.0], "cpu_available": [1.0]}
    both = preset("here", "threads", "gil-release", {**calibration, "work_overlap": overlap})
    plain = preset("here", "threads", "gil-release", CALIBRATION)
    dag = independent_dag(8, 0.0, 10.0)
    _, base = strategy_time(dag, "tick-barrier", {}, plain, (1, 2), optimistic=False)
    _, got = strategy_time(dag, "tick-barrier", {}, costs, (1, 2), optimistic=False)
    _, with_overlap = strategy_time(dag, "tick-barrier", {}, both, (1, 2), optimistic=False)
    assert got[1] == base[1] and got[2] == pytest.approx(base[2] + 4 * 20e-6)  # 4 events per thread's group run
    assert with_overlap == got


def test_tick_barrier_takes_its_calibrated_machinery_and_batch_costs() -> None:
    """With a tick_barrier calibration the model charges its per-event machinery and its per-batch hand-off
    (in place of the threads exchange) at P >= 2; P = 1 runs the plain loop and pays neither."""
    from tickpar.perf.predict.prediction import strategy_time

    tb = {"event_s": 2e-6, "batch_s": 300e-6, "cpu_available": 1.0}
    dag = independent_dag(8, 1e-6, 50.0)
    plain = preset("here", "threads", "gil-release", CALIBRATION)
    costs = preset("here", "threads", "gil-release", {**CALIBRATION, "tick_barrier": tb})
    assert (costs.tb_event_s, costs.tb_batch_s) == (2e-6, 300e-6)
    assert preset("here", "threads", "gil-release", {**CALIBRATION, "tick_barrier": {**tb, "cpu_available": 0.5}}
                  ).tb_batch_s is None  # fmt: skip  # measured on a shared core: not used
    _, base = strategy_time(dag, "tick-barrier", {}, plain, (1, 2), optimistic=False)
    _, got = strategy_time(dag, "tick-barrier", {}, costs, (1, 2), optimistic=False)
    assert got[1] == base[1]
    # One parallel batch: the exchange (5e-5 + 1e-5) gives way to the batch's 300 µs, plus 2 µs an event.
    assert got[2] - base[2] == pytest.approx(300e-6 - 6e-5 + 4 * 2e-6, rel=0.2)


def test_an_older_native_calibration_without_the_batch_cost_leaves_the_barrier(tmp_path: Path) -> None:
    """A `tickpar calibrate` file from before tb_batch_ns: the cxx preset keeps the barrier round for tick-barrier."""
    from helpers import CXX_CALIBRATION

    old = {k: v for k, v in CXX_CALIBRATION.items() if k != "tb_batch_ns"}
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(old))
    costs = cxx_costs(path)
    assert math.isnan(costs["tb_batch_s"]["value"]) and costs["tb_batch_s"]["source"] == "none"


def test_solve_excess_bisects_a_falling_speedup_and_clamps_at_both_ends() -> None:
    """The hand-off excess is where the model's speedup meets the measured one: 0 where the model without any
    excess is already at or below it, the search's top where even that is above it."""
    from tickpar.perf.predict.handoff import MAX_EXCESS_S, solve_excess

    def speedup_at(x: float) -> float:
        return 2.0 / (1.0 + x / 1e-5)

    assert solve_excess(speedup_at, 1.0) == pytest.approx(1e-5, abs=1e-8)
    assert solve_excess(speedup_at, 2.5) == 0.0
    assert solve_excess(speedup_at, 1e-6) == MAX_EXCESS_S


def test_preset_takes_the_strategys_own_thread_handoff_over_the_generic_one() -> None:
    """With a thread_handoff record, a threads preset for that strategy prices its calls with the strategy's own
    excess (sizes measured on a shared core left out); another strategy or a processes backend keeps gil_handoff."""
    generic = {"call_us": [10.0], "excess_s": [5e-6], "cpu_available": [1.0]}
    own = {"call_us": [10.0, 30.0], "cpu_available": [1.0, 0.5],
           "strategies": {"tick-barrier": {"excess_s": [30e-6, 9e-6]}}}  # fmt: skip
    calibration = {**CALIBRATION, "gil_handoff": generic, "thread_handoff": own}
    tb = preset("here", "threads", "gil-release", calibration, strategy="tick-barrier")
    assert tb.thread_excess == ((10.0, 30e-6),)
    assert tb.excess_s(np.array([10.0])).tolist() == pytest.approx([30e-6])
    other = preset("here", "threads", "gil-release", calibration, strategy="conservative")
    assert other.thread_excess == () and other.excess_s(np.array([10.0])).tolist() == pytest.approx([5e-6])
    assert preset("here", "processes", "gil-release", calibration, strategy="tick-barrier").thread_excess == ()
