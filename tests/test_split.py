"""``split``: the prototype's pop/execute loop reproduces its failure, deterministically, and explains it.

The interleave executor (the default) runs the workers' steps on one thread
in a seeded order, so every verdict, every first failing event and every
anatomy here is the same on every run; the threads executor is checked with
forced overlap (GIL-releasing work), where it cannot be exact.
"""

from __future__ import annotations

import json

import pytest

from tickpar.kernel.eventq import ORDERS
from tickpar.plugins import STAT_KEYS
from tickpar.plugins.registry import get_registry
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


def test_relative_schedules_shift_but_pass_the_check() -> None:
    """PHOLD schedules only at cur_tick + delay, and a queue operation is not a switch point: with the
    assertions off nothing is counted, yet the run diverges (arrival ticks computed from a moved clock)."""
    verdict, outcome = check_cell(_cell("phold", 4, checks=False))
    assert verdict.kind == "diverged", verdict.reason
    assert verdict.divergence is not None
    assert outcome.record.violations == []
    assert outcome.stats["violations"] == 0
    assert outcome.stats["stale_now"] > 0


def test_checks_off_on_multicore_with_component_locks_diverges() -> None:
    """multicore, component locks, assertions off: the run completes with counted violations and diverges."""
    verdict, outcome = check_cell(_cell("multicore", 2, MULTICORE_SMALL, checks=False, lock_key="component"))
    assert verdict.kind == "diverged", verdict.reason
    assert outcome.record.violations
    assert "scheduling violation" in verdict.reason
    assert outcome.stats["violations"] == len(outcome.record.violations)


@pytest.mark.parametrize("workers", [2, 4])
def test_phold_diverges_with_several_workers(workers: int) -> None:
    """PHOLD schedules relative to cur_tick (no stored ticks): arrival ticks shift, the same way on every run."""
    cell = _cell("phold", workers)
    verdict, _ = check_cell(cell)
    assert verdict.kind == "diverged", verdict.reason
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
def test_threads_executor_with_forced_overlap_is_not_exact() -> None:
    """Real threads: one worker is exact; two workers whose handlers release the GIL (200 us of hashing
    per event) overlap, so a handler sees a clock another thread's pop moved: never exact, never a hang."""
    verdict, _ = check_cell(_cell("phold", 1, executor="threads"))
    assert verdict.kind == "exact", verdict.reason
    params = {"lps": 4, "end_tick": 1500, "work_us": 200.0}
    cell = resolve_cell("phold", params, "split", {"executor": "threads"}, 2, seed=3, work="gil-release")
    verdict, outcome = check_cell(cell)
    assert verdict.kind in {"diverged", "causality"}, verdict.reason
    if verdict.kind == "diverged":
        assert outcome.stats["stale_now"] > 0
    verdict, _ = check_cell(_cell("multicore", 2, MULTICORE_SMALL, executor="threads"))
    assert verdict.kind not in {"timeout", "deadlock", "crash"}, verdict.reason


def test_interleave_options_with_threads_are_refused() -> None:
    """pop_ahead and preempt belong to the interleave executor: a one-line ParamError otherwise."""
    from tickpar.kernel.params import ParamError

    with pytest.raises(ParamError, match="pop_ahead"):
        _cell("phold", 2, executor="threads", pop_ahead=1)
    with pytest.raises(ParamError, match="preempt"):
        _cell("phold", 2, executor="threads", preempt=0.1)
    with pytest.raises(ParamError, match="preempt"):
        _cell("phold", 2, preempt=1.5)


def test_preempt_sets_how_often_a_handler_is_interrupted() -> None:
    """preempt=0: no handler is ever interrupted (workers still interleave between steps); more preempt,
    more preemptions, on the same cell."""
    counts = []
    for preempt in (0.0, 0.1, 0.5):
        outcome = execute(_cell("phold", 2, {"end_tick": 3000}, checks=False, preempt=preempt))
        counts.append(outcome.stats["preemptions"])
    assert counts[0] == 0
    assert counts[0] < counts[1] < counts[2]


