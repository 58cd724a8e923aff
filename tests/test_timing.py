"""tickpar.perf.timing: pyperf in fresh processes, interleaved rounds, every timed run checked, contention measured,
a record for every outcome, never a crash of the caller."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyperf
import pytest

import tickpar.plugins.registry
from tickpar.cli import main as cli_main
from tickpar.host.probe import cpu_availability
from tickpar.perf.timing import (
    TIMING_FORMAT,
    TimingJob,
    measure,
    measure_cells,
    summarize,
    values_for,
)
from tickpar.perf.timing import driver as timing_driver
from tickpar.runner import resolve_cell

TINY = {"lps": 4, "population": 2, "end_tick": 300}
TINY_ARGS = ["--workload", "phold", "--param", "lps=4", "--param", "population=2", "--param", "end_tick=300"]

PLUGIN = textwrap.dedent(
    """
    import time

    from tickpar.plugins import Strategy


    class Hang(Strategy):
        name = "test-hang"
        summary = "test double: never returns"

        def run(self, spec, workers, options):
            while True:
                time.sleep(0.05)


    class Wrong(Strategy):
        name = "test-wrong"
        summary = "test double: finishes, but computes another seed's run (digests differ)"

        def run(self, spec, workers, options):
            from dataclasses import replace

            from tickpar.plugins.registry import get_registry

            return get_registry().strategy("sequential")().run(replace(spec, seed=spec.seed + 1), 1, {})


    class BlasThreads(Strategy):
        name = "test-blas-threads"
        summary = "test double: the sequential run where the process has one BLAS thread, another seed's elsewhere"

        def run(self, spec, workers, options):
            import os
            from dataclasses import replace

            from tickpar.plugins.registry import get_registry

            one = all(os.environ.get(v) == "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"))
            run = spec if one else replace(spec, seed=spec.seed + 1)
            return get_registry().strategy("sequential")().run(run, 1, {})


    class Boom(Strategy):
        name = "test-boom"
        summary = "test double: raises"

        def run(self, spec, workers, options):
            raise RuntimeError("boom from the test double")
    """
)


@pytest.fixture
def doubles(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Strategies test-hang and test-boom, registered through TICKPAR_PLUGINS (which pyperf workers inherit)."""
    path = tmp_path / "doubles.py"
    path.write_text(PLUGIN)
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    tickpar.plugins.registry.get_registry(refresh=True)
    return path


def _cell(strategy: str = "sequential") -> object:
    return resolve_cell("phold", TINY, strategy, {}, 1, 1, "gem5", "none")


def test_summarize_values() -> None:
    """Mean, stdev, median of the values; stdev needs two values and is None below."""
    s = summarize([1.0, 2.0, 3.0, 6.0])
    assert s["n_values"] == 4
    assert s["mean_s"] == pytest.approx(3.0)
    assert s["median_s"] == pytest.approx(2.5)
    assert s["stdev_s"] == pytest.approx(2.160246899)
    assert summarize([0.5])["stdev_s"] is None
    assert summarize([])["mean_s"] is None


