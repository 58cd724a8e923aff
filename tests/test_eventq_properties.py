"""Property tests: the kernel against a plain reference model of gem5's queue, under random operation sequences.

The reference keeps a dict ``event -> (when, priority, tie)`` and serves the smallest
``(when, priority, tie)``: ``tie`` is ``-seq`` (LIFO by insertion, every insertion
counting) in gem5 order, and the event's source key in canonical order.  After every
operation the served sequence, ``cur_tick``, every event's flags, the head and the
queue length must agree, and ``check_invariants()`` must be empty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tickpar.kernel.eventq import Event, EventQueue, SchedulingError

N_EVENTS = 6
PRIORITIES = (-1, 0, 0, 50, 0, -1)  # some equal, so bins hold several events

Op = tuple[Any, ...]

ops = st.one_of(
    st.tuples(st.just("schedule"), st.integers(0, N_EVENTS - 1), st.integers(-3, 12), st.integers(0, 40)),
    st.tuples(
        st.just("reschedule"), st.integers(0, N_EVENTS - 1), st.integers(-3, 12), st.booleans(), st.integers(0, 40)
    ),
    st.tuples(st.just("deschedule"), st.integers(0, N_EVENTS - 1)),
    st.tuples(st.just("squash"), st.integers(0, N_EVENTS - 1)),
    st.tuples(st.just("service")),
    st.tuples(st.just("service")),
    st.tuples(st.just("set_cur_tick"), st.integers(-4, 0)),
)


@dataclass
class Reference:
    """The reference queue: a dict of keys, a set of squashed events, a tick and what was served."""

    canonical: bool
    cur_tick: int = 0
    seq: int = 0
    keys: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    squashed: set[int] = field(default_factory=set)
    served: list[tuple[int, int]] = field(default_factory=list)

    def tie(self, source: int) -> int:
        self.seq += 1
        return source if self.canonical else -self.seq

    def head(self) -> int | None:
        return min(self.keys, key=self.keys.__getitem__) if self.keys else None


class Harness:
    """Applies one operation to both the kernel and the reference; invalid calls must raise and change nothing."""

    def __init__(self, order: str) -> None:
        self.q = EventQueue(order=order)
        self.ref = Reference(canonical=order == "canonical")
        self.served: list[tuple[int, int]] = []
        self.events = [self._event(i) for i in range(N_EVENTS)]
        self.sources = 0

    def _event(self, i: int) -> Event:
        return Event(lambda: self.served.append((i, self.q.cur_tick)), name=f"e{i}", priority=PRIORITIES[i])

    def _stamp(self, i: int, rank: int) -> int:
        # A fresh canonical key per insertion (unique by the counter), ordered mostly by the drawn rank.
        self.sources += 1
        source = rank * 4096 + self.sources
        self.events[i].source = source
        return source

    def apply(self, op: Op) -> None:
        kind = op[0]
        q, ref = self.q, self.ref
        if kind in ("schedule", "reschedule"):
            idx, when = int(op[1]), ref.cur_tick + int(op[2])
            always = bool(op[3]) if kind == "reschedule" else False
            e = self.events[idx]
            source = self._stamp(idx, int(op[-1]))
            if kind == "schedule":
                valid = when >= ref.cur_tick and idx not in ref.keys
                call = lambda: q.schedule(e, when)  # noqa: E731
            else:
                valid = when >= ref.cur_tick and (idx in ref.keys or always)
                call = lambda: q.reschedule(e, when, always)  # noqa: E731
            if not valid:
                self._expect_error(call)
                return
            call()
            ref.keys[idx] = (when, e.priority, ref.tie(source))
            if kind == "reschedule":
                ref.squashed.discard(idx)
        elif kind == "deschedule":
            idx = int(op[1])
            if idx not in ref.keys:
                self._expect_error(lambda: q.deschedule(self.events[idx]))
                return
            q.deschedule(self.events[idx])
            del ref.keys[idx]
            ref.squashed.discard(idx)
        elif kind == "squash":
            idx = int(op[1])
            self.events[idx].squash()
            ref.squashed.add(idx)
        elif kind == "service":
            head = ref.head()
            if head is None:
                try:
                    q.service_one()
                except IndexError:
                    return
                raise AssertionError("service_one on an empty queue did not raise IndexError")
            assert q.service_one() is None
            when = ref.keys.pop(head)[0]
            if head in ref.squashed:
                ref.squashed.discard(head)
            else:
                ref.cur_tick = when
                ref.served.append((head, when))
        elif kind == "set_cur_tick":
            ref.cur_tick += int(op[1])
            q.set_cur_tick(ref.cur_tick)

    def _expect_error(self, call: Callable[[], None]) -> None:
        before = self.observe()
        try:
            call()
        except SchedulingError:
            assert self.observe() == before, "a refused call changed the queue"
            return
        raise AssertionError("an invalid call did not raise SchedulingError")

    def observe(self) -> tuple[object, ...]:
        q = self.q
        return (
            q.cur_tick,
            len(q),
            [e.name for e in q.pending()],
            [(e.scheduled, e.squashed, e.when if e.scheduled else None) for e in self.events],
        )

    def check(self) -> None:
        q, ref = self.q, self.ref
        assert self.served == ref.served
        assert q.cur_tick == ref.cur_tick
        assert len(q) == len(ref.keys) and q.empty() == (not ref.keys)
        for i, e in enumerate(self.events):
            assert e.scheduled == (i in ref.keys), e
            assert e.squashed == (i in ref.squashed), e
            if i in ref.keys:
                assert e.when == ref.keys[i][0]
        order = sorted(ref.keys, key=ref.keys.__getitem__)
        assert [e.name for e in q.pending()] == [f"e{i}" for i in order]
        head = ref.head()
        assert q.next_key() == (None if head is None else ref.keys[head][:2])
        assert q.check_invariants() == []


def run_ops(order: str, sequence: list[Op]) -> Harness:
    h = Harness(order)
    for op in sequence:
        h.apply(op)
        h.check()
    # Drain what is left: the whole served sequence must still agree.
    while h.ref.keys:
        h.apply(("service",))
        h.check()
    return h


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(ops, max_size=50))
def test_gem5_order_matches_reference(sequence: list[Op]) -> None:
    """In gem5 order, any sequence of schedule/reschedule/deschedule/squash/service/set_cur_tick behaves like a
    list sorted by (when, priority, -insertion), with gem5's squash and flag rules; invariants always hold."""
    run_ops("gem5", sequence)


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(ops, max_size=50))
def test_canonical_order_matches_reference(sequence: list[Op]) -> None:
    """In canonical order, the same operations behave like a list sorted by (when, priority, source key)."""
    run_ops("canonical", sequence)


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from((-1, 0, 50))), min_size=1, max_size=40))
def test_schedule_then_drain_is_sorted_lifo(batch: list[tuple[int, int]]) -> None:
    """Scheduling a batch and draining it serves (when, priority) ascending and, within a bin, last-in first-out."""
    q = EventQueue()
    served: list[int] = []
    for n, (when, prio) in enumerate(batch):
        q.schedule(Event(lambda n=n: served.append(n), priority=prio), when)
    q.run()
    expected = sorted(range(len(batch)), key=lambda n: (batch[n][0], batch[n][1], -n))
    assert served == expected
    assert q.empty() and q.cur_tick == max(w for w, _ in batch)


