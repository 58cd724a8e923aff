"""The kernel against gem5: every behavioural case of ``docs/explanation/gem5-eventq.md`` §7, then the extras.

Cases 1-31 are the ones verified against compiled gem5 code; ``Ev(tag, prio)`` there
is ``ev(log, tag, prio)`` here, an event that appends its tag (and, where the case is
about time, ``cur_tick``) to ``log`` when it runs.
"""

from __future__ import annotations

import pytest

from tickpar.kernel.eventq import (
    ORDERS,
    Event,
    EventNotFound,
    EventQueue,
    Priority,
    SchedulingError,
    Violation,
    canonical_source,
)


def ev(log: list[object], tag: str, prio: int = Priority.DEFAULT, **kw: bool) -> Event:
    """An event named ``tag`` that logs its tag when it runs."""
    return Event(lambda: log.append(tag), name=tag, priority=prio, **kw)


def timed(log: list[object], q: EventQueue, tag: str, prio: int = Priority.DEFAULT) -> Event:
    """An event that logs ``(tag, q.cur_tick)`` when it runs."""
    return Event(lambda: log.append((tag, q.cur_tick)), name=tag, priority=prio)


def drain(q: EventQueue) -> Event | None:
    """gem5's doSimLoop: serve until an exit event comes back or the queue is empty."""
    while not q.empty():
        exit_event = q.service_one()
        if exit_event is not None:
            return exit_event
    return None


class Counted(Event):
    """An AutoDelete (managed) event that counts its releases instead of deleting itself."""

    __slots__ = ("released",)

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, managed=True, **kw)  # type: ignore[arg-type]
        self.released = 0

    def release(self) -> None:
        self.released += 1


def snapshot(q: EventQueue, *events: Event) -> tuple[object, ...]:
    """Everything a failing call must leave unchanged."""
    return (
        q.cur_tick,
        len(q),
        [(e.name, e.when, e.priority) for e in q.pending()],
        [(e.when, e.scheduled, e.squashed) for e in events],
        list(q.violations),
    )


# --- §7 cases 1-31 -------------------------------------------------------------------------------------


def test_case01_same_tick_priorities(queue: EventQueue, log: list[object]) -> None:
    """1. Same tick, priorities: A(100,0), B(100,-1), C(100,50) -> B, A, C."""
    queue.schedule(ev(log, "A", 0), 100)
    queue.schedule(ev(log, "B", -1), 100)
    queue.schedule(ev(log, "C", 50), 100)
    drain(queue)
    assert log == ["B", "A", "C"]


def test_case02_equal_key_lifo(queue: EventQueue, log: list[object]) -> None:
    """2. Equal key LIFO: schedule A, B, C all at (100,0) -> C, B, A."""
    for tag in "ABC":
        queue.schedule(ev(log, tag), 100)
    drain(queue)
    assert log == ["C", "B", "A"]


def test_case03_earlier_tick_first_then_lifo(queue: EventQueue, log: list[object]) -> None:
    """3. A@100, X@50, B@100 -> X, B, A."""
    queue.schedule(ev(log, "A"), 100)
    queue.schedule(ev(log, "X"), 50)
    queue.schedule(ev(log, "B"), 100)
    drain(queue)
    assert log == ["X", "B", "A"]


def test_case04_tick_dominates_priority(queue: EventQueue, log: list[object]) -> None:
    """4. Tick dominates priority: A(100,-128), B(99,127) -> B, A."""
    queue.schedule(ev(log, "A", -128), 100)
    queue.schedule(ev(log, "B", 127), 99)
    drain(queue)
    assert log == ["B", "A"]


def test_case05_service_one_advances_and_unschedules(queue: EventQueue) -> None:
    """5. serviceOne on A@100: returns None; curTick 0->100; A.scheduled() False (already inside process)."""
    seen: list[tuple[int, bool]] = []
    a = Event(lambda: seen.append((queue.cur_tick, a.scheduled)), name="A")
    queue.schedule(a, 100)
    assert queue.cur_tick == 0
    assert queue.service_one() is None
    assert queue.cur_tick == 100
    assert not a.scheduled
    assert seen == [(100, False)]


