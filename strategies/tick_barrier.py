"""``tick-barrier``: run the head (when, priority) bin in parallel, grouped by lock key; barrier; repeat.

The main thread pops every event of the head bin -- one ``(when, priority)``
key ``K``, in queue order -- and groups them by lock key (``lock_key=component``,
the default, or ``name``).  Each group runs its events in queue order on one
worker; groups run in parallel on a persistent pool (``executor=threads``: the
main thread and ``workers - 1`` helper threads take groups from a shared
counter) or one after another on the main thread (``executor=inline``: the
same semantics, deterministic, for tests).  A barrier ends the batch before
time advances.  Bins with fewer than ``min_parallel`` events, or with a single
group, and every bin when ``workers == 1``, are served by the plain gem5 loop
(``service_one`` until the head is past ``K``): exact by construction, no
barrier to pay.

**Exact in both order modes.**  During a batch the queue does not change:

* ``cur_tick`` is the batch tick for every handler (the main thread does not
  pop until the barrier);
* every ``schedule``/``reschedule``/``deschedule`` a handler makes is applied
  *virtually*: the event's fields change at once, as the sequential run would
  change them (``scheduled``, ``when``, Squashed, gem5's assertions against
  ``cur_tick``), so check-then-act code (``if not ev.scheduled: schedule``)
  sees what it would see sequentially; the heap insertions are buffered per
  group, and after the barrier they are replayed into the real queue in the
  order the sequential run would have made them: by the sequential position
  of the event that made them, then call order.  Insertion numbers (gem5's
  LIFO ties) and canonical source keys therefore come out identical;
* events of the batch not yet run still look scheduled, so a handler may
  reschedule or deschedule one (it then does not run in this batch, as
  sequentially);
* a **zero-delay child**: an event scheduled during the batch at a key ``<=
  K`` (the running bin itself -- gem5's LIFO puts it next, gem5-eventq.md §2,
  cases 15 and 24 -- or an earlier priority of the same tick) runs before the
  rest of the bin in the sequential run.  If its component belongs to the
  scheduling group (or to no group yet: the group then claims it), the group
  runs it exactly where the sequential run would: each group keeps a local
  queue ordered by ``(key, tie)`` with gem5's or the canonical tie rule, and
  the replay order merges the groups' local orders as the sequential global
  queue would.

**Where exactness cannot hold, the run says so** (verdict ``race``, through
``model.note_race``, never a silent pass).  A component may be inside one
group only: groups claim the components of their events when the batch
starts, and the components they reach during it (direct calls, zero-delay
children, operations on another component's events).  A second group's claim
is a race:

* ``lock_key=name`` putting events of one component into two groups (gem5
  names do not identify components: a cache's ``cpuSidePort.sendEvent`` and
  ``memSidePort.recvTimingResp``);
* a direct call (``Component.call``, gem5's port calls) into a component
  another group owns in this batch;
* a zero-delay child into a component another group owns (it is put in the
  queue after the barrier and runs late).

Claims are made under a lock and depend only on which groups touch which
components in a batch, not on timing, so the verdict is the same with either
executor and on every run.  They make the model's per-event race guard
redundant (a group only runs events of components it owns), so the model is
built without it; ``model.worker_id`` returns the running group, which is
what ``Component.call`` compares with the peer's owner.

Threads only speed things up when handlers release the GIL (``--work
gil-release`` with ``work_us`` of ~30 µs or more); a batch costs a wake-up of
each helper it uses (~40-60 µs on 2 vCPUs), hence ``min_parallel``.
"""

from __future__ import annotations

import itertools
import threading
import time
from heapq import heappop, heappush
from typing import Any

from tickpar.eventq import Event, EventQueue, SchedulingError, Violation
from tickpar.model import Component, Model
from tickpar.oracle import collect
from tickpar.params import Param
from tickpar.plugins import DeadlockError, Promise, RunSpec, Strategy, StrategyResult, base_stats
from tickpar.simloop import schedule_limit

_PRIO_BITS = 8  # (when << 8) + priority + 128: the queue's packed heap key (eventq.py)
_PENDING = object()  # virtual tie of an event scheduled during a batch at a key after the batch's
_CHILD_GEM5 = -(1 << 62)  # gem5 ties of zero-delay children: newer than every real insertion
_CHILD_UNSOURCED = -(1 << 62) + (1 << 61)  # canonical, unsourced: after older unsourced, before sourced


