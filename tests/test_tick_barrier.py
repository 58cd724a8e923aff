"""``tick-barrier``: exact where it promises, and a named verdict (never a silent pass) where it cannot be.

Most cases use ``tb-cases``, a small workload written below and loaded as a
plugin: a few cells tick in the same (when, priority) bin, so every bin is a
parallel batch, and each ``case`` adds one thing a batch must get right --
zero-delay children into the running bin (gem5's LIFO puts them next),
children at an earlier priority of the same tick, rescheduling or
descheduling events of the running bin, check-then-act on ``scheduled``,
zero-latency messages, direct calls, and name locks that split a component.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tickpar.kernel.eventq import ORDERS
from tickpar.kernel.model import Model
from tickpar.plugins import STAT_KEYS
from tickpar.plugins.registry import get_registry
from tickpar.runner import check_cell, execute, resolve_cell
from tickpar.verify.oracle import compare

CASES_WORKLOAD = '''
from typing import Any

from tickpar.kernel.eventq import Priority
from tickpar.kernel.model import Component, Model
from tickpar.kernel.params import Param
from tickpar.plugins import Workload

CASES = (
    "plain", "same_bin_child", "earlier_prio_child", "member_reschedule", "check_then_act",
    "zero_latency_to_free", "zero_latency_cross", "direct_private", "direct_conflict", "name_split",
    "past", "boom", "double", "ghost",
)


class Sink(Component):
    """A helper component: absorbs messages and direct calls, order-sensitively."""

    def __init__(self, model: Model, name: str) -> None:
        super().__init__(model, name)
        self.acc = 0

    def on_msg(self, value: int) -> None:
        self.acc = (self.acc * 1_000_003 + value + 1) % (1 << 61)

    def bump(self, value: int) -> int:
        self.acc = (self.acc * 1_000_003 + value + 7) % (1 << 61)
        return self.acc & 3

    def state(self) -> tuple[int, ...]:
        return (self.acc,)


class Cell(Component):
    """Ticks every 10 ticks in the shared bin; what else it does is the case."""

    def __init__(self, model: Model, name: str, index: int, case: str) -> None:
        super().__init__(model, name)
        self.index = index
        self.case = case
        self.acc = 0
        tick_prio = Priority.CPU_TICK if case == "earlier_prio_child" else Priority.DEFAULT
        self.tick_ev = self.event("tickEvent", self.on_tick, tick_prio)
        self.child_a = self.event("childA", self.on_child)
        self.child_b = self.event("childB", self.on_child, 20 if case == "earlier_prio_child" else 0)
        self.other = self.event("otherEvent", self.on_other)
        self.peers: list[Any] = []
        self.zero_link: Any = None
        self.helper: Sink | None = None

    def mix(self, value: int) -> None:
        self.acc = (self.acc * 1_000_003 + value + 1) % (1 << 61)

    def init(self) -> None:
        if self.case in ("member_reschedule", "name_split"):
            self.schedule(self.other, 10, 5)
        self.schedule(self.tick_ev, 10)

    def on_tick(self, _payload: int) -> None:
        now = self.cur_tick
        rng = self.rng
        self.mix(1)
        case = self.case
        if case == "same_bin_child":
            self.schedule(self.child_a, now, 1)
            if rng.random() < 0.5:
                self.schedule(self.child_b, now, 2)
        elif case == "earlier_prio_child":
            self.schedule(self.child_b, now, 2)
            self.schedule(self.child_a, now, 1)
        elif case == "member_reschedule":
            r = rng.random()
            if self.other.scheduled and self.other.when == now:
                if r < 0.3:
                    self.reschedule(self.other, now + 3, payload=6)
                elif r < 0.5:
                    self.deschedule(self.other)
                elif r < 0.7:
                    self.reschedule(self.other, now, payload=7)
            elif not self.other.scheduled and r < 0.5:
                self.schedule(self.other, now + 10, 8)
        elif case == "check_then_act":
            for k in range(3):
                if not self.child_a.scheduled:
                    self.schedule(self.child_a, now + 5 + k, k)
                elif rng.random() < 0.5:
                    self.reschedule(self.child_a, now + 4, payload=k + 10)
        elif case in ("zero_latency_to_free", "zero_latency_cross"):
            self.send(self.zero_link, self.index)
        elif case == "direct_private":
            self.mix(self.call(self.helper, "bump", self.index))
        elif case == "direct_conflict":
            self.mix(self.call(self.helper, "bump", self.index))
        elif case == "past" and now == 100 and self.index in (1, 2):
            self.schedule(self.child_a, now - self.index, self.index)  # gem5's assertion fails
        elif case == "boom" and now == 100 and self.index in (1, 2):
            raise RuntimeError(f"boom in cell {self.index}")
        elif case == "double" and now == 100 and self.index in (1, 2):
            self.schedule(self.child_a, now + 5, 1)
            self.schedule(self.child_a, now + 7, 2)  # already scheduled: with checks off it runs twice
        elif case == "ghost" and now == 100 and self.index == 1:
            self.deschedule(self.child_a)  # not scheduled: gem5's remove() panics
        self.send(self.peers[rng.randrange(len(self.peers))], self.acc & 0xFF, rng.randrange(3))
        self.schedule(self.tick_ev, now + (20 if rng.random() < 0.2 else 10))

    def on_child(self, payload: int) -> None:
        self.mix(10 + payload)
        if self.case == "same_bin_child" and payload == 1 and not self.child_b.scheduled and self.rng.random() < 0.5:
            self.schedule(self.child_b, self.cur_tick, 3)  # a grandchild, same bin again

    def on_other(self, payload: int) -> None:
        self.mix(20 + payload)
        if not self.other.scheduled:
            self.schedule(self.other, self.cur_tick + 10, 5)

    def on_msg(self, value: int) -> None:
        self.mix(100 + value)

    def state(self) -> tuple[int, ...]:
        return (self.acc,)


class TbCases(Workload):
    name = "tb-cases"
    summary = "cells ticking in one bin, each case adding one thing a tick batch must get right"
    params = {
        "case": Param(str, "plain", "what the cells do besides ticking", choices=CASES),
        "cells": Param(int, 4, "cells", min=2, max=64),
        "end_tick": Param(int, 400, "stop here", min=1, max=10**9),
    }

    def build(self, model: Model, params: dict[str, Any]) -> None:
        case = params["case"]
        cells = [Cell(model, f"sys.cell{i}", i, case) for i in range(params["cells"])]
        shared = Sink(model, "sys.shared")
        for i, cell in enumerate(cells):
            cell.peers = [model.link(cell, peer, "on_msg", 3) for peer in cells]
            if case == "zero_latency_to_free":
                sink = Sink(model, f"sys.sink{i}")
                cell.zero_link = model.link(cell, sink, "on_msg", 0)
            elif case == "zero_latency_cross":
                cell.zero_link = model.link(cell, cells[(i + 1) % len(cells)], "on_msg", 0)
            elif case == "direct_private":
                cell.helper = Sink(model, f"sys.helper{i}")
                model.connect_direct(cell, cell.helper)
            elif case == "direct_conflict":
                cell.helper = shared
                model.connect_direct(cell, shared)
        model.end_tick = params["end_tick"]
'''

EXACT_CASES = (
    "plain",
    "same_bin_child",
    "earlier_prio_child",
    "member_reschedule",
    "check_then_act",
    "zero_latency_to_free",
    "direct_private",
)


@pytest.fixture
def cases(tmp_path: Path, plugin_env: pytest.MonkeyPatch) -> Iterator[None]:
    """The ``tb-cases`` workload registered as a plugin for the test."""
    (tmp_path / "tb_cases.py").write_text(CASES_WORKLOAD)
    plugin_env.setenv("TICKPAR_PLUGINS", str(tmp_path))
    get_registry(refresh=True)
    yield


def _check(workload: str, params: dict, workers: int, order: str = "gem5", **options: object):
    cell = resolve_cell(workload, params, "tick-barrier", dict(options), workers, seed=7, order=order)
    return check_cell(cell)


@pytest.mark.parametrize("case", EXACT_CASES)
@pytest.mark.parametrize("order", ORDERS)
def test_batches_are_exact_in_both_orders(cases: None, case: str, order: str) -> None:
    """Every exact case matches the sequential run, inline and with threads, at 2 and 4 workers."""
    for workers in (2, 4):
        for executor in ("inline", "threads"):
            verdict, outcome = _check("tb-cases", {"case": case}, workers, order, executor=executor)
            assert verdict.kind == "exact", (case, order, workers, executor, verdict.reason)
            assert outcome.stats["parallel_batches"] > 10
            assert outcome.stats["races"] == 0


@pytest.mark.parametrize("order", ORDERS)
def test_zero_delay_children_run_inside_their_group(cases: None, order: str) -> None:
    """Children into the running bin (or an earlier priority of its tick) are run by the group, in place."""
    for case in ("same_bin_child", "earlier_prio_child", "zero_latency_to_free"):
        verdict, outcome = _check("tb-cases", {"case": case}, 2, order, executor="inline")
        assert verdict.kind == "exact", (case, verdict.reason)
        assert outcome.stats["local_children"] > 20, case
        assert outcome.stats["late_children"] == 0


@pytest.mark.parametrize(
    ("case", "options", "needle"),
    [
        ("zero_latency_cross", {}, "zero-delay child"),
        ("direct_conflict", {}, "direct call"),
        ("name_split", {"lock_key": "name"}, "lock key splits"),
    ],
)
@pytest.mark.parametrize("executor", ["inline", "threads"])
def test_what_cannot_be_exact_is_reported_as_race(
    cases: None, case: str, options: dict, needle: str, executor: str
) -> None:
    """Cross-group zero-delay children, conflicting direct calls and split components: verdict race, with why."""
    verdict, outcome = _check("tb-cases", {"case": case}, 2, executor=executor, **options)
    assert verdict.kind == "race", verdict.reason
    assert needle in verdict.reason
    assert outcome.stats["races"] > 0


@pytest.mark.parametrize("executor", ["inline", "threads"])
def test_a_failure_after_a_noted_race_is_the_race(
    cases: None, executor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Model code that then fails (as two threads in one component's lists can make it) stays verdict race."""
    note_race = Model.note_race

    def note_and_fail(self: Model, *args: Any) -> None:
        note_race(self, *args)
        raise IndexError("list index out of range")  # what a corrupted list gave on 3.13t

    monkeypatch.setattr(Model, "note_race", note_and_fail)
    verdict, outcome = _check("tb-cases", {"case": "name_split"}, 2, executor=executor, lock_key="name")
    assert verdict.kind == "race", verdict.reason
    assert outcome.stats["failed_after_race"] == "IndexError: list index out of range"