def test_case06_squashed_pop_does_not_advance(queue: EventQueue, log: list[object]) -> None:
    """6. A@50 serviced; B@100 squashed; serviceOne -> None, B not processed, curTick stays 50,
    B not scheduled and not squashed, queue empty."""
    a, b = ev(log, "A"), ev(log, "B")
    queue.schedule(a, 50)
    queue.schedule(b, 100)
    queue.service_one()
    b.squash()
    assert b.squashed and b.scheduled
    assert queue.service_one() is None
    assert log == ["A"]
    assert queue.cur_tick == 50
    assert not b.scheduled and not b.squashed
    assert queue.empty()


def test_case07_reschedule_unsquashes(queue: EventQueue, log: list[object]) -> None:
    """7. A@100 squashed, reschedule(A,200) -> not squashed, scheduled; runs @200."""
    a = timed(log, queue, "A")
    queue.schedule(a, 100)
    a.squash()
    queue.reschedule(a, 200)
    assert not a.squashed and a.scheduled and a.when == 200
    drain(queue)
    assert log == [("A", 200)]


def test_case08_deschedule_middle_or_top_of_bin(log: list[object]) -> None:
    """8. A,B,C @(100,0); deschedule B (middle) -> C, A; deschedule C (top) -> B, A."""
    for victim, expected in (("B", ["C", "A"]), ("C", ["B", "A"])):
        log.clear()
        q = EventQueue()
        events = {tag: ev(log, tag) for tag in "ABC"}
        for tag in "ABC":
            q.schedule(events[tag], 100)
        q.deschedule(events[victim])
        assert not events[victim].scheduled
        drain(q)
        assert log == expected, victim


def test_case09_deschedule_across_bins(log: list[object]) -> None:
    """9. X@50, A@100, B@100, Y@150; deschedule B -> X, A, Y; deschedule A instead -> X, B, Y."""
    for victim, expected in (("B", ["X", "A", "Y"]), ("A", ["X", "B", "Y"])):
        log.clear()
        q = EventQueue()
        events = {tag: ev(log, tag) for tag in "XABY"}
        for tag, when in (("X", 50), ("A", 100), ("B", 100), ("Y", 150)):
            q.schedule(events[tag], when)
        q.deschedule(events[victim])
        drain(q)
        assert log == expected, victim


def test_case10_reschedule_unscheduled_asserts(queue: EventQueue, log: list[object]) -> None:
    """10. reschedule(unscheduled, 100) with always=False -> assertion."""
    a = ev(log, "A")
    with pytest.raises(SchedulingError) as info:
        queue.reschedule(a, 100)
    assert info.value.op == "reschedule" and info.value.reason == "not-scheduled"
    assert not a.scheduled and queue.empty()


def test_case11_reschedule_always_schedules(queue: EventQueue, log: list[object]) -> None:
    """11. reschedule(unscheduled, 100, always=True) -> scheduled, runs @100."""
    a = timed(log, queue, "A")
    queue.reschedule(a, 100, always=True)
    assert a.scheduled and a.when == 100 and len(queue) == 1
    drain(queue)
    assert log == [("A", 100)]


def test_case12_reschedule_same_key_goes_on_top(queue: EventQueue, log: list[object]) -> None:
    """12. A,B @(100,0) (order B,A); reschedule(A,100) -> A, B (re-insert goes on top)."""
    a, b = ev(log, "A"), ev(log, "B")
    queue.schedule(a, 100)
    queue.schedule(b, 100)
    assert [e.name for e in queue.pending()] == ["B", "A"]
    queue.reschedule(a, 100)
    drain(queue)
    assert log == ["A", "B"]


def test_case13_reschedule_later(queue: EventQueue, log: list[object]) -> None:
    """13. A@100, B@150; reschedule(A,200,True) -> B, A."""
    a, b = ev(log, "A"), ev(log, "B")
    queue.schedule(a, 100)
    queue.schedule(b, 150)
    queue.reschedule(a, 200, True)
    assert len(queue) == 2
    drain(queue)
    assert log == ["B", "A"]


def test_case14_past_is_refused_present_is_fine(queue: EventQueue, log: list[object]) -> None:
    """14. After serviceOne at 100: schedule(B,99) -> assertion; schedule(B,100) OK, runs @100;
    reschedule(B,99) -> assertion."""
    queue.schedule(ev(log, "A"), 100)
    queue.service_one()
    b = timed(log, queue, "B")
    with pytest.raises(SchedulingError) as info:
        queue.schedule(b, 99)
    assert info.value.reason == "past" and not b.scheduled
    queue.schedule(b, 100)
    with pytest.raises(SchedulingError) as info:
        queue.reschedule(b, 99)
    assert info.value.op == "reschedule" and info.value.reason == "past"
    assert b.when == 100
    drain(queue)
    assert log == ["A", ("B", 100)]