class _Group:
    """One lock key's events of one batch, and everything they did."""

    __slots__ = (
        "children",
        "dsize",
        "error",
        "execs",
        "gid",
        "late_children",
        "local_children",
        "members",
        "nchild",
        "ops",
        "violations",
    )

    def __init__(self, gid: int) -> None:
        self.gid = gid
        self.members: list[tuple[int, Event, int]] = []  # (real tie, event, batch index) in queue order
        self.children: list[tuple[int, int, int, object, Event]] = []  # (key, tie, n, token, event)
        self.nchild = 0
        self.execs: list[tuple[int, int, int]] = []  # (key, tie, first op index) per event run
        self.ops: list[tuple[Event, int, int | None]] = []  # (event, when, source) per heap insertion
        self.violations: list[tuple[int, Violation]] = []  # (exec index, violation)
        self.dsize = 0
        self.error: BaseException | None = None
        self.local_children = 0
        self.late_children = 0


class _Ctx(threading.local):
    """The group the current thread is running (None outside a parallel batch)."""

    g: _Group | None = None
    gid: int = -1


class _BatchQueue(EventQueue):
    """The shared queue: outside a batch a plain gem5 queue; inside one, operations are virtual."""

    __slots__ = ("_ctx", "_kbatch", "_message_class", "_runner")

    def __init__(self, name: str, order: str, checks: bool) -> None:
        super().__init__(name, order=order, checks=checks)
        self._ctx = _Ctx()
        self._kbatch = -1
        self._runner: _Runner | None = None
        self._message_class: type | None = None

    # -- virtual operations ------------------------------------------------------------
    def _vfail(self, g: _Group, op: str, event: Event, when: int, reason: str) -> None:
        if self.checks:
            raise SchedulingError(op, event, when, self.cur_tick, reason)
        g.violations.append((len(g.execs) - 1, Violation(op, event._name, when, self.cur_tick, reason)))

    def _virtual_insert(self, g: _Group, event: Event, when: int) -> None:
        """Record the insertion for the replay; a key <= the batch's makes a zero-delay child."""
        runner = self._runner
        assert runner is not None
        if event.__class__ is not runner.message_class:
            runner.own(g, event)
        g.ops.append((event, when, event.source))
        key = (when << _PRIO_BITS) + event._pkey
        if key > self._kbatch:
            event._tie = _PENDING
        else:
            runner.child(g, event, key)

    def schedule(self, event: Event, when: int) -> None:
        g = self._ctx.g
        if g is None:
            EventQueue.schedule(self, event, when)
            return
        if when < self.cur_tick:
            self._vfail(g, "schedule", event, when, "past")
        old = event._tie
        if old is not None:
            self._vfail(g, "schedule", event, when, "already-scheduled")
        source = event.source
        if self._canonical and source is not None and (source == old or source == event._stale):
            raise ValueError(f"{event._name}: canonical source key reused on reinsertion")
        if old is None:
            g.dsize += 1
        event._when = when
        # _virtual_insert, inlined for the common case: a message for a later tick.
        if event.__class__ is self._message_class and (when << _PRIO_BITS) + event._pkey > self._kbatch:
            g.ops.append((event, when, source))
            event._tie = _PENDING
        else:
            self._virtual_insert(g, event, when)

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        g = self._ctx.g
        if g is None:
            EventQueue.reschedule(self, event, when, always)
            return
        if when < self.cur_tick:
            self._vfail(g, "reschedule", event, when, "past")
        old = event._tie
        if old is None and not always:
            self._vfail(g, "reschedule", event, when, "not-scheduled")
        source = event.source
        if self._canonical and source is not None and (source == old or source == event._stale):
            raise ValueError(f"{event._name}: canonical source key reused on reinsertion")
        if old is None:
            g.dsize += 1
        event._squashed = False
        event._when = when
        self._virtual_insert(g, event, when)

    def deschedule(self, event: Event) -> None:
        g = self._ctx.g
        if g is None:
            EventQueue.deschedule(self, event)
            return
        old = event._tie
        if old is None:
            self._vfail(g, "deschedule", event, event._when, "not-scheduled")
            return
        runner = self._runner
        assert runner is not None
        if event.__class__ is not runner.message_class:
            runner.own(g, event)
        event._stale = old if type(old) is int else event.source
        event._tie = None
        event._squashed = False
        g.dsize -= 1
        if event._managed:
            event.release()


