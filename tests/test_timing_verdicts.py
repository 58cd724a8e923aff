"""A timed cell whose run is not exact is recorded with its verdict, not as a crash (issue #44): a run that stops
with a causality error in the pyperf worker is a value with that verdict, on both engines; a strategy that
raises anything else is still a crash, whose reason is the worker's own line, not pyperf's."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import tickpar.plugins.registry
from tickpar import native
from tickpar.cli import main as cli_main
from tickpar.perf.timing import measure
from tickpar.runner import resolve_cell

ONE_ROUND = ["--processes", "1", "--values", "2", "--warmups", "0", "--retimes", "0", "--min-cpu-available", "0"]


def _time(tmp_path: Path, *cell: str) -> tuple[int, dict]:
    out = tmp_path / "t.json"
    rc = cli_main(["time", *cell, *ONE_ROUND, "--out", str(out)])
    return rc, json.loads(out.read_text())


def test_a_run_that_stops_with_causality_is_recorded_with_its_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The prototype on a 2-core multicore stops with gem5's `when >= curTick` assertion (deterministically: the
    seeded interleaver): each timed value is that run, its verdict causality; the record is ok, not exact."""
    rc, rec = _time(tmp_path, "-w", "multicore", "-p", "cores=2", "-s", "split", "-n", "2")
    assert rc == 0 and rec["status"] == "ok", rec["reason"]
    assert rec["timed_exact"] is False and rec["timed_verdicts"] == {"causality": 2}
    assert rec["reason"].startswith("timed runs not exact: causality x2; first stop: schedule(system.cpu")
    assert rec["rounds"][0]["failures"] and "when < cur_tick" in rec["rounds"][0]["failures"][0]
    assert len(rec["values"]) == 2 and all(v > 0 for v in rec["values"])
    assert "timed runs NOT exact (causality x2)" in capsys.readouterr().out


def test_a_race_is_recorded_with_its_verdict(tmp_path: Path) -> None:
    """tick-barrier grouping by name on one thread: races in every run, as its promise allows."""
    rc, rec = _time(tmp_path, "-w", "multicore", "-p", "cores=2", "-p", "requests_per_core=30", "-s", "tick-barrier",
                    "-n", "2", "-o", "lock_key=name", "-o", "executor=inline")  # fmt: skip
    assert rc == 0 and rec["status"] == "ok" and rec["timed_verdicts"] == {"race": 2}
    assert rec["reason"] == "timed runs not exact: race x2"


@pytest.mark.skipif(not native.available(), reason="the native engine is not built")
def test_a_native_run_that_is_not_exact_is_recorded_with_its_verdict(tmp_path: Path) -> None:
    """The prototype in C++ on real threads: whatever each run gives (causality where handlers overlapped), the
    cell is recorded with its verdicts, never a crash of its pyperf worker."""
    rc, rec = _time(tmp_path, "--engine", "native", "-w", "multicore", "-p", "cores=2", "-s", "split", "-n", "2")
    assert rc == 0 and rec["status"] == "ok", rec["reason"]
    assert sum(rec["timed_verdicts"].values()) == 2 and set(rec["timed_verdicts"]) <= {"exact", "causality", "race",
                                                                                          "diverged"}  # fmt: skip


BOOM = textwrap.dedent(
    """
    from tickpar.plugins import Strategy


    class Boom(Strategy):
        name = "test-boom-verdicts"
        summary = "test double: raises"

        def run(self, spec, workers, options):
            raise RuntimeError("boom from the verdicts test")
    """
)


def test_a_strategy_that_raises_is_still_a_crash_with_the_workers_own_reason(
    plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "boom.py"
    path.write_text(BOOM)
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    tickpar.plugins.registry.get_registry(refresh=True)
    cell = resolve_cell("phold", {"lps": 4, "population": 2, "end_tick": 300}, "test-boom-verdicts", {}, 1, 1,
                        "gem5", "none")  # fmt: skip
    args = ["--workload", "phold", "--param", "lps=4", "--param", "population=2", "--param", "end_tick=300",
            "--strategy", "test-boom-verdicts", "--work", "none"]  # fmt: skip
    rec = measure(cell, args, tmp_path / "t.json", processes=1, values=2, warmups=0, timeout=60,
                  inherit_environ=["TICKPAR_PLUGINS"], retimes=0)  # fmt: skip
    assert rec["status"] == "crash"
    assert "run did not finish: crash: RuntimeError: boom from the verdicts test" in rec["reason"]
