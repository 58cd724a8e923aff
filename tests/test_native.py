"""The native engine behind the CLI: ``--engine native`` on run and check, every native strategy on both
workloads against the Python golden run, the DAG recording, ``tickpar calibrate``, and the one-line error
where the extension is not built."""

from __future__ import annotations

import json
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
    for key in ("mutex_ns", "barrier_ns", "message_ns", "event_ns", "tb_batch_ns", "pingpong_ns", "heap_ns"):
        assert data[key] > 0 and key in data["what"]
    assert data["details"]["tb_parallel_batches"] > 0 and data["details"]["heap_ns_pending64"] > 0
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