class _Pool:
    """``helpers`` persistent threads; with the main thread they take groups from a shared counter."""

    def __init__(self, helpers: int, runner: _Runner) -> None:
        self.runner = runner
        self.groups: list[_Group] = []
        self.take = itertools.count().__next__
        self.closing = False
        self.error: BaseException | None = None
        self.start = [threading.Event() for _ in range(helpers)]
        self.done = [threading.Event() for _ in range(helpers)]
        self.idle_s = [0.0] * (helpers + 1)
        self.threads = [
            threading.Thread(target=self._helper, args=(i,), name=f"tick-barrier-{i + 1}", daemon=True)
            for i in range(helpers)
        ]
        for t in self.threads:
            t.start()

    def _work(self) -> None:
        groups, take, run_group = self.groups, self.take, self.runner.run_group
        n = len(groups)
        while True:
            i = take()
            if i >= n:
                return
            run_group(groups[i])

    def _helper(self, i: int) -> None:
        start, done = self.start[i], self.done[i]
        idle = 0.0
        while True:
            t0 = time.perf_counter()
            start.wait()
            idle += time.perf_counter() - t0
            start.clear()
            if self.closing:
                self.idle_s[i + 1] = idle
                return
            try:
                self._work()
            except BaseException as exc:  # a bug outside run_group: hand it to the main thread
                self.error = exc
            finally:
                done.set()
            self.idle_s[i + 1] = idle

    def run(self, groups: list[_Group]) -> None:
        """Run ``groups`` on the main thread and as many helpers as there are groups beyond one."""
        self.groups = groups
        self.take = itertools.count().__next__
        woken = min(len(self.start), len(groups) - 1)
        for i in range(woken):
            self.start[i].set()
        self._work()
        t0 = time.perf_counter()
        for i in range(woken):
            while not self.done[i].wait(1.0):
                if not self.threads[i].is_alive():
                    raise DeadlockError(f"tick-barrier: helper thread {i + 1} died during a batch")
            self.done[i].clear()
        self.idle_s[0] += time.perf_counter() - t0
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self.closing = True
        for ev in self.start:
            ev.set()
        for t in self.threads:
            t.join(5.0)