def test_case15_priority_inversion_within_tick_allowed(queue: EventQueue, log: list[object]) -> None:
    """15. Inside A(100,50).process: schedule(B,100) with prio 0 -> no error; B runs next @100."""
    b = timed(log, queue, "B", 0)

    def a_process() -> None:
        log.append(("A", queue.cur_tick))
        queue.schedule(b, 100)

    queue.schedule(Event(a_process, "A", 50), 100)
    queue.schedule(timed(log, queue, "C", 60), 100)
    drain(queue)
    assert log == [("A", 100), ("B", 100), ("C", 100)]


def test_case16_double_schedule_asserts(queue: EventQueue, log: list[object]) -> None:
    """16. schedule on an already-scheduled event -> assertion; also when it is scheduled and squashed."""
    a = ev(log, "A")
    queue.schedule(a, 100)
    with pytest.raises(SchedulingError) as info:
        queue.schedule(a, 200)
    assert info.value.reason == "already-scheduled"
    a.squash()
    with pytest.raises(SchedulingError) as info:
        queue.schedule(a, 200)
    assert info.value.reason == "already-scheduled"
    assert a.when == 100 and len(queue) == 1


def test_case17_deschedule_unscheduled_asserts(queue: EventQueue, log: list[object]) -> None:
    """17. deschedule on an unscheduled event -> assertion."""
    a = ev(log, "A")
    with pytest.raises(SchedulingError) as info:
        queue.deschedule(a)
    assert info.value.op == "deschedule" and info.value.reason == "not-scheduled"


def test_case18_exit_event_stops_the_loop(queue: EventQueue, log: list[object]) -> None:
    """18. Exit: E(100,Sim_Exit_Pri,IsExit), A@100, B@100, C@200 -> B, A, E; serviceOne returns E;
    curTick 100; nextTick()=200; E unscheduled."""
    e = ev(log, "E", Priority.SIM_EXIT, is_exit=True)
    queue.schedule(e, 100)
    queue.schedule(ev(log, "A"), 100)
    queue.schedule(ev(log, "B"), 100)
    queue.schedule(ev(log, "C"), 200)
    assert drain(queue) is e
    assert log == ["B", "A", "E"]
    assert queue.cur_tick == 100
    assert queue.next_tick() == 200
    assert not e.scheduled


def test_case19_exit_scheduled_first_still_runs_last(queue: EventQueue, log: list[object]) -> None:
    """19. E(IsExit, Sim_Exit_Pri) scheduled *before* A,B at 100 still runs last (B, A, E)."""
    e = ev(log, "E", Priority.SIM_EXIT, is_exit=True)
    queue.schedule(e, 100)
    queue.schedule(ev(log, "A"), 100)
    queue.schedule(ev(log, "B"), 100)
    assert drain(queue) is e
    assert log == ["B", "A", "E"]


def test_case20_exit_now_runs_next(queue: EventQueue, log: list[object]) -> None:
    """20. B(100,0), A(100,50), C(100,60) queued; A.process schedules exit NOW at (curTick, Minimum_Pri)
    -> B, A, NOW returned; C still queued @100."""
    now = ev(log, "NOW", Priority.MINIMUM, is_exit=True)
    c = ev(log, "C", 60)

    def a_process() -> None:
        log.append("A")
        queue.schedule(now, queue.cur_tick)

    queue.schedule(ev(log, "B", 0), 100)
    queue.schedule(Event(a_process, "A", 50), 100)
    queue.schedule(c, 100)
    assert drain(queue) is now
    assert log == ["B", "A", "NOW"]
    assert c.scheduled and queue.pending() == [c] and queue.next_tick() == 100


