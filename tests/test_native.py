"""The native engine behind the CLI: ``--engine native`` on run and check, every native strategy on both
workloads against the Python golden run, the DAG recording, ``tickpar calibrate``, and the one-line error
where the extension is not built."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from tickpar import native
from tickpar.cli import main
from tickpar.kernel.params import ParamError
from tickpar.native import record as rec_mod
from tickpar.runner import check_cell, execute, resolve_cell

needs_engine = pytest.mark.skipif(not native.available(), reason="the native engine is not built: pip install ./native")

SMALL = {
    "phold": {"lps": 4, "population": 4, "end_tick": 3000, "granularity": 50},
    "multicore": {"cores": 2, "requests_per_core": 60},
}
EXACT = [
    ("sequential", {}, 1, "gem5"),
    ("tick-barrier", {}, 2, "gem5"),
    ("tick-barrier", {}, 2, "canonical"),
    ("conservative", {"sync": "window"}, 2, "canonical"),
    ("quantum", {"quantum_ratio": 1}, 2, "canonical"),
    ("split", {}, 1, "gem5"),
]


def test_clock_tick_keeps_its_mark_through_arithmetic() -> None:
    t = rec_mod.ClockTick(1000, 7)
    edge = -(-t // 500) * 500 + 2 * 500
    assert isinstance(edge, rec_mod.ClockTick) and edge.epoch == 7 and edge == 2000
    assert max(rec_mod.ClockTick(5, 1), 3).epoch == 1 and type(int(t)) is int
    assert (rec_mod.ClockTick(5, 1) + rec_mod.ClockTick(2, 4)).epoch == 4


@needs_engine
@pytest.mark.parametrize("workload", ["phold", "multicore"])
def test_recording_replays_the_python_run(workload: str) -> None:
    cell = resolve_cell(workload, SMALL[workload], "sequential", {}, 1, 1)
    dag = rec_mod.record(cell.spec)
    assert dag.events > 100 and dag.clock_ops > 0
    if workload == "multicore":
        assert dag.stored_ops > 0  # layers, DRAM responses, a CPU's resume edge
    python = execute(cell).record
    got = execute(resolve_cell(workload, SMALL[workload], "sequential", {}, 1, 1, engine="native")).record
    assert (got.events, got.final_tick) == (python.events, python.final_tick)


@needs_engine
@pytest.mark.parametrize("workload", ["phold", "multicore"])
@pytest.mark.parametrize(("strategy", "options", "workers", "order"), EXACT)
def test_native_strategies_are_exact(workload: str, strategy: str, options: dict, workers: int, order: str) -> None:
    cell = resolve_cell(workload, SMALL[workload], strategy, options, workers, 1, order, engine="native")
    verdict, outcome = check_cell(cell)
    assert verdict.kind == "exact", verdict.reason
    assert outcome.stats["engine"] == "native" and outcome.stats["loop_s"] > 0


@needs_engine
def test_native_split_fails_with_two_workers() -> None:
    # Real threads: a failure needs the two workers to overlap, which a loaded machine (or the other
    # pytest-xdist worker) can deny a short run. Runs of tens of ms span many scheduler slices; up to
    # eight seeds are tried until two have failed.
    params = {"cores": 2, "requests_per_core": 1500, "work_us": 5.0}
    failed = 0
    for seed in range(1, 9):
        cell = resolve_cell("multicore", params, "split", {}, 2, seed, engine="native")
        verdict, _ = check_cell(cell)
        failed += verdict.kind != "exact"
        if failed >= 2:
            break
    assert failed >= 2


@needs_engine
def test_cli_run_and_check_record_the_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    args = ["-w", "phold", "-p", "lps=4", "-p", "end_tick=2000", "--engine", "native"]
    assert main(["run", *args, "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["engine"] == "native" and record["work_model"]["mode"] == "spin" and record["events_per_s"] > 0
    assert main(["check", *args, "-s", "tick-barrier", "-n", "2", "--out", str(out)]) == 0
    assert "verdict: exact" in capsys.readouterr().out
    assert json.loads(out.read_text())["engine"] == "native"
    assert main(["run", "-w", "phold", "-p", "end_tick=500", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["engine"] == "python"


@needs_engine
def test_options_the_engine_does_not_take_are_refused() -> None:
    with pytest.raises(ParamError, match="not taken by the native engine"):
        resolve_cell("phold", {}, "conservative", {"sync": "null-message"}, 2, 1, "canonical", engine="native")
    with pytest.raises(ParamError, match="engine 'gpu' is not allowed"):
        resolve_cell("phold", {}, "sequential", {}, 1, 1, engine="gpu")


@needs_engine
def test_calibrate_writes_the_contract_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--budget", "0.05", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["format"] == "tickpar.calibration/1"
    for key in ("mutex_ns", "barrier_ns", "message_ns", "event_ns", "pingpong_ns", "heap_ns"):
        assert data[key] > 0 and key in data["what"]
    # tick-barrier's fit: either part may come out 0 on a noisy machine (a negative coefficient is dropped), not both
    assert data["tb_batch_ns"] >= 0 and data["tb_event_ns"] >= 0 and data["tb_batch_ns"] + data["tb_event_ns"] > 0
    assert "tb_batch_ns" in data["what"] and "tb_event_ns" in data["what"]
    assert data["details"]["tb_parallel_batches"] > 0 and data["details"]["tb_overhead_ns"] > 0
    assert data["details"]["heap_ns_pending64"] > 0
    assert data["machine"]["cores"] and data["date"]
    line = capsys.readouterr().out.strip()  # the one-liner names the floors too
    assert "pingpong_ns " in line and "heap_ns " in line and line.endswith(f"-> {out}")


def test_without_the_extension_the_error_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tickpar_native", None)  # import fails as if never built
    assert not native.available()
    assert main(["run", "-w", "phold", "-p", "end_tick=500", "--engine", "native"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "pip install ./native" in err and "make native" in err
    assert main(["calibrate"]) == 2
    assert main(["run", "-w", "phold", "-p", "end_tick=500"]) == 0  # nothing else breaks


def test_tick_barrier_fit_splits_the_excess_into_batch_and_event_parts() -> None:
    from tickpar.native.engine import _fit_two

    # 800 ns per batch, 50 ns per event, exactly: the fit gives both back.
    points = [(28.0, e, 28 * 800e-9 + e * 50e-9) for e in (160.0, 330.0, 660.0, 990.0)]
    a, b = _fit_two(points)
    assert a == pytest.approx(800e-9) and b == pytest.approx(50e-9)
    # A negative part (noise) is dropped and the other refitted alone, never below 0.
    a, b = _fit_two([(28.0, 160.0, 1e-6), (28.0, 990.0, 0.5e-6)])
    assert a >= 0 and b >= 0 and (a == 0 or b == 0)


@needs_engine
def test_tick_barrier_cells_take_the_hand_off_threshold_and_others_do_not() -> None:
    from tickpar.native.engine import engine_args, tick_barrier_handoff

    cell = resolve_cell("phold", SMALL["phold"], "tick-barrier", {}, 2, 1, engine="native")
    args = engine_args(cell.spec, "tick-barrier", 2, cell.options)
    assert (args["min_batch_ns"], args["batch_event_ns"]) == tick_barrier_handoff()
    assert min(tick_barrier_handoff()) >= 0
    one = engine_args(cell.spec, "tick-barrier", 1, cell.options)
    assert "min_batch_ns" not in one


@needs_engine
def test_a_native_value_replays_enough_to_last(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from tickpar.native import engine as native_engine

    cell = resolve_cell("phold", SMALL["phold"], "sequential", {}, 1, 1, engine="native")
    assert 1 <= native_engine.replays_for(cell.spec, "sequential", 1, {}) <= 1000
    record, stats = native.run_native(cell.spec, "sequential", 1, {}, replays=3)
    assert record.failure is None and stats["replays"] == 3 and stats["loop_s"] > 0
    # Calls of about 1 ms (2**-10 s: exact in binary) take ceil(10 ms / it) replays; a failed run is never
    # replayed: one.
    step = 2.0**-10
    clock = iter(i * step for i in range(100))
    monkeypatch.setattr(native_engine.time, "perf_counter", lambda: next(clock))
    ok = SimpleNamespace(failure=None)
    monkeypatch.setattr(native_engine, "run_native", lambda *a, **k: (ok, {}))
    want = math.ceil(native_engine.NATIVE_VALUE_S / step)
    assert native_engine.replays_for(cell.spec, "sequential", 1, {}) == want
    failed = SimpleNamespace(failure={"kind": "causality"})
    monkeypatch.setattr(native_engine, "run_native", lambda *a, **k: (failed, {}))
    assert native_engine.replays_for(cell.spec, "sequential", 1, {}) == 1
