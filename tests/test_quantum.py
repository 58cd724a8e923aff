"""The ``quantum`` strategy: gem5's sim_quantum barrier, exact up to the lookahead, relaxed (and measured) beyond."""

from __future__ import annotations

import pytest

from tickpar.cli import main
from tickpar.kernel.params import ParamError
from tickpar.pdes.plan import Plan
from tickpar.pdes.quantum import QuantumSync
from tickpar.plugins.registry import get_registry
from tickpar.runner import check_cell, execute, resolve_cell

PHOLD = {"lps": 8, "population": 4, "lookahead": 10, "mean": 50.0, "end_tick": 2000}
MULTICORE = {"cores": 2, "requests_per_core": 60}
SMALL = {"phold": PHOLD, "multicore": MULTICORE}


def _check(workload: str, options: dict, workers: int = 2, order: str = "canonical", seed: int = 1):
    cell = resolve_cell(workload, SMALL[workload], "quantum", options, workers, seed, order=order)
    verdict, outcome = check_cell(cell)
    return cell, verdict, outcome


def _promise(workload: str, options: dict, workers: int = 2, order: str = "canonical") -> str | None:
    cell = resolve_cell(workload, SMALL[workload], "quantum", options, workers, 1, order=order)
    return get_registry().strategy("quantum")().expected_verdict(cell.spec, workers, cell.options)


# ---------------------------------------------------------------- exact up to the lookahead


@pytest.mark.parametrize("workload", ["phold", "multicore"])
def test_ratio_one_is_exact_in_canonical_order(workload: str) -> None:
    _cell, verdict, outcome = _check(workload, {"quantum_ratio": 1})
    assert verdict.kind == "exact", verdict.reason
    stats = outcome.stats
    assert stats["quantum"] == stats["lookahead"] and stats["quantum_ratio"] == 1.0
    assert stats["late_events"] == 0 and stats["lateness_max_ticks"] == 0
    assert stats["messages"] > 0 and stats["quanta"] > 1
    assert set(verdict.errors.values()) == {0.0}


def test_processes_backend_and_a_smaller_quantum_are_exact() -> None:
    _cell, verdict, outcome = _check("phold", {"quantum_ratio": 0.5, "backend": "processes"}, workers=3)
    assert verdict.kind == "exact", verdict.reason
    assert outcome.stats["quantum"] == 5 and outcome.stats["backend"] == "processes"


def test_quantum_in_ticks_equals_the_same_ratio() -> None:
    """quantum=100 with lookahead 10 is quantum_ratio=10: the same run, digest for digest."""
    by_ticks = execute(resolve_cell("phold", PHOLD, "quantum", {"quantum": 100}, 2, 1, order="canonical"))
    by_ratio = execute(resolve_cell("phold", PHOLD, "quantum", {"quantum_ratio": 10}, 2, 1, order="canonical"))
    assert by_ticks.record.digest == by_ratio.record.digest
    assert by_ticks.stats["quantum_ratio"] == by_ratio.stats["quantum_ratio"] == 10.0


# ---------------------------------------------------------------- relaxed beyond it


@pytest.mark.parametrize("workload", ["phold", "multicore"])
def test_a_large_quantum_clamps_late_events_and_diverges_with_errors(workload: str) -> None:
    _cell, verdict, outcome = _check(workload, {"quantum_ratio": 10})
    stats = outcome.stats
    assert stats["late_events"] > 0
    # A late event was sent in the quantum it should have run in: at most Q - lookahead behind the boundary.
    assert 0 < stats["lateness_max_ticks"] <= stats["quantum"] - stats["lookahead"]
    assert stats["late_events"] <= stats["lateness_total_ticks"] <= stats["late_events"] * stats["lateness_max_ticks"]
    assert verdict.kind == "diverged", verdict.reason
    assert verdict.errors is not None and any(abs(e) > 0 for e in verdict.errors.values())
    assert set(verdict.errors) == {"final_tick", "events", *get_registry().workload(workload).statistics}


def test_fewer_quanta_and_more_late_events_as_the_quantum_grows() -> None:
    runs = [execute(resolve_cell("phold", PHOLD, "quantum", {"quantum_ratio": r}, 2, 2, order="canonical"))
            for r in (1, 5, 20)]  # fmt: skip
    quanta = [r.stats["quanta"] for r in runs]
    late = [r.stats["late_events"] for r in runs]
    assert quanta[0] > quanta[1] > quanta[2]
    assert late[0] == 0 < late[1] < late[2]
    assert quanta[0] <= PHOLD["end_tick"] // PHOLD["lookahead"] + 1