def test_case21_autodelete_release_points(queue: EventQueue) -> None:
    """21. AutoDelete: released (deleted) after process; not deleted if process() rescheduled it (deleted
    once at the end); deleted by deschedule; deleted when popped squashed (no process, curTick unchanged)."""
    # released after process
    plain = Counted(name="plain")
    queue.schedule(plain, 10)
    queue.service_one()
    assert plain.released == 1

    # rescheduled by its own process(): released only once, after the last run
    runs: list[int] = []

    def again_process() -> None:
        runs.append(queue.cur_tick)
        if len(runs) < 3:
            queue.schedule(again, queue.cur_tick + 5)

    again = Counted(again_process, name="again")
    queue.schedule(again, 20)
    queue.service_one()
    assert again.released == 0 and again.scheduled
    drain(queue)
    assert runs == [20, 25, 30]
    assert again.released == 1

    # deleted by deschedule
    gone = Counted(name="gone")
    queue.schedule(gone, 100)
    queue.deschedule(gone)
    assert gone.released == 1

    # deleted when popped squashed, without running and without moving cur_tick
    ran: list[str] = []
    squashed = Counted(lambda: ran.append("x"), name="squashed")
    queue.schedule(squashed, 200)
    squashed.squash()
    tick = queue.cur_tick
    assert queue.service_one() is None
    assert squashed.released == 1 and ran == [] and queue.cur_tick == tick


def test_case22_autodelete_exit_not_released(queue: EventQueue) -> None:
    """22. AutoDelete + IsExit: returned by serviceOne and **not** released."""
    e = Counted(name="E", priority=Priority.SIM_EXIT, is_exit=True)
    queue.schedule(e, 100)
    assert queue.service_one() is e
    assert e.released == 0 and not e.scheduled


def test_case23_self_reschedule_inside_process(queue: EventQueue, log: list[object]) -> None:
    """23. Self-reschedule inside process: A@10 schedules itself at curTick+5 twice -> A@10, A@15, A@20."""

    def a_process() -> None:
        log.append(("A", queue.cur_tick))
        if len(log) < 3:
            queue.schedule(a, queue.cur_tick + 5)

    a = Event(a_process, "A")
    queue.schedule(a, 10)
    drain(queue)
    assert log == [("A", 10), ("A", 15), ("A", 20)]


def test_case24_insert_into_running_bin_goes_on_top(queue: EventQueue, log: list[object]) -> None:
    """24. X,Y pending at (100,0) (order X,Y). X.process schedules Z@(100,0) -> X, Z, Y."""
    z = ev(log, "Z")

    def x_process() -> None:
        log.append("X")
        queue.schedule(z, 100)

    queue.schedule(ev(log, "Y"), 100)
    queue.schedule(Event(x_process, "X"), 100)
    drain(queue)
    assert log == ["X", "Z", "Y"]


def test_case25_deschedule_and_insert_from_process(queue: EventQueue, log: list[object]) -> None:
    """25. Y,Z,X @(100,0) (order X,Z,Y). X.process deschedules Z and schedules C@100 -> X, C, Y."""
    z, c = ev(log, "Z"), ev(log, "C")

    def x_process() -> None:
        log.append("X")
        queue.deschedule(z)
        queue.schedule(c, 100)

    queue.schedule(ev(log, "Y"), 100)
    queue.schedule(z, 100)
    queue.schedule(Event(x_process, "X"), 100)
    drain(queue)
    assert log == ["X", "C", "Y"]


def test_case26_deschedule_squashed_clears_both(queue: EventQueue, log: list[object]) -> None:
    """26. deschedule of a squashed event clears both flags; queue empty."""
    a = ev(log, "A")
    queue.schedule(a, 100)
    a.squash()
    queue.deschedule(a)
    assert not a.scheduled and not a.squashed
    assert queue.empty() and queue.peek() is None


def test_case27_service_events_sets_tick(queue: EventQueue, log: list[object]) -> None:
    """27. serviceEvents(200) with A@100, B@300 -> runs A; curTick = 200; nextTick 300."""
    queue.schedule(ev(log, "A"), 100)
    queue.schedule(ev(log, "B"), 300)
    queue.service_events(200)
    assert log == ["A"]
    assert queue.cur_tick == 200
    assert queue.next_tick() == 300


def test_case28_schedule_keeps_squashed(queue: EventQueue, log: list[object]) -> None:
    """28. schedule does not clear Squashed: squash an unscheduled A, schedule @100 -> skipped, curTick stays 0,
    flag cleared afterwards."""
    a = ev(log, "A")
    a.squash()
    queue.schedule(a, 100)
    assert a.scheduled and a.squashed
    assert queue.service_one() is None
    assert log == []
    assert queue.cur_tick == 0
    assert not a.squashed and not a.scheduled


def test_case29_mixed_ticks_and_priorities(queue: EventQueue, log: list[object]) -> None:
    """29. A@100, B@100, C@200, D@150, E(100,-1) -> E, B, A, D, C."""
    for tag, when, prio in (("A", 100, 0), ("B", 100, 0), ("C", 200, 0), ("D", 150, 0), ("E", 100, -1)):
        queue.schedule(ev(log, tag, prio), when)
    drain(queue)
    assert log == ["E", "B", "A", "D", "C"]