def test_race_verdicts_do_not_depend_on_the_executor(cases: None) -> None:
    """Claims depend on which groups touch which components, not on timing: inline and threads agree."""
    for case, options in (("direct_conflict", {}), ("name_split", {"lock_key": "name"})):
        counts = {
            executor: _check("tb-cases", {"case": case}, 4, executor=executor, **options)[1].stats["races"]
            for executor in ("inline", "threads")
        }
        assert counts["inline"] == counts["threads"] > 0, (case, counts)


@pytest.mark.parametrize("executor", ["inline", "threads"])
def test_first_failure_is_the_sequential_one(cases: None, executor: str) -> None:
    """Two groups fail in one batch: the run reports the failure the sequential run would hit first."""
    for case in ("past", "boom"):
        golden = execute(resolve_cell("tb-cases", {"case": case}, "sequential", {}, 1, seed=7)).record.failure
        cell = resolve_cell("tb-cases", {"case": case}, "tick-barrier", {"executor": executor}, 4, seed=7)
        got = execute(cell).record.failure
        assert golden is not None and got is not None
        assert got == golden, (case, got, golden)


@pytest.mark.parametrize("order", ORDERS)
def test_counted_violations_come_in_sequential_order(cases: None, order: str) -> None:
    """checks=false: the past schedules are counted, in the sequential run's order, and the digests still match."""
    seq = execute(resolve_cell("tb-cases", {"case": "past"}, "sequential", {"checks": False}, 1, seed=7, order=order))
    for executor in ("inline", "threads"):
        opts = {"checks": False, "executor": executor}
        got = execute(resolve_cell("tb-cases", {"case": "past"}, "tick-barrier", opts, 4, seed=7, order=order))
        assert len(seq.record.violations) == 2
        assert got.record.violations == seq.record.violations
        assert got.record.digest == seq.record.digest