def test_a_relaxed_run_is_the_same_on_threads_and_processes() -> None:
    """Late events are inserted in queue order at the boundary: deterministic, whatever the backend."""
    digests = {
        execute(resolve_cell("phold", PHOLD, "quantum", {"quantum_ratio": 7, "backend": b}, 3, 1)).record.digest
        for b in ("threads", "processes")
    }
    assert len(digests) == 1


def test_late_error_is_gem5s_assertion() -> None:
    _cell, verdict, _outcome = _check("multicore", {"quantum_ratio": 10, "late": "error"})
    assert verdict.kind == "causality", verdict.reason
    assert "when <" in verdict.reason and verdict.errors is None
    exact = _check("multicore", {"quantum_ratio": 1, "late": "error"})[1]
    assert exact.kind == "exact"  # nothing is late within the lookahead


def test_gem5_order_counts_cross_queue_ties_deterministically() -> None:
    wide = {**PHOLD, "granularity": 20}
    runs = [execute(resolve_cell("phold", wide, "quantum", {}, 2, 4, order="gem5")) for _ in range(2)]
    assert runs[0].record.digest == runs[1].record.digest
    stats = runs[0].stats
    assert stats["gem5_cross_lp_ties"] > 0
    assert stats["gem5_tie_reorders"] + stats["gem5_tie_unresolved"] <= stats["gem5_cross_lp_ties"]


# ---------------------------------------------------------------- the policy on its own


def test_policy_boundaries_and_clamping() -> None:
    plan = Plan(2, (0, 1), 10, None, "quantum", "canonical", ((0, 1), (1, 0)), 5.0, {"quantum": 50, "late": "clamp"})
    sync = QuantumSync(plan)
    assert sync.window_end(0) == 50 and sync.window_end(49) == 50 and sync.window_end(50) == 100
    assert sync.window_end(237) == 250
    assert sync.admit(None, 250) == 250 and sync.late_events == 0  # type: ignore[arg-type]
    assert sync.admit(None, 231) == 250 and sync.admit(None, 245) == 250  # type: ignore[arg-type]
    assert sync.stats() == {"late_events": 2, "lateness_total_ticks": 24, "lateness_max_ticks": 19}
    with pytest.raises(ValueError, match="late='later' is not allowed"):
        QuantumSync(Plan(2, (0, 1), 10, None, "quantum", "canonical", (), 5.0, {"quantum": 5, "late": "later"}))


# ---------------------------------------------------------------- the promise and bad input


def test_promise_comes_from_the_quantum_and_the_cut_latencies() -> None:
    assert _promise("phold", {}) == "exact"  # ratio 1
    assert _promise("phold", {"quantum_ratio": 0.5}) == "exact"
    assert _promise("phold", {"quantum": 10}) == "exact"  # = the lookahead (the partition is built to tell)
    assert _promise("phold", {"quantum": 11}) is None
    assert _promise("phold", {"quantum_ratio": 10}) is None
    assert _promise("phold", {"quantum_ratio": 10}, workers=1, order="gem5") == "exact"  # one queue
    assert _promise("phold", {}, order="gem5") is None
    direct = resolve_cell("multicore", {**MULTICORE, "direct_calls": True}, "quantum", {"partition": "roundrobin"},
                          2, 1, order="canonical")  # fmt: skip
    assert get_registry().strategy("quantum")().expected_verdict(direct.spec, 2, direct.options) == "causality"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["quantum=100", "quantum_ratio=2"], "quantum=100 and quantum_ratio=2.0 are not allowed together"),
        (["quantum=0"], "option quantum='0' is out of range"),
        (["quantum_ratio=-1"], "option quantum_ratio='-1' is out of range"),
        (["late=later"], "option late='later' is not allowed: one of clamp, error"),
        (["backend=mpi"], "option backend='mpi' is not allowed: one of threads, processes"),
    ],
)
def test_bad_options_are_one_line(option: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    args = ["check", "-w", "phold", "-s", "quantum", "-n", "2"]
    for o in option:
        args += ["-o", o]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    with pytest.raises(ParamError):
        resolve_cell("phold", {}, "quantum", dict(o.split("=") for o in option), 2, 1)


def test_a_quantum_longer_than_the_run_stops_at_the_limit() -> None:
    """The barrier moves clocks to the boundary but never past simulate()'s limit (was: causality on it)."""
    from tickpar.runner import execute, golden_cell, resolve_cell
    from tickpar.verify.oracle import compare

    cell = resolve_cell("phold", {"end_tick": 300}, "quantum", {"quantum_ratio": 100}, 2, seed=1, order="canonical")
    outcome = execute(cell)
    verdict = compare(execute(golden_cell(cell)).record, outcome.record)
    assert verdict.kind in ("exact", "diverged"), verdict.reason