def test_case30_set_cur_tick_may_go_backwards(queue: EventQueue, log: list[object]) -> None:
    """30. setCurTick may move backwards; no check (only schedule/reschedule check)."""
    queue.schedule(ev(log, "A"), 100)
    queue.service_one()
    queue.set_cur_tick(50)
    assert queue.cur_tick == 50
    queue.schedule(timed(log, queue, "B"), 60)  # fine against the moved-back clock
    with pytest.raises(SchedulingError):
        queue.schedule(ev(log, "C"), 49)
    drain(queue)
    assert log == ["A", ("B", 60)]
    assert queue.violations == []


def test_case31_reschedule_earlier(queue: EventQueue, log: list[object]) -> None:
    """31. reschedule to an earlier tick (>= curTick) is allowed: A@500->200, B@300 -> A, B."""
    a = timed(log, queue, "A")
    queue.schedule(a, 500)
    queue.schedule(timed(log, queue, "B"), 300)
    queue.reschedule(a, 200)
    drain(queue)
    assert log == [("A", 200), ("B", 300)]


def test_case32_default_names_unique_per_object() -> None:
    """32. Names: default Event_<n>, unique per object; a given name is kept as is (shared names allowed)."""
    events = [Event() for _ in range(50)]
    names = [e.name for e in events]
    assert all(n.startswith("Event_") and n[len("Event_") :].isdigit() for n in names)
    assert len(set(names)) == len(names)
    assert Event(name="sys.cpu").name == "sys.cpu" == Event(name="sys.cpu").name


# --- errors: what they say, and that they change nothing --------------------------------------------------


def test_scheduling_error_names_event_when_and_cur_tick(queue: EventQueue) -> None:
    """Each SchedulingError names the event, the requested tick and cur_tick, in its message and attributes."""
    queue.set_cur_tick(70)
    a = Event(name="sys.cpu0.tickEvent")
    cases = [
        (lambda: queue.schedule(a, 42), "schedule", 42, "past"),
        (lambda: queue.reschedule(a, 43, always=True), "reschedule", 43, "past"),
        (lambda: queue.reschedule(a, 80), "reschedule", 80, "not-scheduled"),
        (lambda: queue.deschedule(a), "deschedule", 0, "not-scheduled"),
    ]
    for call, op, when, reason in cases:
        with pytest.raises(SchedulingError) as info:
            call()
        err = info.value
        assert (err.op, err.event, err.when, err.cur_tick, err.reason) == (op, a, when, 70, reason)
        text = str(err)
        assert "sys.cpu0.tickEvent" in text and f"when={when}" in text and "cur_tick=70" in text
        assert op in text and "\n" not in text
    queue.schedule(a, 90)
    with pytest.raises(SchedulingError, match=r"schedule\(sys.cpu0.tickEvent, when=95\) with cur_tick=70"):
        queue.schedule(a, 95)


def test_raising_calls_change_nothing(log: list[object]) -> None:
    """A call that raises SchedulingError leaves the queue's contents, its tick and every event's state as they were."""
    q = EventQueue()
    a, b, c = ev(log, "A"), ev(log, "B"), ev(log, "C")
    q.schedule(a, 100)
    q.schedule(b, 100)
    q.service_one()  # B runs: cur_tick 100
    q.schedule(b, 150)
    b.squash()
    before = snapshot(q, a, b, c)
    failing = [
        lambda: q.schedule(c, 99),  # past
        lambda: q.schedule(a, 200),  # already scheduled
        lambda: q.schedule(b, 200),  # already scheduled (and squashed)
        lambda: q.reschedule(a, 99),  # past
        lambda: q.reschedule(b, 99, always=True),  # past: must not un-squash b
        lambda: q.reschedule(c, 120),  # not scheduled
        lambda: q.deschedule(c),  # not scheduled
    ]
    for call in failing:
        with pytest.raises(SchedulingError):
            call()
        assert snapshot(q, a, b, c) == before
    assert q.check_invariants() == []
    drain(q)
    assert log == ["B", "A"]  # b was still squashed, so only A ran after the failures


