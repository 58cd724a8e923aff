"""The oracle: records, verdicts and merging, on tiny hand-built models and hand-made (broken) event loops."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from tickpar.kernel.eventq import Event, EventQueue, SchedulingError
from tickpar.kernel.model import Component, Model
from tickpar.verify.oracle import (
    VERDICTS,
    OracleRecord,
    causality_failure,
    collect,
    compare,
    failure_record,
    merge,
)


class Unit(Component):
    """Schedules one event per (when, payload) of its plan in init(); its state is the payloads seen, in order."""

    def __init__(self, model: Model, name: str, plan: list[tuple[int, Any]]) -> None:
        super().__init__(model, name)
        self.plan = plan
        self.seen: list[Any] = []
        self.reply = self.event("reply", self.on_event)

    def init(self) -> None:
        for i, (when, payload) in enumerate(self.plan):
            self.schedule(self.event(f"ev{i}", self.on_event), when, payload)

    def on_event(self, payload: Any) -> None:
        self.seen.append(payload)
        if payload == "go":
            # Replies at the event's own tick: fine in order, "in the past" if the clock was moved early.
            self.queue.schedule(self.reply, self.when)

    def state(self) -> tuple[Any, ...]:
        return tuple(self.seen)


def build(trace: bool = True, detect_races: bool = False) -> Model:
    """Two components: 'sink' with two events in one (tick, priority) bin, and 'other' alongside."""
    model = Model(1, trace=trace, detect_races=detect_races)
    Unit(model, "sink", [(5, 0), (10, 1), (10, 2), (20, 3)])
    Unit(model, "other", [(10, 7), (15, 8)])
    return model


def sequential(model: Model, checks: bool = True) -> OracleRecord:
    """The golden run: one queue, gem5's loop."""
    q = EventQueue(checks=checks)
    model.bind(q)
    model.start()
    q.run()
    return collect(model, violations=q.violations)


def by_hand(model: Model, rewrite: Callable[[list[Event]], list[Event]]) -> OracleRecord:
    """A hand-made loop: pop every event in queue order, let ``rewrite`` reorder or drop some, then run them."""
    q = EventQueue()
    model.bind(q)
    model.start()
    popped = []
    while not q.empty():
        popped.append(q.pop_next(advance=False))
    for event in rewrite(popped):
        q.set_cur_tick(event.when)
        q.execute_popped(event)
    return collect(model)


def names(events: list[Event]) -> list[str]:
    return [e.name for e in events]


# --- exact and diverged ---------------------------------------------------------------------------------------


def test_identical_runs_are_exact() -> None:
    """Two runs of the same model give equal records and the verdict exact."""
    golden, got = sequential(build()), sequential(build())
    assert golden.digest == got.digest and golden.events == 6 and golden.final_tick == 20
    verdict = compare(golden, got)
    assert verdict.kind == "exact" and verdict.divergence is None
    assert "2 component digests match (6 events)" in verdict.reason


def test_hand_loop_in_golden_order_is_exact() -> None:
    """The hand-made loop itself, without rewriting, reproduces the golden record (the next tests isolate one bug)."""
    assert compare(sequential(build()), by_hand(build(), lambda events: events)).kind == "exact"


def test_swapped_same_component_events_diverge_at_the_right_index() -> None:
    """Running two same-tick events of one component in the other order is 'diverged', naming that component and
    the index of its first differing event, with the expected and the actual event."""
    golden = sequential(build())

    def swap_sink_at_10(events: list[Event]) -> list[Event]:
        at10 = [i for i, e in enumerate(events) if e.name.startswith("sink.") and e.when == 10]
        assert len(at10) == 2
        i, j = at10
        events[i], events[j] = events[j], events[i]
        return events

    got = by_hand(build(), swap_sink_at_10)
    verdict = compare(golden, got)
    assert verdict.kind == "diverged"
    div = verdict.divergence
    assert div is not None
    assert div["component"] == "sink" and div["index"] == 1 and div["tick"] == 10
    assert div["expected"] == [10, 0, "sink.ev2", 2]  # LIFO: the later-scheduled ev2 runs first in gem5
    assert div["got"] == [10, 0, "sink.ev1", 1]
    assert "sink event #1" in verdict.reason
    assert got.components["other"] == golden.components["other"]