@pytest.mark.parametrize("executor", ["inline", "threads"])
def test_asserts_off_double_schedule_and_ghost_deschedule_match_sequential(cases: None, executor: str) -> None:
    """checks=false: a double schedule runs the event twice and a deschedule of an unscheduled event panics
    ("event not found!", verdict crash), exactly as in the sequential run."""
    opts = {"checks": False, "executor": executor}
    seq = execute(resolve_cell("tb-cases", {"case": "double"}, "sequential", {"checks": False}, 1, seed=7))
    got = execute(resolve_cell("tb-cases", {"case": "double"}, "tick-barrier", opts, 4, seed=7))
    plain = execute(resolve_cell("tb-cases", {"case": "plain"}, "sequential", {}, 1, seed=7))
    assert [v["reason"] for v in seq.record.violations] == ["already-scheduled"] * 2
    assert got.record.violations == seq.record.violations and got.record.digest == seq.record.digest
    assert seq.record.events == plain.record.events + 4  # two cells, each child run twice
    got = execute(resolve_cell("tb-cases", {"case": "ghost"}, "tick-barrier", opts, 4, seed=7))
    seq = execute(resolve_cell("tb-cases", {"case": "ghost"}, "sequential", {"checks": False}, 1, seed=7))
    verdict = compare(plain.record, got.record)  # the sequential run panics too: compare against any finished run
    assert verdict.kind == "crash" and verdict.reason.startswith("event not found!")
    assert got.record.failure == seq.record.failure and got.record.failure["panic"] == "event not found!"