def test_measure_writes_record_and_pyperf_json(tmp_path: Path) -> None:
    """A timed cell gets rounds x values values, each checked and with its loop time, and one pyperf JSON
    (all rounds appended) that pyperf itself reads; rerunning overwrites."""
    out = tmp_path / "t.json"
    for _ in range(2):  # the second run must not trip over pyperf's refusal to overwrite its output
        rec = measure(
            _cell(), [*TINY_ARGS, "--work", "none"], out, processes=2, values=3, warmups=1, timeout=120, retimes=0
        )  # a busy test machine would re-time rounds: no extra rounds here
        assert rec["status"] == "ok", rec["reason"]
    data = json.loads(out.read_text())
    assert data["format"] == TIMING_FORMAT
    assert data["n_values"] == 6 and len(data["values"]) == 6
    assert [len(r["values"]) for r in data["rounds"]] == [3, 3]
    assert len(data["warmups"]) == 2
    assert data["mean_s"] > 0 and data["stdev_s"] is not None
    assert data["timed_exact"] is True and data["timed_verdicts"] == {"exact": 6}
    assert len(data["loop_values"]) == 6 and data["loop_source"] == "stat"  # sequential reports loop_s
    assert all(0 < loop <= whole for loop, whole in zip(data["loop_values"], data["values"], strict=True))
    assert 0 < data["cpu_available_min"] <= 1 and len(data["value_contended"]) == 6
    assert isinstance(data["rounds"][0]["load_avg_1min"], float)
    pyperf_file = tmp_path / "t.pyperf.json"
    assert data["pyperf_file"] == pyperf_file.name
    bench = pyperf.BenchmarkSuite.load(str(pyperf_file)).get_benchmarks()[0]
    assert bench.get_nvalue() == 6 and len(bench.get_runs()) == 2
    assert bench.get_metadata()["tickpar_strategy"] == "sequential"
    shown = subprocess.run([sys.executable, "-m", "pyperf", "show", str(pyperf_file)], capture_output=True, text=True)
    assert shown.returncode == 0 and "Mean +- std dev" in shown.stdout


def test_every_worker_uses_the_drivers_work_calibration(tmp_path: Path) -> None:
    """One calibration per timing job: each round's fresh worker does the same work per event as the others."""
    cell = resolve_cell("phold", TINY, "sequential", {}, 1, 1, "gem5", "gil-release")
    rec = measure(cell, [*TINY_ARGS, "--work", "gil-release"], tmp_path / "t.json", processes=2, values=3,
                  warmups=0, timeout=120, retimes=0)  # fmt: skip
    assert rec["status"] == "ok", rec["reason"]
    rate = rec["work_units_per_us"]
    assert rate > 0
    runs = pyperf.BenchmarkSuite.load(str(tmp_path / "t.pyperf.json")).get_benchmarks()[0].get_runs()
    assert [run.get_metadata()["tickpar_work_rate"] for run in runs] == [rate, rate]
    given = measure(cell, [*TINY_ARGS, "--work", "gil-release"], tmp_path / "u.json", processes=1, values=5,
                    warmups=0, timeout=120, work_rate=123.5)  # fmt: skip
    assert given["work_units_per_us"] == 123.5  # tickpar time --work-rate: a pipeline record's exact work


def test_rounds_interleave_the_cells(tmp_path: Path) -> None:
    """Round r times every cell once, rotated by r: the log shows cells alternating, not one cell's rounds in a row."""
    jobs = [
        TimingJob(
            resolve_cell("phold", TINY, "sequential", {}, 1, seed, "gem5", "none"),
            [*TINY_ARGS, "--seed", str(seed)],
            tmp_path / f"s{seed}.json",
        )
        for seed in (1, 2)
    ]
    log = tmp_path / "log.txt"
    with log.open("w") as f:
        records = measure_cells(jobs, rounds=3, values=2, warmups=0, timeout=120, retimes=0, log=f)
    assert [r["status"] for r in records] == ["ok", "ok"]
    order = [line.split()[1] for line in log.read_text().splitlines() if line.startswith("--- ")]
    assert [Path(o).name for o in order] == ["s1.json", "s2.json", "s2.json", "s1.json", "s1.json", "s2.json"]
    assert all(len(r["rounds"]) == 3 and r["timed_exact"] for r in records)


def test_a_timed_run_that_is_not_exact_is_flagged(doubles: Path, tmp_path: Path) -> None:
    """Every timed run is compared with the golden record: wrong digests give timed_exact false (status ok).  The
    pyperf workers find the plugin without being told to inherit TICKPAR_PLUGINS (DISCOVERY_ENVIRON)."""
    rec = measure(
        _cell("test-wrong"), [*TINY_ARGS, "--strategy", "test-wrong"], tmp_path / "t.json",
        processes=1, values=5, warmups=0, timeout=60, retimes=0,
    )  # fmt: skip
    assert rec["status"] == "ok"
    assert rec["timed_exact"] is False and rec["timed_verdicts"] == {"diverged": 5}
    assert "not exact" in rec["reason"]