def test_lost_event_diverges() -> None:
    """An event that is never run is 'diverged': the component misses it at the index where it belonged."""
    golden = sequential(build())
    got = by_hand(build(), lambda events: [e for e in events if e.name != "sink.ev3"])
    verdict = compare(golden, got)
    assert verdict.kind == "diverged"
    div = verdict.divergence
    assert div is not None
    assert div["component"] == "sink" and div["index"] == 3
    assert div["expected"] == [20, 0, "sink.ev3", 3] and div["got"] == "<end: no more events>"
    assert got.events == golden.events - 1


def test_first_divergence_is_the_earliest_tick() -> None:
    """With several components differing, the divergence reported is the one at the smallest golden tick."""
    golden = sequential(build())
    got = by_hand(build(), lambda events: [e for e in events if e.name not in ("sink.ev3", "other.ev1")])
    div = compare(golden, got).divergence
    assert div is not None and div["component"] == "other" and div["tick"] == 15 and div["index"] == 1


def test_divergence_without_traces_names_first_component_by_id() -> None:
    """Without traces the divergence names the differing component of lowest id, with counts and digests."""
    golden = sequential(build(trace=False))
    got = by_hand(build(trace=False), lambda events: [e for e in events if e.name not in ("sink.ev0", "other.ev0")])
    verdict = compare(golden, got)
    assert verdict.kind == "diverged"
    div = verdict.divergence
    assert div is not None and div["component"] == "sink" and div["index"] is None
    assert div["expected"]["count"] == 4 and div["got"]["count"] == 3
    assert golden.traces is None


def test_missing_component_diverges() -> None:
    """A record that lacks a component the golden run has is 'diverged' on that component."""
    golden = sequential(build())
    model = build()
    sequential(model)
    got = collect(model, [model.by_name["sink"]])
    verdict = compare(golden, got)
    assert verdict.kind == "diverged" and verdict.divergence is not None
    assert verdict.divergence["component"] == "other"


# --- race and causality ---------------------------------------------------------------------------------------


def test_race_verdict() -> None:
    """A run in which two workers were inside one component at once gets 'race', even if it diverged too."""
    golden = sequential(build())
    model = build(detect_races=True)
    worker = ["w1"]
    model.worker_id = lambda: worker[0]
    sink = model.by_name["sink"]
    q = EventQueue()
    model.bind(q)
    model.start()
    q.service_one()  # sink.ev0 @5
    q.service_one()  # other.ev0 @10 (scheduled last of the tick-10 bin, so served first)
    # w1 starts sink's event at 10; a second worker serves the next sink event while w1 is inside.
    first = q.pop_next()
    assert first.name == "sink.ev2"
    original = sink.on_event

    def intruder(payload: Any) -> None:
        worker[0] = "w2"
        q.service_one()
        worker[0] = "w1"
        original(payload)

    first.handler = intruder  # type: ignore[attr-defined]
    q.execute_popped(first)
    q.run()
    got = collect(model)
    verdict = compare(golden, got)
    assert verdict.kind == "race"
    assert "sink" in verdict.reason and "tick 10" in verdict.reason
    assert got.races[0]["component"] == "sink"
    assert verdict.divergence is not None  # it also diverged; race takes precedence


def test_violations_with_equal_digests_are_causality() -> None:
    """A run that scheduled in the past (counted with checks=False) but happened to compute the golden digests is
    'causality', not 'exact'."""
    plan = [(10, "go"), (12, "later")]

    def model() -> Model:
        m = Model(1, trace=True)
        Unit(m, "echo", plan)
        return m

    golden = sequential(model())
    # A pop-ahead loop: the clock moves to the next event's tick while the current one is still running.
    m = model()
    q = EventQueue(checks=False)
    m.bind(q)
    m.start()
    while not q.empty():
        event = q.pop_next()
        following = q.peek()
        if following is not None:
            q.set_cur_tick(following.when)
        q.execute_popped(event)
    got = collect(m, violations=q.violations)
    assert got.digest == golden.digest
    assert [v["reason"] for v in got.violations] == ["past"]
    verdict = compare(golden, got)
    assert verdict.kind == "causality"
    assert "echo.reply" in verdict.reason and "cur_tick=12" in verdict.reason


def test_violations_with_different_digests_are_diverged_and_say_so() -> None:
    """When the digests differ too, the verdict is 'diverged' and the reason mentions the counted violations."""
    golden = sequential(build())
    got = by_hand(build(), lambda events: events[1:])
    got.violations = [{"op": "schedule", "event": "x", "when": 1, "cur_tick": 2, "reason": "past"}]
    verdict = compare(golden, got)
    assert verdict.kind == "diverged" and "1 scheduling violation(s)" in verdict.reason