# -- the queue length under every primitive that moves entries in or out of the heap -----------------------
# The kernel keeps len() as len(heap) plus an offset that only the rare operations change (a stale entry made
# or dropped, an entry taken out of the heap or put back, a deferred batch committed): the hot paths touch no
# counter.  These sequences mix all of them, double schedules (checks=False) included, and compare len() with
# the live entries after each step.
batch_ops = st.one_of(
    st.tuples(st.just("schedule"), st.integers(0, N_EVENTS - 1), st.integers(-2, 8)),
    st.tuples(st.just("reschedule"), st.integers(0, N_EVENTS - 1), st.integers(-2, 8), st.booleans()),
    st.tuples(st.just("deschedule"), st.integers(0, N_EVENTS - 1)),
    st.tuples(st.just("squash"), st.integers(0, N_EVENTS - 1)),
    st.tuples(st.just("service")),
    st.tuples(st.just("pop_bin"), st.booleans()),
    st.tuples(st.just("pop_next")),
    st.tuples(
        st.just("defer"),
        st.lists(st.tuples(st.integers(0, 2), st.integers(0, N_EVENTS - 1), st.integers(0, 8)), max_size=6),
    ),
    st.tuples(st.just("serve_until"), st.integers(0, 12)),
)


def _live_entries(q: EventQueue) -> int:
    return len(q.pending())