def test_timed_workers_run_one_blas_thread_whatever_the_job_says(
    doubles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snakemake gives a timing job OPENBLAS_NUM_THREADS=<threads>; every timed worker still runs with 1 (a spinning
    BLAS thread beside a cell's own threads slowed the first values of native cells ~2x), and forwarding it again
    through inherit_environ changes nothing."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    rec = measure(
        _cell("test-blas-threads"), [*TINY_ARGS, "--strategy", "test-blas-threads"], tmp_path / "t.json",
        processes=1, values=2, warmups=0, timeout=60, retimes=0,
        inherit_environ=["TICKPAR_PLUGINS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"],
    )  # fmt: skip
    assert rec["status"] == "ok" and rec["timed_verdicts"] == {"exact": 2}, rec["reason"]
    assert rec["worker_env"]["OPENBLAS_NUM_THREADS"] == "1"


def test_contended_rounds_are_flagged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A round whose CPU-availability probe is below the threshold is contended: its values are flagged."""
    probes = iter([{"min": 1.0, "per_core": {0: 1.0}}] * 2 + [{"min": 0.4, "per_core": {0: 0.4}}] * 2)
    monkeypatch.setattr("tickpar.perf.timing.driver.cpu_availability", lambda: next(probes))
    rec = measure(_cell(), TINY_ARGS, tmp_path / "t.json", processes=2, values=3, warmups=0, timeout=120, retimes=0,
                  baseline_max_spread=0)  # fmt: skip
    assert [r["contended"] for r in rec["rounds"]] == [False, True]
    assert rec["n_retimed"] == 0 and rec["retime_reasons"] == []
    assert rec["value_contended"] == [False] * 3 + [True] * 3
    assert rec["n_contended"] == 3 and rec["cpu_available_min"] == 0.4
    assert rec["contended"] is False  # one round was clean: its values still count
    assert rec["n_values"] == 6 and rec["median_s"] == sorted(rec["values"][:3])[1]  # statistics of clean values


def _probes(*shares: float) -> object:
    """A stand-in for cpu_availability that returns ``shares`` in turn (then 1.0), and counts its calls."""
    queue = list(shares)

    def probe() -> dict:
        probe.calls += 1
        share = queue.pop(0) if queue else 1.0
        return {"min": share, "per_core": {0: share}}

    probe.calls = 0
    return probe


def test_a_contended_round_is_retimed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A contended round is timed again at once (a fresh probe before it): the clean attempt's values count, the
    contended one stays in the record, flagged and marked re-timed; the record says how many and why."""
    # probes: the driver's first, after round 0 (0.5: contended), before and after the re-time (clean), after round 1
    monkeypatch.setattr("tickpar.perf.timing.driver.cpu_availability", _probes(1.0, 0.5, 1.0, 1.0, 1.0))
    rec = measure(_cell(), TINY_ARGS, tmp_path / "t.json", processes=2, values=2, warmups=0, timeout=120,
                  retimes=2, retime_wait_s=0, baseline_max_spread=0, max_round_shift=0)  # fmt: skip
    assert rec["status"] == "ok", rec["reason"]
    assert [(r["round"], r["attempt"], r["contended"], r["retimed"]) for r in rec["rounds"]] == [
        (0, 0, True, True), (0, 1, False, False), (1, 0, False, False),
    ]  # fmt: skip
    assert rec["n_retimed"] == 1 and rec["retimes"] == 2
    assert rec["retime_reasons"] == ["round 0: CPU available 0.50 after it (< 0.90)"]
    assert rec["value_contended"] == [True, True, False, False, False, False]
    assert rec["contended"] is False and rec["n_contended"] == 2
    runs = pyperf.BenchmarkSuite.load(str(tmp_path / "t.pyperf.json")).get_benchmarks()[0].get_runs()
    assert len(runs) == 3  # every attempt's values stay readable by pyperf


def test_retimes_are_capped_per_cell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A machine that stays busy: the cell is re-timed `retimes` times, then it is contended (no speedup), and the
    reasons name every probe that failed."""
    monkeypatch.setattr("tickpar.perf.timing.driver.cpu_availability", _probes(*[0.3] * 20))
    rec = measure(_cell(), TINY_ARGS, tmp_path / "t.json", processes=2, values=2, warmups=0, timeout=120,
                  retimes=1, retime_wait_s=0, baseline_max_spread=0, max_round_shift=0)  # fmt: skip
    assert [(r["round"], r["attempt"]) for r in rec["rounds"]] == [(0, 0), (0, 1), (1, 0)]
    assert rec["n_retimed"] == 1 and rec["contended"] is True and rec["n_contended"] == 6
    assert rec["retime_reasons"] == ["round 0: CPU available 0.30 before it and CPU available 0.30 after it (< 0.90)"]
    with pytest.raises(ValueError, match="retimes"):
        measure(_cell(), TINY_ARGS, tmp_path / "u.json", retimes=-1)


def test_a_baseline_round_whose_values_spread_is_contended_and_retimed(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:  # fmt: skip
    """The sequential run is deterministic: a round whose loop values spread more than baseline_max_spread is the
    machine's doing (the probe saw nothing), so it is contended and re-timed; the reason gives the spread."""
    real = timing_driver.read_runs
    calls = []

    def spread_first_round(path: Path) -> list[dict]:
        lines = real(path)
        calls.append(path)
        if len(calls) == 1:  # the first round's second value took 50% longer
            lines = [line for line in lines if not line["warmup"]]
            lines[1] = {**lines[1], "loop_s": lines[0]["loop_s"] * 1.5}
        else:  # the others: no spread at all
            lines = [{**line, "loop_s": 0.001} for line in lines if not line["warmup"]]
        return lines

    monkeypatch.setattr(timing_driver, "read_runs", spread_first_round)
    monkeypatch.setattr(timing_driver, "cpu_availability", _probes())
    rec = measure(_cell(), TINY_ARGS, tmp_path / "t.json", processes=2, values=2, warmups=0, timeout=120,
                  retimes=2, retime_wait_s=0, max_round_shift=0)  # fmt: skip
    assert [(r["round"], r["attempt"], r["contended"], r["unstable"]) for r in rec["rounds"]] == [
        (0, 0, True, True), (0, 1, False, False), (1, 0, False, False),
    ]  # fmt: skip
    assert rec["rounds"][0]["loop_spread"] == pytest.approx(0.5)
    assert rec["retime_reasons"] == ["round 0: sequential loop values spread 50% (> 20%)"]
    assert rec["value_contended"] == [True, True, False, False, False, False]
    with pytest.raises(ValueError, match="baseline_max_spread -1"):
        measure(_cell(), TINY_ARGS, tmp_path / "u.json", baseline_max_spread=-1)


def test_a_slow_process_is_left_out_only_when_no_value_overlaps_the_fastest_rounds() -> None:
    """Interference only adds time: a round every value of which is more than max_round_shift above every value of
    the fastest round is a slow process; overlapping values (a strategy's own variation) never are."""
    from tickpar.perf.timing.rules import leave_out_slow_rounds, slow_rounds

    def round_(*ms: float, contended: bool = False) -> dict:
        return {"round": 0, "attempt": 0, "loop_values": [m / 1e3 for m in ms], "contended": contended}

    # the phold baseline of a fresh make report: 5.38-5.54 ms in one process, 3.59-3.66 in the other
    assert slow_rounds([round_(5.38, 5.54, 5.49), round_(3.66, 3.59, 3.61)]) == [0]
    assert slow_rounds([round_(4.3, 4.4, 4.5), round_(3.66, 3.59, 3.61)]) == [0]  # 4.3 > 3.66 x 1.15
    assert slow_rounds([round_(4.3, 4.4, 4.5), round_(3.66, 3.59, 3.61)], 0.2) == []  # 4.3 < 3.66 x 1.2
    assert slow_rounds([round_(3.5, 5.2, 5.4), round_(3.66, 3.59, 3.61)]) == []  # overlaps: not a shift
    # contention only adds time: a contended round faster than every value of a clean one shows a slow process
    assert slow_rounds([round_(9.0, 9.1), round_(3.6, 3.7, contended=True)]) == [0]
    assert slow_rounds([round_(3.6, 3.7), round_(9.0, 9.1, contended=True)]) == []  # only clean rounds are judged
    assert slow_rounds([round_(5.4, 5.5)]) == []  # one round: nothing to compare
    assert slow_rounds([round_(5.4, 5.5), round_(3.6, 3.7)], 0) == []  # 0: off
    record = {"rounds": [round_(5.38, 5.54), round_(3.66, 3.59)]}
    leave_out_slow_rounds(record, 0.15)
    assert [r["contended"] for r in record["rounds"]] == [True, False] and record["rounds"][0]["slow"]
    assert record["slow_rounds"] == [
        "round 0: loop 5.38-5.54 ms, every value more than 15% above the fastest round's 3.59-3.66 ms (a slow process)"
    ]


def test_a_slow_process_is_timed_again_within_the_retime_budget(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:  # fmt: skip
    """After the rounds, a cell with a slow process gets a fresh one (a re-time, counted and explained); the slow
    round stays in the record, marked; a cell whose re-times are spent keeps its slow round marked, not timed."""
    from tickpar.perf.timing.driver import retime_slow_rounds

    def round_(no: int, attempt: int, *ms: float, contended: bool = False) -> dict:
        return {"round": no, "attempt": attempt, "loop_values": [m / 1e3 for m in ms], "contended": contended,
                "retimed": False}  # fmt: skip

    timed: list[tuple[int, int]] = []
    fresh = iter([(7.5, 7.6), (5.0, 5.1)])  # the first re-time is a slow process again, the second is not

    def fake_round(job: TimingJob, index: int, round_no: int, tmp: Path, *, attempt: int, **_: object) -> None:
        timed.append((round_no, attempt))
        job.record["rounds"].append(round_(round_no, attempt, *next(fresh)))

    monkeypatch.setattr("tickpar.perf.timing.driver.time_round", fake_round)
    monkeypatch.setattr("tickpar.perf.timing.driver.cpu_availability", lambda *a, **k: {"min": 1.0})
    job = TimingJob(_cell(), TINY_ARGS, tmp_path / "t.json")
    job.record.update(rounds=[round_(0, 0, 5.2, 5.5, contended=True), round_(1, 0, 7.4, 7.8)], n_retimed=0,
                      retime_reasons=[])  # fmt: skip
    retime_slow_rounds(job, 0, tmp_path, 0.15, retimes=2)
    assert timed == [(1, 1), (1, 2)] and job.record["n_retimed"] == 2
    assert [(r["round"], r["attempt"], r.get("slow", False)) for r in job.record["rounds"]] == [
        (0, 0, False), (1, 0, True), (1, 1, True), (1, 2, False),
    ]  # fmt: skip
    assert job.record["retime_reasons"][0].startswith("round 1: loop 7.4-7.8 ms, every value more than 15% above")
    spent = TimingJob(_cell(), TINY_ARGS, tmp_path / "u.json")
    spent.record.update(rounds=[round_(0, 0, 5.2, 5.5), round_(1, 0, 7.4, 7.8)], n_retimed=2, retime_reasons=[])
    retime_slow_rounds(spent, 0, tmp_path, 0.15, retimes=2)
    assert len(spent.record["rounds"]) == 2 and "slow" not in spent.record["rounds"][1]  # _finish marks it


def test_only_cells_with_one_simulation_thread_per_process_are_judged_for_slow_processes(tmp_path: Path) -> None:
    """One worker, or LPs in processes: a process's speed is the machine's. Threads under the GIL settle into a
    hand-off pattern per process, the strategy's own: such a cell is not re-timed for it."""
    from tickpar.perf.timing.driver import retime_slow_rounds
    from tickpar.perf.timing.rules import judged_for_slow_processes

    def cell(strategy: str, workers: int, **options: object) -> Any:
        return resolve_cell("phold", TINY, strategy, dict(options), workers, 1, "canonical", "none")

    assert judged_for_slow_processes(cell("sequential", 1))
    assert judged_for_slow_processes(cell("conservative", 1, backend="threads"))
    assert judged_for_slow_processes(cell("conservative", 2, backend="processes"))
    assert not judged_for_slow_processes(cell("conservative", 2, backend="threads"))
    assert not judged_for_slow_processes(cell("tick-barrier", 2))
    threads = TimingJob(cell("conservative", 2, backend="threads"), TINY_ARGS, tmp_path / "t.json")
    rounds = [{"round": 0, "attempt": 0, "loop_values": [0.0087, 0.0088], "contended": False, "retimed": False},
              {"round": 1, "attempt": 0, "loop_values": [0.0210, 0.0215], "contended": False, "retimed": False}]
    threads.record.update(rounds=rounds, n_retimed=0, retime_reasons=[])
    retime_slow_rounds(threads, 0, tmp_path, 0.15, retimes=2)  # a re-time would fail here: no pyperf to run
    assert threads.record["n_retimed"] == 0 and not any(r.get("slow") for r in threads.record["rounds"])


def test_a_long_cell_gets_fewer_values(tmp_path: Path) -> None:
    """timing.long_cell_s: a cell whose correctness run took at least that long is timed with long_values
    values per round; the others keep values; a record without wall_s changes nothing."""
    jobs = []
    for seed, wall in ((1, 0.8), (2, 0.01), (3, None)):
        check = tmp_path / f"check{seed}.json"
        check.write_text(
            json.dumps({"verdict": {"kind": "exact"}, "failure": None, **({"wall_s": wall} if wall else {})})
        )
        cell = resolve_cell("phold", TINY, "sequential", {}, 1, seed, "gem5", "none")
        jobs.append(TimingJob(cell, [*TINY_ARGS, "--seed", str(seed)], tmp_path / f"s{seed}.json", check=str(check)))
    records = measure_cells(jobs, rounds=2, values=3, warmups=0, timeout=120, retimes=0, long_cell_s=0.5, long_values=1)
    assert [r["status"] for r in records] == ["ok", "ok", "ok"]
    assert [r["values_per_process"] for r in records] == [1, 3, 3]
    assert [len(r["values"]) for r in records] == [2, 6, 6]
    assert values_for(jobs[0], 3, 0.0, 1) == 3  # long_cell_s 0: off
    assert values_for(jobs[0], 3, 0.5, 5) == 3  # never more values than the others get
    with pytest.raises(ValueError, match="must be >= 1"):
        measure_cells(jobs, values=3, long_values=0)


def test_cpu_availability_probe() -> None:
    """One share per usable core, each in (0, 1]; the thread's CPU affinity is restored afterwards."""
    import os

    before = os.sched_getaffinity(0)
    probe = cpu_availability(per_core_s=0.005)
    assert set(probe["per_core"]) == before
    assert all(0 < share <= 1 for share in probe["per_core"].values())
    assert probe["min"] == min(probe["per_core"].values())
    assert os.sched_getaffinity(0) == before


@pytest.mark.parametrize(
    ("check_record", "why"),
    [
        ({"verdict": {"kind": "timeout", "reason": "slow"}, "failure": None}, "timeout"),
        ({"verdict": {"kind": "causality", "reason": "x"}, "failure": {"kind": "causality"}}, "causality"),
    ],
)
def test_measure_skips_a_cell_whose_check_did_not_finish(tmp_path: Path, check_record: dict, why: str) -> None:
    """After a run that did not finish (timeout, or a raised causality error) the cell is not timed."""
    check = tmp_path / "check.json"
    check.write_text(json.dumps(check_record))
    rec = measure(_cell(), TINY_ARGS, tmp_path / "t.json", check=check, timeout=30)
    assert rec["status"] == "skipped"
    assert why in rec["reason"]
    assert rec["values"] == [] and rec["mean_s"] is None
    assert not (tmp_path / "t.pyperf.json").exists()


def test_measure_records_a_crash(doubles: Path, tmp_path: Path) -> None:
    """A strategy that raises in the pyperf worker gives status crash, not an exception."""
    rec = measure(
        _cell("test-boom"), [*TINY_ARGS, "--strategy", "test-boom"], tmp_path / "t.json",
        processes=1, values=5, warmups=0, timeout=60, inherit_environ=["TICKPAR_PLUGINS"],
    )  # fmt: skip
    assert rec["status"] == "crash"
    assert json.loads((tmp_path / "t.json").read_text())["status"] == "crash"


def test_measure_kills_a_hang_at_the_limit(doubles: Path, tmp_path: Path) -> None:
    """A strategy that never returns is killed with its process group at the limit: status timeout."""
    rec = measure(
        _cell("test-hang"), [*TINY_ARGS, "--strategy", "test-hang"], tmp_path / "t.json",
        processes=1, values=5, warmups=0, timeout=4, inherit_environ=["TICKPAR_PLUGINS"],
    )  # fmt: skip
    assert rec["status"] == "timeout"
    assert "4 s limit" in rec["reason"]


def test_cli_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tickpar time` prints mean +- stdev and exits 0; bad pyperf settings are one-line errors (exit 2)."""
    out = tmp_path / "t.json"
    args = ["time", "-w", "phold", "-p", "lps=4", "-p", "end_tick=300", "--processes", "1", "--values", "5"]
    assert cli_main([*args, "--warmups", "0", "--retimes", "0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "over 5 values" in printed and "timed runs exact" in printed
    assert json.loads(out.read_text())["n_values"] == 5
    assert cli_main([*args[:7], "--values", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--values" in err[0]


def test_a_failing_timing_job_still_writes_every_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline's timing job: if the driver itself fails, each cell gets a crash record and the index is written."""
    from types import SimpleNamespace

    from tickpar.perf import timing

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(timing, "measure_cells", broken)
    entry = {
        "workload": "phold", "params": TINY, "strategy": "sequential", "options": {}, "workers": 1, "seed": 1,
        "order": "gem5", "work": "none", "cli_args": TINY_ARGS, "timing_path": str(tmp_path / "c.json"),
        "pyperf_path": str(tmp_path / "c.pyperf.json"), "check_path": None, "golden_path": None,
    }  # fmt: skip
    settings = {"processes": 2, "values": 3, "warmups": 1, "timeout_s": 10, "inherit_environ": [], "extra_args": [],
                "min_cpu_available": 0.9, "retimes": 2, "retime_wait_s": 1.0}  # fmt: skip
    smk = SimpleNamespace(params=SimpleNamespace(timing=settings, cells=[entry]), log=[str(tmp_path / "log")],
                          output=[str(tmp_path / "index.json")])  # fmt: skip
    timing.main_snakemake(smk)
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["status"] == "crash" and "disk full" in record["reason"]
    assert json.loads((tmp_path / "index.json").read_text())["cells"][0]["status"] == "crash"


def test_set_rate_refuses_what_has_no_rate() -> None:
    """tickpar.kernel.work.set_rate: only gil-release and gil-hold have a rate, and it is positive (one-line errors)."""
    from tickpar.kernel.work import set_rate

    with pytest.raises(ValueError, match="'none' has no rate"):
        set_rate("none", 1.0)
    with pytest.raises(ValueError, match=r"work rate 0\.0 is not allowed"):
        set_rate("gil-hold", 0.0)