def test_debug_invariants_hold_after_every_commit(cases: None) -> None:
    """debug_invariants checks the queue after each commit; the busy cases stay exact with it on."""
    for case in ("same_bin_child", "member_reschedule", "check_then_act"):
        verdict, _ = _check("tb-cases", {"case": case}, 2, executor="inline", debug_invariants=True)
        assert verdict.kind == "exact", (case, verdict.reason)


def test_name_split_is_exact_with_component_locks(cases: None) -> None:
    """The same model as the name-split race is exact when the lock key is the component."""
    verdict, _ = _check("tb-cases", {"case": "name_split"}, 2, lock_key="component")
    assert verdict.kind == "exact", verdict.reason


@pytest.mark.parametrize("order", ORDERS)
def test_exact_on_builtin_workloads(order: str) -> None:
    """phold with many events per tick and multicore (direct calls off): exact at 2 and 4 workers."""
    builtin = (("phold", {"granularity": 100, "end_tick": 8000}), ("multicore", {"requests_per_core": 300}))
    for workload, params in builtin:
        for workers in (2, 4):
            verdict, outcome = _check(workload, params, workers, order)
            assert verdict.kind == "exact", (workload, workers, verdict.reason)
            assert outcome.stats["parallel_fraction"] > 0.5, (workload, outcome.stats["parallel_fraction"])


def test_multicore_name_locks_are_a_race() -> None:
    """lock_key=name splits a cache's per-port events into several groups: race, which the promise allows
    (whether two names of one component share a bin is not a trait: exact, race, or an assertion after it)."""
    cell = resolve_cell("multicore", {"requests_per_core": 250}, "tick-barrier", {"lock_key": "name"}, 2, seed=3)
    verdict, outcome = check_cell(cell)
    assert verdict.kind == "race", verdict.reason
    # On real parallel threads the model may then fail too (a crash, a double schedule): still a race.
    assert outcome.stats["races"] > 0
    promise = get_registry().strategy("tick-barrier")().promise(cell.spec, 2, cell.options)
    assert promise.verdicts == {"exact", "race", "causality"} and "several_named_events" in promise.traits


def test_multicore_direct_calls_are_not_silently_exact() -> None:
    """With direct_calls the L1s call into the shared crossbar and L2 banks from several groups: race."""
    cell = resolve_cell("multicore", {"requests_per_core": 250, "direct_calls": True}, "tick-barrier", {}, 2, seed=3)
    verdict, _ = check_cell(cell)
    assert verdict.kind == "race", verdict.reason
    assert "direct call" in verdict.reason


def test_min_parallel_serves_small_bins_on_the_plain_loop() -> None:
    """Raising min_parallel moves bins to the gem5 loop: still exact, fewer parallel batches."""
    params = {"granularity": 100, "end_tick": 8000}
    _, low = _check("phold", params, 2)
    verdict, high = _check("phold", params, 2, min_parallel=40)
    assert verdict.kind == "exact"
    assert high.stats["parallel_batches"] < low.stats["parallel_batches"]
    assert high.stats["serial_runs"] > low.stats["serial_runs"]


def test_one_worker_runs_the_plain_loop() -> None:
    """With one worker nothing is batched: exact, no parallel batch."""
    verdict, outcome = _check("multicore", {"requests_per_core": 200, "direct_calls": True}, 1, lock_key="name")
    assert verdict.kind == "exact"
    assert outcome.stats["parallel_batches"] == 0


def test_stats_keys_and_record(tmp_path: Path) -> None:
    """The stats carry every common key, idle time per worker, and survive a JSON record."""
    verdict, outcome = _check("phold", {"granularity": 50, "end_tick": 3000}, 2)
    assert verdict.kind == "exact"
    stats = outcome.stats
    for key in STAT_KEYS:
        assert key in stats, key
    assert len(stats["idle_s"]) == 2
    assert stats["events"] == outcome.record.events
    assert stats["batches"] == stats["parallel_batches"] + stats["serial_runs"]
    assert stats["mean_events_per_batch"] > 1.0
    json.dumps(stats)
