"""The kernel's seam: the public primitives parallel engines use, and gem5's assertions compiled out.

Bins (``pop_bin``/``put_back``/``serve_until``), entry liveness, the deferred
mode of :class:`BatchQueue` and ``commit``, the key encoding, and what
``checks=False`` does where gem5's asserts would have fired (issue 9 §3).
"""

from __future__ import annotations

import pytest

from tickpar.kernel.eventkeys import canonical_source, key_priority, key_when, pack_key, source_parts
from tickpar.kernel.eventq import (
    BatchQueue,
    Deferred,
    Event,
    EventNotFound,
    EventQueue,
    Priority,
    SchedulingError,
    entry_live,
    op_key,
    op_live,
)


def tagged(log: list[object], name: str, priority: int = 0, queue: EventQueue | None = None) -> Event:
    """An event that logs its name (and the queue's tick, when given a queue) when it runs."""
    if queue is None:
        return Event(lambda: log.append(name), name, priority)
    return Event(lambda: log.append((name, queue.cur_tick)), name, priority)


def drain(q: EventQueue) -> None:
    while not q.empty():
        q.service_one()


# --- keys --------------------------------------------------------------------------------------------------------


def test_key_encoding_round_trips_and_orders_like_when_then_priority() -> None:
    """A packed key gives back its (when, priority), and keys compare as (when, priority) tuples do."""
    pairs = [(0, -128), (0, 127), (5, 0), (5, 50), (6, -128), (2**70, 100)]
    for when, prio in pairs:
        assert (key_when(pack_key(when, prio)), key_priority(pack_key(when, prio))) == (when, prio)
    assert sorted(pairs, key=lambda p: pack_key(*p)) == sorted(pairs)
    assert source_parts(canonical_source(7, 12345)) == (7, 12345)


# --- bins --------------------------------------------------------------------------------------------------------


def test_pop_bin_takes_the_head_bin_in_service_order_and_put_back_restores_it(log: list[object]) -> None:
    """pop_bin removes the live entries of the head (when, priority) only, LIFO as served; put_back undoes it."""
    q = EventQueue()
    a, b, c, d, x = (tagged(log, n) for n in "ABCDX")
    for e in (a, b, c):
        q.schedule(e, 10)
    q.schedule(d, 10)
    q.deschedule(d)  # a stale entry inside the bin
    q.schedule(x, 11)
    before = q.pending()
    entries = q.pop_bin()
    assert [e[2] for e in entries] == [c, b, a]
    assert all(entry_live(e) for e in entries) and len(q) == 4  # still scheduled, still counted
    assert {key_when(e[0]) for e in entries} == {10}
    q.put_back(entries)
    assert q.pending() == before
    drain(q)
    assert log == ["C", "B", "A", "X"]


def test_entry_is_not_live_after_deschedule_or_reschedule() -> None:
    """An entry taken out stops being live when a handler deschedules or reschedules its event."""
    q = EventQueue()
    a, b = Event(name="A"), Event(name="B")
    q.schedule(a, 5)
    q.schedule(b, 5)
    entries = {e[2].name: e for e in q.pop_bin()}
    q.deschedule(a)
    q.reschedule(b, 9)
    assert not entry_live(entries["A"]) and not entry_live(entries["B"])
    head = q.head()
    assert head is not None and head[2] is b and key_when(head[0]) == 9


def test_serve_until_stops_past_the_key_and_returns_an_exit_event(log: list[object]) -> None:
    """serve_until(key) serves heads with key <= key; an exit event on the way stops it and comes back."""
    q = EventQueue()
    q.schedule(tagged(log, "A"), 10)
    q.schedule(tagged(log, "B", 50), 10)
    q.schedule(tagged(log, "C"), 20)
    assert q.serve_until(pack_key(10, 0)) is None
    assert log == ["A"] and q.cur_tick == 10
    limit = Event(name="limit", priority=Priority.SIM_EXIT, is_exit=True)
    q.schedule(limit, 15)
    assert q.serve_until(pack_key(30, 0)) is limit
    assert log == ["A", "B"] and q.next_tick() == 20