class _Runner:
    """The batch loop: pop a bin, group it, run the groups, barrier, replay, repeat."""

    def __init__(self, model: Model, queue: _BatchQueue, workers: int, options: dict[str, Any]) -> None:
        self.model = model
        self.queue = queue
        self.workers = workers
        self.by_name = options.get("lock_key", "component") == "name"
        self.inline = options.get("executor", "threads") == "inline"
        self.min_parallel = max(2, options.get("min_parallel", 2))
        self.message_class = model.message_class
        self.canonical = queue.order == "canonical"
        self.claim_lock = threading.Lock()
        self.claimed: list[Component] = []
        self.execute = queue.execute_popped
        self.ctx = queue._ctx
        self.pool: _Pool | None = None
        #: Per member of the running batch: (ops list, first, end) of the insertions it made.
        self.spans: list[tuple[list[Any], int, int] | None] = []
        self.stats = {
            "parallel_batches": 0,
            "serial_runs": 0,
            "parallel_events": 0,
            "groups": 0,
            "local_children": 0,
            "late_children": 0,
            "replayed_ops": 0,
            "claims": 0,
        }
        queue._runner = self
        queue._message_class = model.message_class
        ctx = self.ctx
        model.worker_id = lambda: ctx.gid
        for comp in model.components:
            comp.call = self._make_call(comp)  # type: ignore[method-assign]

    # -- claims (who may be inside which component during a batch) ------------------------
    def _claim(self, comp: Component, g: _Group) -> bool:
        with self.claim_lock:
            occupant = comp._occupant
            if occupant is None:
                comp._occupant = g.gid
                self.claimed.append(comp)
                self.stats["claims"] += 1
                return True
            return occupant == g.gid

    def own(self, g: _Group, event: Event) -> None:
        """``g`` operates on a long-lived event: it must own the event's component."""
        comp = getattr(event, "component", None)
        if comp is None or comp._occupant == g.gid or self._claim(comp, g):
            return
        self.model.note_race(
            comp, event, f"group {g.gid} operates on {event.name} while group {comp._occupant} owns {comp.name}"
        )

    def child(self, g: _Group, event: Event, key: int) -> None:
        """A zero-delay child (key <= the batch key): run it in ``g`` if ``g`` may own its component."""
        comp = getattr(event, "component", None)
        if comp is not None and comp._occupant != g.gid and not self._claim(comp, g):
            self.model.note_race(
                comp,
                event,
                f"zero-delay child {event.name} at ({event._when}, {event._priority}) of group {g.gid} into "
                f"{comp.name}, owned by group {comp._occupant}: the sequential run would process it before "
                "the rest of the batch",
            )
            g.late_children += 1
            event._tie = _PENDING
            return
        token = object()
        event._tie = token
        g.nchild += 1
        if not self.canonical:
            tie = _CHILD_GEM5 - g.nchild
        else:
            tie = event.source if event.source is not None else _CHILD_UNSOURCED + g.nchild
        heappush(g.children, (key, tie, g.nchild, token, event))
        g.local_children += 1

    def _make_call(self, comp: Component) -> Any:
        base = Component.call
        ctx = self.ctx

        def call(peer: Component, method: str, *args: Any) -> Any:
            g = ctx.g
            if g is not None and peer._occupant != g.gid:
                self._claim(peer, g)  # refused: Component.call reports the race
            return base(comp, peer, method, *args)

        return call

    # -- one group ---------------------------------------------------------------------
    def run_group(self, g: _Group) -> None:
        ctx = self.ctx
        ctx.g = g
        ctx.gid = g.gid
        kbatch = self.queue._kbatch
        children = g.children
        execs = g.execs
        ops = g.ops
        spans = self.spans
        execute = self.execute
        try:
            for tie0, ev, index in g.members:
                while children and (children[0][0] < kbatch or children[0][1] < tie0):
                    key, tie, _n, token, cev = heappop(children)
                    if cev._tie is token:
                        execs.append((key, tie, len(ops)))
                        cev._tie = None
                        g.dsize -= 1
                        execute(cev)
                if ev._tie is tie0:  # not rescheduled or descheduled by an earlier event
                    start = len(ops)
                    execs.append((kbatch, tie0, start))
                    ev._tie = None
                    g.dsize -= 1
                    # execute_popped, inlined (model events are never exit events)
                    if ev._squashed:
                        ev._squashed = False
                    else:
                        ev.process()
                    if ev._managed and ev._tie is None:
                        ev.release()
                    spans[index] = (ops, start, len(ops))
            while children:
                key, tie, _n, token, cev = heappop(children)
                if cev._tie is token:
                    execs.append((key, tie, len(ops)))
                    cev._tie = None
                    g.dsize -= 1
                    execute(cev)
        except BaseException as exc:  # reported after the barrier, earliest first
            g.error = exc
        finally:
            ctx.g = None
            ctx.gid = -1

    # -- the loop ------------------------------------------------------------------------
    def _serial(self, kbatch: int) -> bool:
        """The gem5 loop until the head is past ``kbatch``; True when an exit event ran."""
        queue = self.queue
        heap = queue._heap
        service_one = queue.service_one
        self.stats["serial_runs"] += 1
        while queue._size:
            head_key, tie, ev = heap[0]
            if ev._tie != tie:
                heappop(heap)
                continue
            if head_key > kbatch:
                return False
            if service_one() is not None:
                return True
        return False

    def run(self) -> None:
        queue = self.queue
        heap = queue._heap
        by_name = self.by_name
        if self.workers == 1:
            queue.run()  # nothing can run beside anything: gem5's loop, exact by construction
            return
        model_events = (self.model.event_class, self.model.message_class)
        pool = None if self.inline else _Pool(self.workers - 1, self)
        self.pool = pool
        try:
            while queue._size:
                head_key, tie, ev = heap[0]
                if ev._tie != tie:
                    heappop(heap)
                    continue
                if ev.__class__ not in model_events:
                    if self._serial(head_key):
                        return
                    continue
                # Pop the bin: every live entry with the head key, in queue order.
                members: list[tuple[int, Event]] = []
                plain = False
                while heap:
                    key, tie, ev = heap[0]
                    if ev._tie != tie:
                        heappop(heap)
                        continue
                    if key != head_key:
                        break
                    heappop(heap)
                    members.append((tie, ev))
                    if ev.__class__ not in model_events:
                        plain = True
                groups: dict[object, _Group] = {}
                if len(members) >= self.min_parallel and not plain:
                    for index, (tie, ev) in enumerate(members):
                        lk = ev._name if by_name else ev.component  # type: ignore[attr-defined]
                        g = groups.get(lk)
                        if g is None:
                            g = groups[lk] = _Group(len(groups))
                        g.members.append((tie, ev, index))
                if len(groups) < 2:
                    for tie, ev in members:  # put the bin back as it was: same entries, same ties
                        heappush(heap, (head_key, tie, ev))
                    if self._serial(head_key):
                        return
                    continue
                self.spans = [None] * len(members)
                self._batch(head_key, list(groups.values()))
        finally:
            if pool is not None:
                pool.close()

    def _batch(self, kbatch: int, groups: list[_Group]) -> None:
        queue = self.queue
        queue.cur_tick = kbatch >> _PRIO_BITS
        queue._kbatch = kbatch
        stats = self.stats
        stats["parallel_batches"] += 1
        stats["groups"] += len(groups)
        # Claims: each group owns the components of its events; a second group on one is a race.
        claimed = self.claimed
        for g in groups:
            gid = g.gid
            for _tie, ev, _index in g.members:
                comp = ev.component  # type: ignore[attr-defined]
                occupant = comp._occupant
                if occupant is None:
                    comp._occupant = gid
                    claimed.append(comp)
                elif occupant != gid:
                    self.model.note_race(
                        comp,
                        ev,
                        f"lock key splits {comp.name}: {ev.name} in group {gid}, other events in group {occupant}"
                        f" of the same batch ({kbatch >> _PRIO_BITS}, {(kbatch & 0xFF) - 128})",
                    )
        try:
            if self.pool is None:
                for g in groups:
                    self.run_group(g)
            else:
                self.pool.run(groups)
        finally:
            for comp in claimed:
                comp._occupant = None
            claimed.clear()
            queue._kbatch = -1
        self._replay(groups)

    def _replay(self, groups: list[_Group]) -> None:
        """After the barrier: heap insertions, violations and the first error, in sequential order."""
        queue = self.queue
        stats = self.stats
        heap = queue._heap
        next_tie = queue._next_tie
        canonical = self.canonical
        if not any(g.nchild or g.error is not None or g.violations for g in groups):
            # Fast path: only the bin's own events ran, so the sequential order is the bin's order.
            replayed = 0
            for span in self.spans:
                if span is None:
                    continue
                ops, first, end = span
                replayed += end - first
                for i in range(first, end):
                    ev, when, source = ops[i]
                    if canonical:
                        saved = ev.source
                        ev.source = source
                        tie = next_tie(ev)
                        ev.source = saved
                    else:
                        tie = next_tie(ev)
                    if ev._tie is not None:
                        ev._tie = tie
                    heappush(heap, ((when << _PRIO_BITS) + ev._pkey, tie, ev))
            stats["replayed_ops"] += replayed
            stats["parallel_events"] += sum(len(g.execs) for g in groups)
            queue._size += sum(g.dsize for g in groups)
            return
        plain: list[list[tuple[int, int, int, int, int]]] = []
        for g in groups:
            execs = g.execs
            ops_end = len(g.ops)
            entries = []
            for j, (key, tie, start) in enumerate(execs):
                end = execs[j + 1][2] if j + 1 < len(execs) else ops_end
                entries.append((key, tie, g.gid, j, start, end))
            plain.append(entries)  # type: ignore[arg-type]
            stats["local_children"] += g.local_children
            stats["late_children"] += g.late_children
        errors = {g.gid: g for g in groups if g.error is not None}
        vpos = {g.gid: 0 for g in groups}
        events = 0
        # The sequential order: the global queue would always serve the smallest (key, tie) head.
        order = plain[0] if len(plain) == 1 else _merge(plain)
        for _key, _tie, gid, j, start, end in order:
            g = groups[gid]
            events += 1
            if gid in errors and j == len(g.execs) - 1:
                raise g.error  # type: ignore[misc]
            ops = g.ops
            for i in range(start, end):
                ev, when, source = ops[i]
                if canonical:
                    saved = ev.source
                    ev.source = source
                    tie = next_tie(ev)
                    ev.source = saved
                else:
                    tie = next_tie(ev)
                if ev._tie is not None:  # scheduled at the end of the batch: this insertion may be the live one
                    ev._tie = tie
                heappush(heap, ((when << _PRIO_BITS) + ev._pkey, tie, ev))
            stats["replayed_ops"] += end - start
            viols = g.violations
            k = vpos[gid]
            while k < len(viols) and viols[k][0] == j:
                queue.violations.append(viols[k][1])
                k += 1
            vpos[gid] = k
        for g in errors.values():  # failed before running any event
            raise g.error  # type: ignore[misc]
        queue._size += sum(g.dsize for g in groups)
        stats["parallel_events"] += events


