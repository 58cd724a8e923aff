"""``split``: the prototype's pop/execute loop reproduces its failure, deterministically, and explains it.

The interleave executor (the default) runs the workers' steps on one thread
in a seeded order, so every verdict and every first failing event here is the
same on every run; the threads executor is only checked for finishing.
"""

from __future__ import annotations

import json

import pytest

from tickpar.eventq import ORDERS
from tickpar.plugins import STAT_KEYS
from tickpar.registry import get_registry
from tickpar.runner import check_cell, execute, resolve_cell

MULTICORE_SMALL = {"requests_per_core": 300}


def _cell(workload: str, workers: int, params: dict | None = None, order: str = "gem5", **options: object):
    return resolve_cell(workload, params or {}, "split", dict(options), workers, seed=3, order=order)


@pytest.mark.parametrize("order", ORDERS)
def test_one_worker_is_exact(order: str) -> None:
    """One worker alternating pop and execute is gem5's serviceOne: exact on both workloads, either lock key."""
    for workload, params in (("phold", {}), ("multicore", MULTICORE_SMALL)):
        for lock_key in ("name", "component"):
            verdict, outcome = check_cell(_cell(workload, 1, params, order=order, lock_key=lock_key))
            assert verdict.kind == "exact", (workload, lock_key, verdict.reason)
            assert outcome.stats["stale_now"] == 0


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("workers", [2, 4])
def test_multicore_fails_the_tick_assertion(order: str, workers: int) -> None:
    """Two or more workers on multicore: gem5's when >= curTick assertion fails (verdict causality)."""
    cell = _cell("multicore", workers, MULTICORE_SMALL, order)
    verdict, outcome = check_cell(cell)
    assert verdict.kind == "causality", verdict.reason
    failure = outcome.record.failure
    assert failure is not None and failure["reason"] == "past"
    assert failure["when"] < failure["cur_tick"]
    assert get_registry().strategy("split")().expected_verdict(cell.spec, workers, cell.options) == "causality"


def test_first_failure_is_the_same_on_every_run() -> None:
    """Same cell, same interleave seed: the same failing event, when and cur_tick; another seed may differ."""
    cell = _cell("multicore", 2, MULTICORE_SMALL)
    first = execute(cell).record.failure
    second = execute(cell).record.failure
    assert first is not None and first["kind"] == "causality"
    assert first == second
    seeds = {
        json.dumps(execute(_cell("multicore", 2, MULTICORE_SMALL, interleave_seed=s)).record.failure, sort_keys=True)
        for s in range(4)
    }
    assert len(seeds) > 1  # the seed does choose the interleaving


def test_component_locks_do_not_help_against_the_moving_clock() -> None:
    """lock_key=component closes the name-lock hole, but another worker's pop still moves cur_tick: causality."""
    verdict, _ = check_cell(_cell("multicore", 2, MULTICORE_SMALL, lock_key="component"))
    assert verdict.kind == "causality", verdict.reason


def test_checks_off_completes_and_diverges_with_violations() -> None:
    """With the assertions off the run finishes; the verdict is diverged, and the violations are listed."""
    verdict, outcome = check_cell(_cell("phold", 4, checks=False))
    assert verdict.kind == "diverged", verdict.reason
    assert verdict.divergence is not None
    assert outcome.record.violations, "phold with 4 workers schedules in the past"
    assert "scheduling violation" in verdict.reason
    assert outcome.stats["violations"] == len(outcome.record.violations)


def test_checks_off_on_multicore_with_component_locks_diverges() -> None:
    """multicore, component locks, assertions off: the run completes with counted violations and diverges."""
    verdict, outcome = check_cell(_cell("multicore", 2, MULTICORE_SMALL, checks=False, lock_key="component"))
    assert verdict.kind == "diverged", verdict.reason
    assert outcome.record.violations


@pytest.mark.parametrize("workers", [2, 4])
def test_phold_is_never_exact_with_several_workers(workers: int) -> None:
    """PHOLD schedules relative to cur_tick: arrival ticks shift (diverged) or a pop lands in the window (causality)."""
    cell = _cell("phold", workers)
    verdict, _ = check_cell(cell)
    assert verdict.kind in {"diverged", "causality"}, verdict.reason
    again, _ = check_cell(cell)
    assert (again.kind, again.reason) == (verdict.kind, verdict.reason)


def test_phold_shows_the_wrong_now() -> None:
    """PHOLD with two workers: handlers run with a cur_tick another pop moved, so arrival ticks shift."""
    verdict, outcome = check_cell(_cell("phold", 2, checks=False))
    assert verdict.kind == "diverged", verdict.reason
    assert outcome.stats["stale_now"] > 0
    div = verdict.divergence
    assert div is not None
    expected, got = div["expected"], div["got"]
    assert expected[2] == got[2] and expected[0] != got[0]  # the same event, at another tick


def test_name_locks_let_two_workers_into_one_component() -> None:
    """Without the assertion, name locks let two workers into one cache or CPU: the race guard sees it."""
    _, outcome = check_cell(_cell("multicore", 2, MULTICORE_SMALL, checks=False, interleave_seed=2))
    assert outcome.record.races, outcome.record.failure
    assert outcome.record.races[0]["detail"].startswith("worker ")


def test_direct_calls_are_not_covered_by_component_locks() -> None:
    """Component locks, assertions off, direct calls on: a port call enters a peer another worker is in."""
    params = {**MULTICORE_SMALL, "direct_calls": True}
    verdict, _ = check_cell(_cell("multicore", 2, params, checks=False, lock_key="component"))
    assert verdict.kind == "race", verdict.reason
    assert "direct call" in verdict.reason


def test_pop_ahead_breaks_one_worker() -> None:
    """One worker that pops ahead of what it executes moves cur_tick under its own handler: not exact."""
    cell = _cell("multicore", 1, MULTICORE_SMALL, pop_ahead=8)
    verdict, _ = check_cell(cell)
    assert verdict.kind in {"causality", "diverged"}, verdict.reason
    assert get_registry().strategy("split")().expected_verdict(cell.spec, 1, cell.options) != "exact"


@pytest.mark.timeout(60)
def test_threads_executor_finishes() -> None:
    """Real threads: one worker is exact; several end in a named verdict, never a hang or a deadlock."""
    verdict, _ = check_cell(_cell("phold", 1, executor="threads"))
    assert verdict.kind == "exact", verdict.reason
    for workload, params in (("phold", {}), ("multicore", MULTICORE_SMALL)):
        verdict, _ = check_cell(_cell(workload, 2, params, executor="threads"))
        assert verdict.kind not in {"timeout", "deadlock"}, verdict.reason


def test_pop_ahead_with_threads_is_refused() -> None:
    """pop_ahead is modelled by the interleave executor only: a one-line ParamError otherwise."""
    from tickpar.params import ParamError

    with pytest.raises(ParamError, match="pop_ahead"):
        _cell("phold", 2, executor="threads", pop_ahead=1)


def test_stats_keys() -> None:
    """Stats carry every common key, per-worker lists, and the prototype's own counters."""
    outcome = execute(_cell("phold", 2, {"end_tick": 3000}))
    stats = outcome.stats
    for key in STAT_KEYS:
        assert key in stats, key
    assert len(stats["idle_s"]) == 2 and len(stats["pops"]) == 2
    assert stats["events"] == outcome.record.events
    assert sum(stats["pops"]) == stats["batches"]
    assert stats["steps"] > stats["batches"]
    json.dumps(stats)