# --- deferred mode and commit ----------------------------------------------------------------------------------------


def test_deferred_operations_change_the_event_at_once_and_the_heap_only_at_commit(log: list[object]) -> None:
    """While deferring: scheduled/when change at once, nothing enters the heap; commit inserts in the given order."""
    q = BatchQueue()
    a, b, c = tagged(log, "A"), tagged(log, "B"), tagged(log, "C")
    d = Deferred(limit_key=pack_key(0, 0))
    q.defer_to(d)
    q.schedule(a, 10)
    q.schedule(b, 10)
    q.schedule(c, 12)
    q.reschedule(c, 10)
    q.defer_to(None)
    assert a.scheduled and c.when == 10 and q.pending() == []
    assert len(d.ops) == 4 and d.size_delta == 3
    assert not op_live(d.ops[2]) and op_live(d.ops[3])  # the reschedule retired c's first insertion
    assert q.commit(d.ops, d.size_delta) == 3
    drain(q)
    assert log == ["C", "B", "A"]  # gem5 LIFO among the committed insertions, as if scheduled directly


def test_commit_order_decides_ties_and_explicit_ties_are_used() -> None:
    """The same ops committed in another order get other gem5 ties; explicit ties override the counter."""
    def committed(order: list[int], ties: list[int] | None = None) -> list[str]:
        q = BatchQueue()
        evs = [Event(name=n) for n in "ABC"]
        d = Deferred(-1)
        q.defer_to(d)
        for e in evs:
            q.schedule(e, 7)
        q.defer_to(None)
        q.commit([d.ops[i] for i in order], d.size_delta, ties)
        return [e.name for e in q.pending()]

    assert committed([0, 1, 2]) == ["C", "B", "A"]
    assert committed([2, 1, 0]) == ["A", "B", "C"]
    assert committed([0, 1, 2], ties=[3, 1, 2]) == ["B", "C", "A"]


def test_deferred_assertions_are_gem5s() -> None:
    """Deferred calls check when >= cur_tick and (not) scheduled once, in the kernel: raise, or record per exec."""
    q = BatchQueue()
    q.cur_tick = 100
    ev = Event(name="E")
    q.defer_to(Deferred(-1))
    with pytest.raises(SchedulingError, match="when < cur_tick"):
        q.schedule(ev, 99)
    assert not ev.scheduled
    with pytest.raises(SchedulingError, match="not scheduled"):
        q.deschedule(ev)
    q.defer_to(None)

    q = BatchQueue(checks=False)
    q.cur_tick = 100
    d = Deferred(-1)
    d.execs.append((0, 0, 0))  # as if one event of the batch were running
    q.defer_to(d)
    q.schedule(ev, 99)
    q.defer_to(None)
    assert [(i, v.reason) for i, v in d.violations] == [(0, "past")]


def test_on_op_sees_zero_delay_children_and_owned_events_only() -> None:
    """The engine's hook: deschedules and insertions of non-plain events always, plain ones only at <= limit."""
    seen: list[tuple[str, bool]] = []

    class Plain(Event):
        pass

    q = BatchQueue()
    q.cur_tick = 10
    d = Deferred(pack_key(10, 0), Plain, lambda e, op: seen.append((e.name, op is None)))
    q.defer_to(d)
    q.schedule(Plain(name="late"), 11)
    q.schedule(Plain(name="child"), 10)
    owned = Event(name="owned")
    q.schedule(owned, 30)
    q.deschedule(owned)
    q.defer_to(None)
    assert seen == [("child", False), ("owned", False), ("owned", True)]


def test_debug_invariants_check_every_commit() -> None:
    """With debug_invariants, a commit that leaves the queue inconsistent (here: time going backwards) raises."""
    q = BatchQueue(checks=False, debug_invariants=True)
    q.cur_tick = 100
    d = Deferred(-1)
    q.defer_to(d)
    q.schedule(Event(name="back"), 50)
    q.defer_to(None)
    with pytest.raises(AssertionError, match="time goes backwards"):
        q.commit(d.ops, d.size_delta)