def test_checks_off_lets_calls_through_and_records_violations(log: list[object]) -> None:
    """With checks=False every failed assertion adds a Violation and does what gem5 does with asserts compiled out
    (issue 9 §3): a double schedule links the event in a second time, a deschedule of an event not in the queue
    panics ("event not found!")."""
    q = EventQueue(checks=False)
    q.set_cur_tick(100)
    a, b = timed(log, q, "A"), ev(log, "B")
    q.schedule(a, 90)  # past: goes through
    assert a.scheduled and a.when == 90
    q.schedule(a, 95)  # already scheduled: inserted a second time, so it runs twice
    assert len(q) == 2 and a.when == 95
    q.reschedule(b, 120)  # not scheduled, always=False: schedules it anyway
    assert b.scheduled and len(q) == 3
    with pytest.raises(EventNotFound, match=r"^event not found!"):
        q.deschedule(Event(name="ghost"))  # not in the queue: gem5's remove() panics, asserts or not
    assert [(v.op, v.event, v.when, v.cur_tick, v.reason) for v in q.violations] == [
        ("schedule", "A", 90, 100, "past"),
        ("schedule", "A", 95, 100, "past"),
        ("schedule", "A", 95, 100, "already-scheduled"),
        ("reschedule", "B", 120, 100, "not-scheduled"),
        ("deschedule", "ghost", 0, 100, "not-scheduled"),
    ]
    assert all(isinstance(v, Violation) for v in q.violations)
    assert q.violations[0].describe() == "schedule(A, when=90) with cur_tick=100: when < cur_tick"
    assert "time goes backwards" in " ".join(q.check_invariants())
    drain(q)
    assert log == [("A", 90), ("A", 95), "B"]  # both entries ran; cur_tick went backwards, as in gem5 without asserts


# --- order modes, priorities ---------------------------------------------------------------------------------


def test_canonical_order_is_fifo_by_source_key(log: list[object]) -> None:
    """order="canonical" serves equal (when, priority) events by ascending ev.source, whatever the insertion order."""
    q = EventQueue(order="canonical")
    keys = {"a": canonical_source(2, 1), "b": canonical_source(0, 7), "c": canonical_source(1, 3), "d": 5}
    for tag in "abcd":
        e = ev(log, tag)
        e.source = keys[tag]
        q.schedule(e, 100)
    late = ev(log, "early-tick")
    late.source = canonical_source(9, 9)
    q.schedule(late, 50)
    urgent = ev(log, "urgent", -1)
    urgent.source = canonical_source(9, 8)
    q.schedule(urgent, 100)
    drain(q)
    assert log == ["early-tick", "urgent", "d", "b", "c", "a"]


def test_canonical_unsourced_events_run_first_in_fifo_order(log: list[object]) -> None:
    """In canonical order, events without a source key run before sourced ones of their bin, FIFO among themselves."""
    q = EventQueue(order="canonical")
    sourced = ev(log, "sourced")
    sourced.source = 0
    q.schedule(sourced, 10)
    for tag in ("n1", "n2", "n3"):
        q.schedule(ev(log, tag), 10)
    drain(q)
    assert log == ["n1", "n2", "n3", "sourced"]


def test_gem5_order_ignores_source(log: list[object]) -> None:
    """order="gem5" is LIFO by insertion even when events carry source keys."""
    q = EventQueue(order="gem5")
    for i, tag in enumerate("abc"):
        e = ev(log, tag)
        e.source = i
        q.schedule(e, 10)
    drain(q)
    assert log == ["c", "b", "a"]


def test_canonical_reused_source_key_is_refused(log: list[object]) -> None:
    """In canonical order, reinserting an event under the key it already holds is a ValueError, and changes nothing."""
    q = EventQueue(order="canonical")
    a = ev(log, "A")
    a.source = canonical_source(1, 1)
    q.schedule(a, 100)
    with pytest.raises(ValueError, match="source key reused"):
        q.reschedule(a, 200)
    assert a.when == 100 and a.scheduled and len(q) == 1
    a.source = canonical_source(1, 2)
    q.reschedule(a, 200)
    drain(q)
    assert log == ["A"] and q.cur_tick == 200