def _merge(lists: list[list[tuple[int, int, int, int, int]]]) -> list[tuple[int, int, int, int, int]]:
    """Merge the groups' run orders as the sequential queue would: always the smallest (key, tie) head."""
    import heapq

    return list(heapq.merge(*lists))


class TickBarrier(Strategy):
    name = "tick-barrier"
    summary = "the head (when, priority) bin in parallel, one group per component, barrier before time advances"
    options = {
        "lock_key": Param(
            str,
            "component",
            "group a bin's events by component (exact) or by event name",
            choices=("component", "name"),
        ),
        "executor": Param(
            str,
            "threads",
            "a persistent thread pool, or the groups one after another on the main thread (same semantics)",
            choices=("threads", "inline"),
        ),
        "min_parallel": Param(
            int, 2, "bins with fewer events run on the plain gem5 loop, no barrier", min=2, max=10**6
        ),
        "checks": Param(bool, True, "keep gem5's schedule/reschedule assertions (false: count violations)"),
    }

    def expected_verdict(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> str | None:
        return self.promise(spec, workers, options).verdict

    def promise(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> Promise:
        """From the contract and the workload's traits (module docstring: "Where exactness cannot hold")."""
        if spec.order not in self.orders:
            return Promise(None, (), f"order {spec.order} is not one tick-barrier guarantees")
        if workers == 1:
            return Promise("exact", (), "one worker: every bin runs on the plain gem5 loop")
        traits = spec.traits()
        if "zero_latency_links" in traits:
            return Promise(
                None, ("zero_latency_links",), "zero-delay children are exact only while they stay in one group"
            )
        if options.get("lock_key", "component") == "name" and "several_named_events" in traits:
            basis = ("several_named_events", "long_run")
            if "long_run" in traits:
                return Promise(
                    "race", basis, "name groups split a component whose events of two names share a bin: two claims"
                )
            return Promise(None, ("several_named_events",), "name groups can split a component (short run)")
        if "direct_calls" in traits:
            basis = ("direct_calls", "many_events_per_tick", "long_run")
            if set(basis) <= traits:
                return Promise("race", basis, "a direct call enters a component another group owns in the batch")
            return Promise(None, ("direct_calls",), "a direct call may enter another group's component")
        return Promise("exact", (), "component groups, no direct calls: every batch is replayed in sequential order")

    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        # No race guard on events: the claims below see every component two groups reach, whatever the timing.
        model = spec.build_model()
        queue = _BatchQueue("main", spec.order, options.get("checks", True))
        model.bind(queue)
        runner = _Runner(model, queue, workers, options)
        model.start()
        schedule_limit(queue, model.end_tick)
        started = time.perf_counter()
        runner.run()
        elapsed = time.perf_counter() - started
        record = collect(model, violations=queue.violations)
        st = runner.stats
        stats = base_stats(workers)
        # One worker: gem5's loop, one event per batch, as sequential reports it.
        batches = st["parallel_batches"] + st["serial_runs"] if workers > 1 else record.events
        pool = runner.pool
        stats.update(
            events=record.events,
            batches=batches,
            mean_events_per_batch=record.events / batches if batches else 0.0,
            idle_s=list(pool.idle_s) if pool is not None else [0.0] * workers,
            loop_s=elapsed,
            executor="inline" if runner.inline or workers == 1 else "threads",
            mean_groups_per_parallel_batch=st["groups"] / st["parallel_batches"] if st["parallel_batches"] else 0.0,
            parallel_fraction=st["parallel_events"] / record.events if record.events else 0.0,
            violations=len(queue.violations),
            races=len(model.races),
            **st,
        )
        return StrategyResult(record, stats)


def _name_keys_split_components(model: Model) -> bool:
    """True when some component's events carry several names (so name groups may split it)."""
    names: dict[int, set[str]] = {}
    for comp in model.components:
        names.setdefault(comp.id, set()).update(comp.events)
    for link in model.links:
        names.setdefault(link.dst.id, set()).add(link.event_name)
    return any(len(v) > 1 for v in names.values())