# --- failures -------------------------------------------------------------------------------------------------


def test_failure_records_give_their_kind() -> None:
    """A failure record's kind is the verdict (crash, timeout, deadlock, unsaved-state); an unknown kind counts
    as crash."""
    golden = sequential(build())
    for kind in ("crash", "timeout", "deadlock", "unsaved-state"):
        verdict = compare(golden, failure_record(kind, f"it was a {kind}", where="here"))
        assert verdict.kind == kind and verdict.reason == f"it was a {kind}"
    assert compare(golden, failure_record("meltdown", "?")).kind == "crash"
    assert failure_record("timeout", "t", limit=3).failure == {"kind": "timeout", "message": "t", "limit": 3}
    assert set(VERDICTS) == {"exact", "diverged", "causality", "race", "unsaved-state", "deadlock", "timeout", "crash"}


def test_raised_causality_failure() -> None:
    """A run stopped by a SchedulingError is 'causality', and its failure names the event, when and cur_tick."""
    q = EventQueue()
    q.set_cur_tick(30)
    event = Event(name="sink.respEvent")
    with pytest.raises(SchedulingError) as info:
        q.schedule(event, 25)
    rec = causality_failure(info.value)
    assert rec.failure is not None
    assert {k: rec.failure[k] for k in ("kind", "op", "event", "when", "cur_tick", "reason")} == {
        "kind": "causality", "op": "schedule", "event": "sink.respEvent", "when": 25, "cur_tick": 30, "reason": "past",
    }  # fmt: skip
    verdict = compare(sequential(build()), rec)
    assert verdict.kind == "causality" and "sink.respEvent" in verdict.reason


def test_failure_takes_precedence_over_race() -> None:
    """A run that did not finish gets its failure kind even if races were recorded."""
    rec = failure_record("deadlock", "stuck")
    rec.races = [{"component": "sink", "event": "e", "when": 1, "detail": "d"}]
    assert compare(sequential(build()), rec).kind == "deadlock"


def test_failed_golden_is_refused() -> None:
    """Comparing against a golden run that did not finish is a ValueError, not a verdict."""
    with pytest.raises(ValueError, match="golden run did not finish"):
        compare(failure_record("crash", "boom"), sequential(build()))


# --- merge, serialisation -------------------------------------------------------------------------------------


def test_merge_of_disjoint_partitions_equals_the_whole() -> None:
    """Records collected per partition (as LPs or ranks would) merge into the record of the whole run."""
    model = build()
    whole = sequential(model)
    parts = [collect(model, [model.by_name["other"]]), collect(model, [model.by_name["sink"]])]
    parts[1].violations = [{"op": "schedule", "event": "x", "when": 1, "cur_tick": 2, "reason": "past"}]
    merged = merge(parts)
    assert merged.digest == whole.digest
    assert merged.components == whole.components
    assert (merged.events, merged.final_tick) == (whole.events, whole.final_tick) == (6, 20)
    assert merged.traces == whole.traces
    assert merged.violations == parts[1].violations
    assert compare(whole, replace(merged, violations=[])).kind == "exact"


def test_merge_rejects_overlap() -> None:
    """A component present in two partitions is a ValueError naming it."""
    model = build()
    sequential(model)
    sink = model.by_name["sink"]
    with pytest.raises(ValueError, match="sink"):
        merge([collect(model, [sink]), collect(model, [sink, model.by_name["other"]])])


def test_merge_keeps_failure() -> None:
    """A failure in any partition is the merged record's failure."""
    model = build()
    sequential(model)
    merged = merge([collect(model, [model.by_name["sink"]]), failure_record("timeout", "slow")])
    assert merged.failure is not None and merged.failure["kind"] == "timeout"


def test_record_round_trips_through_json() -> None:
    """to_dict/from_dict round-trip through JSON; traces are left out unless asked for."""
    rec = sequential(build())
    assert "traces" not in rec.to_dict()
    data = json.loads(json.dumps(rec.to_dict(with_traces=True)))
    back = OracleRecord.from_dict(data)
    assert back.digest == rec.digest and back.components == rec.components
    assert compare(rec, back).kind == "exact"
    assert back.traces == rec.traces