def test_canonical_deschedule_then_schedule_with_stale_key_is_refused(log: list[object]) -> None:
    """In canonical order, scheduling a descheduled event again under its old key is refused, never served twice."""
    q = EventQueue(order="canonical")
    a, b = timed(log, q, "A"), timed(log, q, "B")
    a.source, b.source = canonical_source(1, 1), canonical_source(2, 1)
    q.schedule(a, 100)
    q.schedule(b, 150)
    q.deschedule(a)
    with pytest.raises(ValueError, match="source key reused"):
        q.schedule(a, 200)
    with pytest.raises(ValueError, match="source key reused"):
        q.reschedule(a, 200, always=True)
    assert not a.scheduled and len(q) == 1
    a.source = canonical_source(1, 2)
    q.schedule(a, 200)
    assert q.check_invariants() == []
    drain(q)
    assert log == [("B", 150), ("A", 200)]


def test_invalid_order_names_allowed_values() -> None:
    """An unknown order mode is a ValueError that names the value and every allowed one."""
    with pytest.raises(ValueError) as info:
        EventQueue(order="fifo")
    text = str(info.value)
    assert "'fifo'" in text and all(name in text for name in ORDERS)
    assert ORDERS == ("gem5", "canonical")


def test_priority_outside_int8_is_refused() -> None:
    """Priorities are int8 as in gem5: -128 and 127 are fine, -129 and 128 are ValueErrors naming the value."""
    assert Event(priority=-128).priority == Priority.MINIMUM
    assert Event(priority=127).priority == Priority.MAXIMUM
    for bad in (-129, 128, 1000):
        with pytest.raises(ValueError, match=str(bad)):
            Event(priority=bad)


def test_named_priorities_match_gem5() -> None:
    """The named priorities carry gem5's values (eventq.hh:138-244)."""
    expected = {
        "MINIMUM": -128, "DEBUG_ENABLE": -101, "DEBUG_BREAK": -100, "CPU_SWITCH": -31, "DELAYED_WRITEBACK": -1,
        "DEFAULT": 0, "DVFS_UPDATE": 31, "SERIALIZE": 32, "CPU_TICK": 50, "CPU_EXIT": 64, "STAT_EVENT": 90,
        "PROGRESS_EVENT": 95, "SIM_EXIT": 100, "MAXIMUM": 127,
    }  # fmt: skip
    assert {p.name: int(p) for p in Priority} == expected


# --- inspection and the split pop/execute primitives --------------------------------------------------------


def test_peek_next_key_next_tick_and_empty(queue: EventQueue, log: list[object]) -> None:
    """peek/next_key are None on an empty queue, next_tick and service_one raise IndexError; a squashed head counts."""
    assert queue.empty() and len(queue) == 0
    assert queue.peek() is None and queue.next_key() is None
    with pytest.raises(IndexError):
        queue.next_tick()
    with pytest.raises(IndexError):
        queue.service_one()
    a, b = ev(log, "A", 5), ev(log, "B")
    queue.schedule(a, 30)
    queue.schedule(b, 40)
    a.squash()
    assert queue.peek() is a and queue.next_key() == (30, 5) and queue.next_tick() == 30
    queue.deschedule(a)  # the stale heap entry must not show through
    assert queue.peek() is b and queue.next_key() == (40, 0) and queue.next_tick() == 40 and len(queue) == 1


def test_pop_next_advances_even_for_squashed(queue: EventQueue, log: list[object]) -> None:
    """pop_next (the prototype's popNextEvent) clears Scheduled and moves cur_tick to the event, squashed or not;
    advance=False leaves cur_tick alone."""
    a, b = ev(log, "A"), ev(log, "B")
    queue.schedule(a, 10)
    queue.schedule(b, 20)
    a.squash()
    popped = queue.pop_next()
    assert popped is a and not a.scheduled and queue.cur_tick == 10 and len(queue) == 1
    assert log == []
    assert queue.pop_next(advance=False) is b and queue.cur_tick == 10 and queue.empty()


def test_execute_popped_runs_skips_returns_and_releases(queue: EventQueue, log: list[object]) -> None:
    """execute_popped runs a popped event without touching cur_tick, skips (and unsquashes) a squashed one,
    returns an exit event, and releases a managed one."""
    a = Counted(lambda: log.append(("A", queue.cur_tick)), name="A")
    s = ev(log, "S")
    e = ev(log, "E", Priority.SIM_EXIT, is_exit=True)
    queue.schedule(a, 10)
    queue.schedule(s, 20)
    queue.schedule(e, 30)
    s.squash()
    first = queue.pop_next(advance=False)
    assert queue.execute_popped(first) is None
    assert log == [("A", 0)] and a.released == 1
    second = queue.pop_next()
    assert queue.execute_popped(second) is None and not s.squashed and log == [("A", 0)]
    third = queue.pop_next()
    assert queue.execute_popped(third) is e and log[-1] == "E"


