"""Replaying gem5 traces: the shared real traces on both engines, and emit -> import -> replay ground truth."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tickpar import native
from tickpar.cli import main
from tickpar.gem5 import import_trace
from tickpar.gem5.emit import emit_trace
from tickpar.runner import check_cell, execute, explain, resolve_cell

ROOT = Path(__file__).resolve().parents[1]
#: The lab's real traces live beside the checkout (never copied into it); TICKPAR_GEM5_TRACES moves them.
SHARED = Path(os.environ.get("TICKPAR_GEM5_TRACES", ROOT.parent / "shared" / "gem5-traces"))
SHARED_TRACES = sorted(SHARED.glob("*.insert-log.txt")) if SHARED.is_dir() else []
needs_shared = pytest.mark.skipif(not SHARED_TRACES, reason=f"no shared gem5 traces in {SHARED}")
needs_native = pytest.mark.skipif(not native.available(), reason="the native engine is not built")
CALL_PRIORITY = -129  # a direct call's row in a component trace


def event_rows(record) -> dict[str, list[tuple[int, str]]]:
    """Per component, its events' (tick, name) in order (direct calls left out); components with none dropped."""
    rows = {c: [(int(r[0]), str(r[2])) for r in rs if int(r[1]) != CALL_PRIORITY] for c, rs in record.traces.items()}
    return {c: r for c, r in rows.items() if r}


def imported_rows(trace) -> dict[str, list[tuple[int, str]]]:
    out: dict[str, list[tuple[int, str]]] = {}
    for k in trace.served():
        inst = trace.occ_inst[k]
        out.setdefault(trace.components[trace.inst_comp(inst)], []).append(
            (trace.occ_tick[k], trace.names[trace.inst_name[inst]])
        )
    return out


def replay(params: dict, order: str = "gem5"):
    outcome = execute(resolve_cell("gem5trace", params, "sequential", {}, 1, 1, order=order, trace=True))
    assert outcome.record.failure is None, outcome.record.failure
    return outcome.record


# -- the shared traces -------------------------------------------------------------------------------
@needs_shared
@pytest.mark.parametrize("path", SHARED_TRACES, ids=lambda p: p.name)
@pytest.mark.parametrize("order", ["gem5", "canonical"])
def test_sequential_replay_serves_every_event_at_its_tick(path: Path, order: str) -> None:
    trace = import_trace(path)
    assert trace.events > 400
    assert event_rows(replay({"trace": str(path)}, order)) == imported_rows(trace)


@needs_shared
@pytest.mark.parametrize("path", SHARED_TRACES, ids=lambda p: p.name)
@pytest.mark.parametrize("engine", ["python", pytest.param("native", marks=needs_native)])
@pytest.mark.parametrize(
    ("strategy", "order"), [("sequential", "gem5"), ("tick-barrier", "gem5"), ("conservative", "canonical")]
)
def test_exact_strategies_are_exact_on_the_shared_traces(path: Path, engine: str, strategy: str, order: str) -> None:
    workers = 1 if strategy == "sequential" else 2
    cell = resolve_cell("gem5trace", {"trace": str(path)}, strategy, {}, workers, 1, order=order, engine=engine)
    verdict, _outcome = check_cell(cell)
    assert verdict.kind == "exact", verdict.reason


@needs_shared
def test_split_fails_on_the_timing_trace_and_names_the_gem5_events() -> None:
    path = next(p for p in SHARED_TRACES if "timing" in p.name)
    cell = resolve_cell("gem5trace", {"trace": str(path)}, "split", {}, 2, 1)
    verdict, outcome = check_cell(cell)
    assert verdict.kind in {"diverged", "causality", "race"}
    steps = explain(cell, verdict, outcome.record)
    text = json.dumps(steps)
    assert "wrapped_function_event" in text  # the anatomy speaks gem5's event names
    assert "board." in verdict.reason


@needs_shared
def test_native_engine_replays_the_imported_operations() -> None:
    path = next(p for p in SHARED_TRACES if "timing" in p.name)
    trace = import_trace(path)
    cell = resolve_cell("gem5trace", {"trace": str(path)}, "sequential", {}, 1, 1)
    from tickpar.native.record import record

    rec = record(cell.spec)
    assert len(rec.occ_ops) == trace.events
    recorded_ops = len(rec.init_ops) + sum(len(ops) for ops in rec.occ_ops)
    assert recorded_ops == len(trace.op_kind)


@needs_shared
def test_trace_profile_cli_writes_the_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "profile.json"
    assert main(["trace-profile", str(SHARED_TRACES[0]), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "critical path" in printed and "lower bound" in printed
    profile = json.loads(out.read_text())
    for key in (
        "events", "components", "ticks", "events_per_tick", "zero_delay_cross_share", "schedule_delay",
        "critical_path", "available_parallelism", "bounds",
    ):  # fmt: skip
        assert key in profile
    assert set(profile["ticks"]) == {"first", "last"}
    assert list(profile["bounds"]["tick-barrier"]) == ["1", "2", "4", "8", "16", "32", "64"]
    assert profile["available_parallelism"] == pytest.approx(profile["events"] / profile["critical_path"])
    for row in profile["bounds"].values():
        assert row["1"] == pytest.approx(1.0)
        assert all(row[p] <= row["64"] + 1e-9 for p in row)


def test_trace_profile_cli_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("0x10,a.e,0,5\n0x10,a.e,0x10,a.e,5,9,x\n0x10,a.e,0x10,a.e,9,12\n")
    assert main(["trace-profile", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:2:" in err[0]
    assert main(["trace-profile", str(bad), "--format", "stock"]) == 2
    assert "one of auto, event, insert-log" in capsys.readouterr().err


# -- ground truth: emit -> import -> replay ---------------------------------------------------------------
SMALL = {
    "phold": {"lps": 6, "end_tick": 4000, "granularity": 20},
    "multicore": {"cores": 2, "requests_per_core": 120, "l2_banks": 2, "mem_ctrls": 1},
}


@pytest.mark.parametrize("workload", sorted(SMALL))
@pytest.mark.parametrize("fmt", ["event", "insert-log"])
def test_emit_import_replay_is_exact(tmp_path: Path, workload: str, fmt: str) -> None:
    cell = resolve_cell(workload, SMALL[workload], "sequential", {}, 1, 1, trace=True)
    original = event_rows(execute(cell).record)
    path = tmp_path / f"{workload}.{fmt}.txt.gz"
    _lines, mapping = emit_trace(cell.spec, path, fmt)
    trace = import_trace(path, fmt, mapping)
    replayed = event_rows(replay({"trace": str(path), "format": fmt, "components": str(mapping or "")}))
    if fmt == "insert-log":
        # The insert log cannot say whether events pending after its last line ran: a run that ends by
        # draining its queue (multicore) loses its last, silent events; everything up to there must match.
        original = {c: [r for r in rows if r[0] <= trace.end_tick] for c, rows in original.items()}
        original = {c: r for c, r in original.items() if r}
    assert replayed == original
    assert sum(map(len, replayed.values())) > 200


def test_emit_cli_writes_a_trace_and_its_mapping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mc.txt"
    args = ["run", "-w", "multicore", "-p", "cores=1", "-p", "requests_per_core=20", "--emit-gem5-trace", str(path)]
    assert main(args) == 0
    assert "components mapping" in capsys.readouterr().out
    assert path.read_text().splitlines()[0].lstrip().startswith("0: ")
    assert (tmp_path / "mc.txt.components").is_file()
    assert main([*args[:-2], "--emit-gem5-trace", str(tmp_path / "no" / "dir.txt")]) == 2
