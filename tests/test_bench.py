"""The engine benchmark (bench/engine.py): its PHOLD baselines model the same PHOLD as tickpar, and it runs.

Timing is never asserted here: only that every implementation runs and processes the same events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyperf
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

from phold_baselines import IMPLEMENTATIONS, UNAVAILABLE, Outcome, PholdParams, check_counts  # noqa: E402

TINY = [
    PholdParams(lps=4, population=2, end_tick=400),
    PholdParams(lps=6, population=3, remote=0.0, end_tick=300),
    PholdParams(lps=5, population=1, remote=1.0, lookahead=3, mean=7.5, end_tick=250),
    PholdParams(lps=1, population=4, remote=0.0, end_tick=200),
]


@pytest.mark.parametrize("params", TINY, ids=lambda p: p.describe().replace(" ", ","))
def test_every_implementation_processes_the_same_events(params: PholdParams) -> None:
    """All implementations draw the same numbers per LP, so they process exactly the same events per LP.

    Tie-breaking differs (gem5 LIFO vs FIFO), but an LP's draws depend only on how
    many events it has processed, so per-LP counts must agree exactly; in
    particular the totals are within the 2% the issue allows.
    """
    outcomes = {name: simulate(params, 7) for name, simulate in IMPLEMENTATIONS.items()}
    for name, out in outcomes.items():
        assert out.events > 0, name
        assert out.loop_s >= 0.0, name
        assert len(out.received) == params.lps, name
    check_counts(outcomes)
    totals = [out.events for out in outcomes.values()]
    assert max(totals) <= 1.02 * min(totals)


@pytest.mark.parametrize("name, module", [("desimpy", "desimpy"), ("salabim", "salabim")])
def test_library_peers_run_the_same_phold(name: str, module: str) -> None:
    """desimpy and salabim are registered where they import and process exactly tickpar's events per LP."""
    pytest.importorskip(module)
    assert name in IMPLEMENTATIONS and name not in UNAVAILABLE
    for params in TINY:
        outcomes = {"tickpar_sequential": IMPLEMENTATIONS["tickpar_sequential"](params, 5)}
        outcomes[name] = IMPLEMENTATIONS[name](params, 5)
        check_counts(outcomes)
        assert outcomes[name].events > 0


def test_salabim_stops_after_the_events_at_end_tick() -> None:
    """salabim's run(till=end_tick) runs the events at end_tick and none after (an event lands on it here)."""
    pytest.importorskip("salabim")
    runs = []
    for end in (60, 61):  # several events a tick: the two ends differ
        p = PholdParams(lps=3, population=2, lookahead=1, mean=2.0, end_tick=end)
        runs.append(IMPLEMENTATIONS["salabim"](p, 3).received)
        assert runs[-1] == IMPLEMENTATIONS["heapq_bare"](p, 3).received
    assert runs[0] != runs[1]


def test_tickpar_counts_match_the_workload_record() -> None:
    """The tickpar implementation reports the phold workload's own per-LP counts (``state()[0]`` is ``received``)."""
    from tickpar.plugins.registry import get_registry
    from tickpar.runner import resolve_cell

    params = TINY[0]
    cell = resolve_cell("phold", params.workload_params(), "sequential", None, 1, 3)
    result = get_registry().strategy("sequential")().run(cell.spec, 1, dict(cell.options))
    assert IMPLEMENTATIONS["tickpar_sequential"](params, 3).events == result.record.events


def test_seed_changes_the_run() -> None:
    a = IMPLEMENTATIONS["heapq_bare"](TINY[0], 1)
    b = IMPLEMENTATIONS["heapq_bare"](TINY[0], 2)
    assert a.received != b.received


def test_check_counts_reports_a_mismatch() -> None:
    good = Outcome((3, 4), 0.0)
    with pytest.raises(AssertionError, match="per-LP counts differ at LPs \\[1\\]"):
        check_counts({"a": good, "b": Outcome((3, 5), 0.0)})