def _stamp_all(events: list[Event], counter: list[int]) -> None:
    """A fresh canonical source key for every event: one per operation, as a component stamps one per send."""
    for e in events:
        counter[0] += 1
        e.source = counter[0]


def _apply_batch_op(q: Any, events: list[Event], op: Op, counter: list[int]) -> None:
    from tickpar.kernel.eventkeys import pack_key
    from tickpar.kernel.eventq import Deferred, EventNotFound

    kind = op[0]
    if kind == "schedule":
        q.schedule(events[op[1]], q.cur_tick + op[2])
    elif kind == "reschedule":
        q.reschedule(events[op[1]], q.cur_tick + op[2], op[3])
    elif kind == "deschedule":
        try:
            q.deschedule(events[op[1]])
        except EventNotFound:
            pass
    elif kind == "squash":
        events[op[1]].squash()
    elif kind == "service":
        if not q.empty():
            q.service_one()
    elif kind == "pop_next":
        if not q.empty():
            q.execute_popped(q.pop_next())
    elif kind == "serve_until":
        q.serve_until(pack_key(q.cur_tick + op[1], 0))
    elif kind == "pop_bin":
        entries = q.pop_bin()
        assert len(q) == _live_entries(q) + len(entries)  # taken out of the heap, still queued
        if op[1]:
            q.serve_bin(entries)
        else:
            q.put_back(entries)
    elif kind == "defer":
        d = Deferred(limit_key=-1)
        q.defer_to(d)
        try:
            for what, i, dt in op[1]:
                _stamp_all(events, counter)
                e = events[i]
                if what == 0:
                    q.schedule(e, q.cur_tick + dt)
                elif what == 1:
                    q.reschedule(e, q.cur_tick + dt, True)
                else:
                    try:
                        q.deschedule(e)
                    except EventNotFound:
                        pass
        finally:
            q.defer_to(None)
        q.commit(d.ops, d.size_delta)


@settings(max_examples=150, deadline=None, database=None)
@given(st.sampled_from(("gem5", "canonical")), st.lists(batch_ops, max_size=40))
def test_queue_length_agrees_with_live_entries_under_every_primitive(order: str, sequence: list[Op]) -> None:
    """len() and empty() equal the live heap entries after schedule (twice too), reschedule, deschedule,
    squash, service_one, pop_next, serve_until, pop_bin with put_back or serve_bin, and a deferred batch's
    commit, checks off; then the whole queue drains to len 0 with ``run``."""
    from tickpar.kernel.eventq import BatchQueue

    q = BatchQueue(order=order, checks=False)
    events = [Event(lambda: None, name=f"e{i}", priority=PRIORITIES[i]) for i in range(N_EVENTS)]
    counter = [0]
    for n, op in enumerate(sequence):
        _stamp_all(events, counter)
        _apply_batch_op(q, events, op, counter)
        assert len(q) == _live_entries(q), (n, op)
        assert q.empty() == (len(q) == 0)
    q.run()
    assert len(q) == 0 and q.empty() and _live_entries(q) == 0