def _anatomy(cell):
    from tickpar.runner import explain
    from tickpar.verify.anatomy import STEP_KEYS

    verdict, outcome = check_cell(cell)
    steps = explain(cell, verdict, outcome.record)
    for step in steps:
        assert tuple(step) == STEP_KEYS
    return verdict, outcome, steps


def test_pop_execute_gap_alone_breaks_multicore() -> None:
    """With preempt=0 a handler is never interrupted, yet another worker's pop between a pop and its
    execute moves cur_tick: the stored-tick failure needs no preemption inside handlers."""
    verdict, _outcome, steps = _anatomy(_cell("multicore", 2, MULTICORE_SMALL, preempt=0.0))
    assert verdict.kind == "causality", verdict.reason
    mover = next(s for s in steps if s["note"].startswith("the pop that set cur_tick"))
    start = next(s for s in steps if "starts" in s["note"] and s["worker"] == steps[-1]["worker"])
    assert mover["step"] < start["step"]  # the clock moved before the handler ran, not inside it
    assert not any("while" in s["note"] and "runs" in s["note"] for s in steps)


def test_failure_record_counts_what_ran() -> None:
    """A run stopped by the assertion reports the events it processed and the tick it reached."""
    verdict, outcome = check_cell(_cell("multicore", 2, MULTICORE_SMALL))
    assert verdict.kind == "causality"
    failure = outcome.record.failure
    assert outcome.record.events > 0
    assert 0 < outcome.record.final_tick <= failure["cur_tick"]


def test_causality_anatomy_names_the_pop_the_handler_and_the_stored_tick() -> None:
    """The anatomy ends at the failing schedule; before it: the handler's own pop, the other worker's pop
    that set cur_tick, the handler, and a replay showing the tick did not come from cur_tick."""
    _verdict, outcome, steps = _anatomy(_cell("multicore", 2, MULTICORE_SMALL))
    failure = outcome.record.failure
    last = steps[-1]
    assert (last["event"], last["when"], last["cur_tick"]) == (failure["event"], failure["when"], failure["cur_tick"])
    worker = last["worker"]
    mover = next(s for s in steps if s["note"].startswith("the pop that set cur_tick"))
    assert mover["when"] == failure["cur_tick"]
    assert mover["worker"] != worker
    assert any(s["worker"] == worker and "starts" in s["note"] for s in steps)
    assert any("stored tick" in s["note"] for s in steps)
    assert [s["step"] for s in steps] == sorted(s["step"] for s in steps)
    assert _anatomy(_cell("multicore", 2, MULTICORE_SMALL))[2] == steps  # deterministic


def test_race_anatomy_names_two_workers_and_the_component() -> None:
    """A race's anatomy: a worker inside the component, another one entering it, and the component's name."""
    verdict, outcome, steps = _anatomy(_cell("multicore", 2, MULTICORE_SMALL, checks=False, interleave_seed=2))
    assert verdict.kind == "race", verdict.reason
    race = outcome.record.races[0]
    assert race["component"] in steps[-1]["note"]
    assert len({s["worker"] for s in steps}) == 2


def test_diverged_anatomy_ends_at_the_first_divergence() -> None:
    """A divergence's anatomy: the handler that scheduled the diverging event from a moved clock, then the
    first divergence itself."""
    verdict, _outcome, steps = _anatomy(_cell("phold", 2, checks=False))
    assert verdict.kind == "diverged"
    assert steps[-1]["note"].startswith("first divergence")
    got = verdict.divergence["got"]
    scheduled = next(s for s in steps if s["event"] == got[2] and s["when"] == got[0] and s["worker"] is not None)
    handler = next(s for s in steps if s["note"].startswith("handler ") and s["worker"] == scheduled["worker"])
    assert scheduled["cur_tick"] != handler["when"]  # it computed the arrival from a clock another pop moved


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