def test_params_are_validated() -> None:
    with pytest.raises(ValueError, match="needs lps >= 2"):
        PholdParams(lps=1, remote=0.5)
    with pytest.raises(ValueError, match="out of range"):
        PholdParams(end_tick=0)


def test_engine_script_runs_and_summarises(tmp_path: Path) -> None:
    """A tiny in-process pyperf run writes JSON with every implementation and prints the two ratios."""
    out = tmp_path / "engine.json"
    cmd = [
        sys.executable,
        str(BENCH / "engine.py"),
        "--in-process",
        "-p",
        "1",
        "-n",
        "2",
        "-w",
        "0",
        "-l",
        "1",
        "--lps",
        "4",
        "--population",
        "2",
        "--end-tick",
        "300",
        "--impl",
        "all",
        "-o",
        str(out),
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "ratio tickpar/SimPy" in run.stdout
    assert "ratio tickpar/heapq" in run.stdout
    benchmarks = pyperf.BenchmarkSuite.load(str(out)).get_benchmarks()
    assert [b.get_name() for b in benchmarks] == list(IMPLEMENTATIONS)
    events = {b.get_metadata()["phold_events"] for b in benchmarks}
    assert len(events) == 1 and events.pop() > 0
    assert all(b.get_nvalue() >= 2 and b.mean() > 0 for b in benchmarks)

    shown = subprocess.run(
        [sys.executable, str(BENCH / "engine.py"), "--show", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "ratio tickpar/heapq" in shown.stdout


def test_instruction_counter_parses_cachegrind_and_runs_children() -> None:
    """bench/instructions.py: the valgrind summary parser, and its child mode (no valgrind needed)."""
    from instructions import parse_counters

    stderr = "==1== I   refs:      1,234,567\n==1== D1  misses:        8,910  (  8,000 rd   +   910 wr)\n"
    assert parse_counters(stderr) == {"I": 1234567, "D1": 8910}
    with pytest.raises(RuntimeError, match="no instruction count"):
        parse_counters("nothing here")
    done = subprocess.run(
        [sys.executable, str(BENCH / "instructions.py"), "--child", "heapq_bare", "--lps", "4", "--end-tick", "300"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert '"events"' in done.stdout


SPEEDUP_CONFIG = """
seeds: [1]
orders: [gem5]
work: [none]
workers: [1, 2]
timing: {processes: 2, values: 3, warmups: 0, min_cpu_available: 0.0, baseline_max_spread: 0, max_round_shift: 0}
workloads:
  phold:
    shapes: {tiny: {lps: 4, population: 2, granularity: 20, end_tick: 400, work_us: 0.0}}
strategies:
  sequential: null
  tick-barrier: null
"""


def test_speedup_front_end_uses_the_pipeline_timing(tmp_path: Path) -> None:
    """bench/speedup.py times a sweep's 2-worker cells with tickpar.perf.timing and prints the aggregate's statistic."""
    config = tmp_path / "sweep.yaml"
    config.write_text(SPEEDUP_CONFIG)
    res = subprocess.run(
        [sys.executable, str(BENCH / "speedup.py"), "--config", str(config), "--work-us", "0",
         "--out-dir", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    line = next(row for row in res.stdout.splitlines() if "tick-barrier" in row)
    assert "speedup" in line and "loop" in line and "(exact)" in line
    records = list((tmp_path / "out" / "results" / "timing").rglob("w2-s1.json"))
    assert len(records) == 1 and pyperf.BenchmarkSuite.load(str(records[0].with_suffix(".pyperf.json")))


def test_gil_handoff_runs_and_refuses_bad_pairs() -> None:
    """bench/gil_handoff.py: per-iteration times are positive, and a bad --pairs is a one-line error."""
    import gil_handoff

    assert gil_handoff.per_iteration(2, 5, 20, threads=2, repeats=1) > 0
    argv = [sys.executable, str(BENCH / "gil_handoff.py"), "--pairs", "10"]
    bad = subprocess.run(argv, capture_output=True, text=True)
    assert bad.returncode != 0 and "--pairs '10'" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_speedup_front_end_takes_each_engine_over_its_own_baseline() -> None:
    """A native cell's speedup is over the native sequential replay, a Python cell's over the Python loop (as the
    pipeline's aggregate): taking the native cells over the Python loop printed 2.5-4x on 2 cores."""
    import speedup
    import yaml

    from tickpar.pipeline.sweep import load_sweep

    both = "{engines: [python, native]}"
    text = SPEEDUP_CONFIG.replace("  sequential: null\n  tick-barrier: null\n",
                                  f"  sequential: {both}\n  tick-barrier: {both}\n")  # fmt: skip
    sweep = load_sweep(yaml.safe_load(text), "sweep.yaml")
    cells = [c for group in sweep.timing_groups.values() for c in group]
    parallel = [c for c in cells if c.strategy == "tick-barrier" and c.workers == 2]
    assert {c.engine for c in parallel} == {"python", "native"}
    for cell in parallel:
        base = speedup.baseline_of(cell, cells)
        assert base is not None and base.strategy == "sequential"
        assert (base.engine, base.interpreter, base.order) == (cell.engine, cell.interpreter, cell.order)


# ---------------------------------------------------------------- --interleave and its JSON record

TINY_ARGS = ["--lps", "4", "--population", "2", "--end-tick", "300"]
NO_COMPILED = {"TICKPAR_COMPILED_TREE": "/nonexistent-compiled-tree"}  # the same peers with or without a build


def _engine(args: list[str], prelude: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """bench/engine.py ARGS in a child; ``prelude`` runs first (e.g. to make a library unimportable)."""
    code = f"import runpy, sys\n{prelude}\nsys.argv = {[str(BENCH / 'engine.py'), *args]!r}\n"
    code += f"runpy.run_path({str(BENCH / 'engine.py')!r}, run_name='__main__')\n"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


def test_interleaved_run_writes_a_record_with_medians_intervals_ratios_and_environment(tmp_path: Path) -> None:
    """--interleave --json: per implementation events/s and ratio to simpy_callbacks, each with its interval."""
    pytest.importorskip("simpy")
    out = tmp_path / "engine.json"
    run = _engine(["--interleave", "3", "--impl", "all", *TINY_ARGS, "--json", str(out)], env=NO_COMPILED)
    assert run.returncode == 0, run.stderr[-2000:]
    record = json.loads(out.read_text())
    assert record["kind"] == "tickpar-engine-bench" and record["status"] == "ok" and record["rounds"] == 3
    assert record["model"]["lps"] == 4 and record["model"]["end_tick"] == 300 and record["model"]["events"] > 0
    assert record["reference"] == "simpy_callbacks"
    impls = record["implementations"]
    assert list(impls) == [n for n in IMPLEMENTATIONS if n != "tickpar_compiled"]
    assert "tickpar_compiled" in record["skipped"] and "no compiled kernel" in record["skipped"]["tickpar_compiled"]
    assert "engine.py: tickpar_compiled skipped: no compiled kernel" in run.stderr
    for name, entry in impls.items():
        assert entry["events"] == record["model"]["events"], name
        assert len(entry["rates"]) == 3, name
        e = entry["events_per_s"]
        assert 0 < e["lo"] <= e["median"] <= e["hi"], name
        r = entry["ratios"]["simpy_callbacks"]
        assert 0 < r["lo"] <= r["median"] <= r["hi"], name
    assert impls["simpy_callbacks"]["ratios"]["simpy_callbacks"] == {"median": 1.0, "lo": 1.0, "hi": 1.0}
    assert impls["tickpar_sequential"]["kernel"] in ("pure", "compiled") and impls["heapq_bare"]["kernel"] is None
    assert impls["simpy_callbacks"]["library"].startswith("simpy ")
    env = record["environment"]
    assert env["python"] and env["implementation"] and record["versions"]["simpy"]
    assert "goal pure tickpar >= 1x simpy_callbacks" in run.stdout

    shown = _engine(["--show", str(out)])
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "simpy_callbacks" in shown.stdout and "goal compiled tickpar >= 0.5x heapq_bare" in shown.stdout


def test_a_missing_library_is_skipped_with_a_note(tmp_path: Path) -> None:
    """Where salabim and desimpy do not import, --impl all runs the others and says so, one line each."""
    out = tmp_path / "engine.json"
    prelude = "sys.modules['salabim'] = None\nsys.modules['desimpy'] = None"
    run = _engine(["--interleave", "2", "--impl", "all", *TINY_ARGS, "--json", str(out)], prelude, NO_COMPILED)
    assert run.returncode == 0, run.stderr[-2000:]
    notes = [line for line in run.stderr.splitlines() if "skipped" in line]
    assert len([n for n in notes if n.startswith("engine.py: salabim skipped: salabim does not import")]) == 1
    assert len([n for n in notes if n.startswith("engine.py: desimpy skipped: desimpy does not import")]) == 1
    record = json.loads(out.read_text())
    assert record["status"] == "ok"
    assert {"salabim", "desimpy"} <= set(record["skipped"]) and not {"salabim", "desimpy"} & set(
        record["implementations"]
    )
    assert "heapq_bare" in record["implementations"] and "skipped: salabim: salabim does not import" in run.stdout
    named = _engine(["--interleave", "1", "--impl", "salabim,heapq_bare", *TINY_ARGS], prelude)
    lines = named.stderr.strip().splitlines()
    assert (
        named.returncode != 0 and len(lines) == 1 and "not available here (salabim: salabim does not import" in lines[0]
    )


def test_a_bad_impl_is_one_line_naming_it_and_what_is_allowed() -> None:
    run = _engine(["--interleave", "1", "--impl", "tickpar_sequential,simpy_fast"])
    lines = run.stderr.strip().splitlines()
    assert run.returncode != 0 and len(lines) == 1, run.stderr
    assert "--impl 'tickpar_sequential,simpy_fast': unknown simpy_fast" in lines[0] and "heapq_bare" in lines[0]
    assert "or 'all'" in lines[0]


def test_an_implementation_that_fails_is_recorded_and_the_others_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash or a wrong event count drops that implementation with why; the rest are still measured."""
    import engine

    def broken(params: PholdParams, seed: int) -> Outcome:
        raise ValueError("boom")

    def miscounts(params: PholdParams, seed: int) -> Outcome:
        out = IMPLEMENTATIONS["heapq_bare"](params, seed)
        return Outcome((out.received[0] + 1, *out.received[1:]), out.loop_s)

    calls = {"n": 0}

    def late(params: PholdParams, seed: int) -> Outcome:
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError("fails in a timed round")
        return IMPLEMENTATIONS["heapq_bare"](params, seed)

    for name, fn in (("broken", broken), ("miscounts", miscounts), ("late", late)):
        monkeypatch.setitem(IMPLEMENTATIONS, name, fn)
    record = engine.interleaved(["heapq_bare", "broken", "miscounts", "late"], TINY[0], 1, 2, cold=True)
    assert record["status"] == "partial" and list(record["implementations"]) == ["heapq_bare"]
    assert record["failed"]["broken"] == "untimed first run: ValueError: boom"
    assert record["failed"]["miscounts"].startswith("event counts differ:")
    assert record["failed"]["late"] == "round 1: RuntimeError: fails in a timed round"
    assert len(record["implementations"]["heapq_bare"]["rates"]) == 2
    assert any(
        line == "failed: broken: untimed first run: ValueError: boom" for line in engine.interleaved_lines(record)
    )
    nothing = engine.interleaved(["broken"], TINY[0], 1, 1, cold=True)
    assert nothing["status"] == "failed" and nothing["error"].startswith("no implementation ran: broken:")