def test_service_events_ignores_exit_events(queue: EventQueue, log: list[object]) -> None:
    """service_events, like gem5's serviceEvents (which drops serviceOne's result), services an exit event like any
    other and carries on up to its limit, then sets cur_tick to the limit."""
    queue.schedule(ev(log, "A"), 10)
    queue.schedule(ev(log, "E", Priority.SIM_EXIT, is_exit=True), 20)
    queue.schedule(ev(log, "B"), 30)
    queue.schedule(ev(log, "C"), 130)
    queue.service_events(100)
    assert log == ["A", "E", "B"]
    assert queue.cur_tick == 100 and queue.next_tick() == 130


def test_reschedule_of_managed_event_does_not_release(queue: EventQueue) -> None:
    """Moving a managed event (reschedule) keeps it alive; only leaving the queue releases it."""
    a = Counted(name="A")
    queue.schedule(a, 10)
    queue.reschedule(a, 20)
    assert a.released == 0
    queue.deschedule(a)
    queue.reschedule(a, 30, always=True)
    assert a.released == 1 and a.scheduled
    queue.run()
    assert a.released == 2


def test_unmanaged_events_are_never_released(queue: EventQueue) -> None:
    """release() is a hook of managed (AutoDelete) events only."""
    calls: list[str] = []

    class Hooked(Event):
        __slots__ = ()

        def release(self) -> None:
            calls.append("release")

    a = Hooked(name="A")
    queue.schedule(a, 1)
    queue.service_one()
    queue.schedule(a, 2)
    queue.deschedule(a)
    assert calls == []


def test_check_invariants_clean_after_mixed_use(queue: EventQueue, log: list[object]) -> None:
    """After a mix of schedule/reschedule/deschedule/squash/service, check_invariants() reports nothing."""
    events = [ev(log, f"e{i}", (i % 3) - 1) for i in range(12)]
    for i, e in enumerate(events):
        queue.schedule(e, 10 + i % 4)
    queue.reschedule(events[0], 11)
    queue.deschedule(events[5])
    events[7].squash()
    queue.service_one()
    queue.reschedule(events[9], 50, always=True)
    assert queue.check_invariants() == []
    assert len(queue) == len(queue.pending()) == 10


def test_event_repr_shows_state(queue: EventQueue) -> None:
    """An event's repr names it and says whether it is scheduled and squashed."""
    a = Event(name="A")
    assert "idle" in repr(a)
    queue.schedule(a, 5)
    a.squash()
    assert "A" in repr(a) and "when=5" in repr(a) and "scheduled,squashed" in repr(a)


def test_run_equals_service_one_loop(log: list[object]) -> None:
    """EventQueue.run (doSimLoop inlined) serves exactly what a service_one loop serves, stops at the exit event
    and leaves the rest queued; on a queue without exit it returns None when empty."""

    def build(q: EventQueue, out: list[object]) -> Event:
        events = [timed(out, q, f"e{i}", (i % 3) - 1) for i in range(9)]
        for i, e in enumerate(events):
            q.schedule(e, 10 * (i % 4))
        q.deschedule(events[4])
        events[6].squash()
        q.reschedule(events[2], 5)
        stop = ev(out, "exit", Priority.SIM_EXIT, is_exit=True)
        q.schedule(stop, 20)
        return stop

    by_loop: list[object] = []
    q1 = EventQueue()
    stop1 = build(q1, by_loop)
    assert drain(q1) is stop1
    q2 = EventQueue()
    stop2 = build(q2, log)
    assert q2.run() is stop2
    assert log == by_loop and q2.cur_tick == q1.cur_tick == 20
    assert [e.name for e in q2.pending()] == [e.name for e in q1.pending()] != []
    q2.deschedule(q2.pending()[0])
    q2.run()
    assert q2.empty() and q2.run() is None


def test_events_order_arbitrarily_only_when_a_race_collides_two_heap_entries() -> None:
    """Two entries with one (key, tie), which only racing threads can make, do not stop heapq with a
    TypeError: the run goes on to the race verdict its detector reports."""
    import heapq

    from tickpar.kernel.eventq import Event

    first, second = Event(name="a"), Event(name="b")
    heap = [(7, 3, first), (7, 3, second)]
    heapq.heapify(heap)
    assert {heapq.heappop(heap)[2], heapq.heappop(heap)[2]} == {first, second}
    assert (first < second) != (second < first)