def test_run_entry_and_run_op_serve_inside_the_batch(log: list[object]) -> None:
    """Engines run bin entries and local children through the kernel: logged as execs, counted in size_delta."""
    q = BatchQueue()
    a = tagged(log, "A")
    child = tagged(log, "child")
    q.schedule(a, 5)
    q.cur_tick = 5
    (entry,) = q.pop_bin()
    d = Deferred(entry[0])
    q.defer_to(d)
    q.schedule(child, 5)
    op = d.ops[0]
    assert q.run_op(d, op, op_key(op), -1)
    assert not q.run_op(d, op, op_key(op), -1)
    assert q.run_entry(d, entry)
    assert not q.run_entry(d, entry)  # no longer live: not run twice
    q.defer_to(None)
    assert log == ["child", "A"] and not a.scheduled and not child.scheduled
    assert [e[2] for e in d.execs] == [1, 1] and d.size_delta == -1
    assert q.commit(d.ops, d.size_delta) == 0 and q.empty()


# --- checks=False: gem5 with its assertions compiled out -----------------------------------------------------------


def test_double_schedule_runs_twice_each_at_its_own_tick(log: list[object]) -> None:
    """gem5 links a double-scheduled event in twice: both entries run, each with cur_tick and when of its own."""
    q = EventQueue(checks=False)
    seen_when: list[int] = []
    a = Event(lambda: (log.append(("A", q.cur_tick)), seen_when.append(a.when)), "A")  # type: ignore[func-returns-value]
    q.schedule(a, 20)
    q.schedule(a, 10)
    assert len(q) == 2 and a.when == 10 and [v.reason for v in q.violations] == ["already-scheduled"]
    q.run()
    assert log == [("A", 10), ("A", 20)] and seen_when == [10, 20]
    assert q.empty() and not a.scheduled


def test_double_schedule_flag_follows_gem5_and_the_older_entry_can_still_be_removed(log: list[object]) -> None:
    """Serving the newer entry clears Scheduled while the older one stays queued; deschedule still finds it."""
    q = EventQueue(checks=False)
    a = tagged(log, "A")
    q.schedule(a, 20)
    q.schedule(a, 10)  # newer entry at 10, older at 20
    q.service_one()
    assert log == ["A"] and not a.scheduled and len(q) == 1
    q.deschedule(a)  # not scheduled (a violation), but gem5's remove() finds the node
    assert q.empty() and [v.reason for v in q.violations] == ["already-scheduled", "not-scheduled"]
    assert q.check_invariants() == []


def test_deschedule_of_an_event_not_in_the_queue_panics_whatever_checks_says() -> None:
    """gem5's remove() panics "event not found!" (never compiled out); with checks on, the assertion fires first."""
    with pytest.raises(SchedulingError, match="not scheduled"):
        EventQueue(checks=True).deschedule(Event(name="ghost"))
    q = EventQueue(checks=False)
    with pytest.raises(EventNotFound, match=r"^event not found!") as info:
        q.deschedule(Event(name="ghost"))
    assert info.value.event == "ghost"
    assert [(v.op, v.reason) for v in q.violations] == [("deschedule", "not-scheduled")]  # recorded either way


def test_deferred_mode_does_what_the_plain_queue_does_with_checks_off(log: list[object]) -> None:
    """A double schedule and a ghost deschedule inside a batch behave as on the plain queue."""
    q = BatchQueue(checks=False)
    a = tagged(log, "A")
    d = Deferred(-1)
    d.execs.append((0, 0, 0))
    q.defer_to(d)
    q.schedule(a, 10)
    q.schedule(a, 20)
    with pytest.raises(EventNotFound):
        q.deschedule(Event(name="ghost"))
    q.defer_to(None)
    assert q.commit(d.ops, d.size_delta) == 2
    q.run()
    assert log == ["A", "A"]
    assert [v.reason for _, v in d.violations] == ["already-scheduled", "not-scheduled"]
