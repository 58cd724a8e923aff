"""``tick-barrier``: run the head (when, priority) bin in parallel, grouped by lock key; barrier; repeat.

Sync: a barrier per batch.  The main thread takes the head bin -- every
event of one ``(when, priority)`` key ``K``, in queue order
(:meth:`~tickpar.kernel.eventq.EventQueue.pop_bin`) -- and groups it by lock key
(``lock_key=component``, the default, or ``name``).  Each group runs its
events in queue order on one worker; groups run in parallel on a persistent
pool (``executor=threads``: the main thread and ``workers - 1`` helper
threads take groups from a shared counter) or one after another on the main
thread (``executor=inline``: the same semantics, deterministic, for tests).
The batch ends at a barrier before time advances.  Bins with fewer than
``min_parallel`` events, or with a single group, and every bin when
``workers == 1``, are served by the plain gem5 loop
(:meth:`~tickpar.kernel.eventq.EventQueue.serve_bin`, then
:meth:`~tickpar.kernel.eventq.EventQueue.serve_until` ``K``): exact by
construction, no barrier to pay.

Lookahead: none needed: only events of one ``(when, priority)`` key run
together, and nothing they schedule reaches the real queue before the
barrier.  Zero-delay children (below) are handled inside the batch.

Ownership: a component is inside one group per batch.  Groups claim
(:meth:`~tickpar.kernel.model.Component.claim`) the components of their events when
the batch starts, and the components they reach during it: direct calls
(through the model's :attr:`~tickpar.kernel.model.Model.call_guard`), zero-delay
children, operations on another component's events.  A second group's claim
is a race (verdict ``race``, through ``model.note_race``, never a silent
pass):

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
built without it.

Determinism: exact in both order modes, on every run.  During a batch the
queue does not change; the kernel's deferred mode
(:class:`~tickpar.kernel.eventq.BatchQueue`) does the rest:

* ``cur_tick`` is the batch tick for every handler (the main thread does not
  pop until the barrier);
* every ``schedule``/``reschedule``/``deschedule`` a handler makes is
  deferred: the kernel checks gem5's assertions against ``cur_tick`` and
  changes the event's fields at once, as the sequential run would
  (``scheduled``, ``when``, Squashed), so check-then-act code (``if not
  ev.scheduled: schedule``) sees what it would see sequentially; the
  insertions are logged per group and, after the barrier, committed
  (:meth:`~tickpar.kernel.eventq.EventQueue.commit`) in the order the sequential run
  would have made them: by the sequential position of the event that made
  them, then call order.  Insertion numbers (gem5's LIFO ties) and canonical
  source keys therefore come out identical;
* events of the batch not yet run still look scheduled, so a handler may
  reschedule or deschedule one (it then does not run in this batch, as
  sequentially);
* a **zero-delay child**: an event scheduled during the batch at a key ``<=
  K`` (the running bin itself -- gem5's LIFO puts it next, docs/explanation/gem5-eventq.md
  §2, §7 cases 15 and 24 -- or an earlier priority of the same tick) runs before the
  rest of the bin in the sequential run.  If its component belongs to the
  scheduling group (or to no group yet: the group then claims it), the group
  runs it exactly where the sequential run would: each group keeps a local
  queue ordered by ``(key, tie)`` with gem5's or the canonical tie rule
  (:func:`~tickpar.kernel.eventkeys.child_tie`), and the commit order merges the
  groups' local orders as the sequential global queue would.

Where exactness cannot hold, the run says so: the races above.  A run whose claims saw a race and whose model then
failed (on real parallel threads two groups in one component can corrupt its lists) is verdict
``race`` too, the failure kept in the ``failed_after_race`` statistic.

Promise: see :meth:`TickBarrier.promise`: ``exact`` with one worker and
wherever no component can be reached by two groups (no zero-latency links,
no direct calls, and component groups or one event name per component);
elsewhere ``exact`` or ``race`` (and ``causality`` with stored ticks or
re-queued events: a race leaves a state no sequential run has, and an
assertion that then fails outranks it): whether two groups meet in a bin
depends on which events share bins, which no trait says.

Threads only speed things up when handlers release the GIL (``--work
gil-release`` with ``work_us`` well above a thread's wake-up); a batch costs a wake-up of
each helper it uses, hence ``min_parallel`` (docs/measurements/2026-12-02-small-costs.md).
``debug_invariants=true`` checks the queue's invariants after every commit.
"""

from __future__ import annotations

import itertools
import threading
import time
from heapq import heappop, heappush, merge
from typing import Any

from tickpar.host.affinity import pinned, worker_cpus
from tickpar.host.doorbell import Doorbell, spin_budget
from tickpar.kernel.eventkeys import child_tie, key_priority, key_when
from tickpar.kernel.eventq import BatchQueue, Deferred, Entry, Event, Op, op_key
from tickpar.kernel.model import Component, Model
from tickpar.kernel.params import Param
from tickpar.kernel.simloop import start_single_queue
from tickpar.plugins import DeadlockError, Promise, RunSpec, Strategy, StrategyResult, base_stats
from tickpar.verify.oracle import collect


class _Group(Deferred):
    """One lock key's events of one batch, and everything they did: the kernel's :class:`Deferred` for it."""

    __slots__ = ("children", "error", "gid", "late_children", "local_children", "members", "nchild", "runner")

    def __init__(self, gid: int, runner: _Runner, kbatch: int) -> None:
        super().__init__(kbatch, runner.message_class)  # no bound method or owner kept: no reference cycle
        self.gid = gid
        self.runner = runner
        self.members: list[tuple[Entry, int]] = []  # (entry, batch index) in queue order
        self.children: list[tuple[int, int, int, Op]] = []  # (key, tie, n, op): zero-delay children to run here
        self.nchild = 0
        self.error: BaseException | None = None
        self.local_children = 0
        self.late_children = 0

    def on_op(self, event: Event, op: Op | None) -> None:
        """The kernel's hook: a deschedule, a long-lived event's insertion, or a zero-delay child."""
        runner = self.runner
        if op is None or event.__class__ is not runner.message_class:
            runner.own(self, event)
        if op is not None and op_key(op) <= self.limit_key:
            runner.child(self, op)


class _Pool:
    """``helpers`` persistent threads; with the main thread they take groups from a shared counter."""

    def __init__(self, helpers: int, runner: _Runner, cpus: list[int] | None = None) -> None:
        self.runner = runner
        self.cpus = cpus  # helper i on cpus[i + 1]; the main thread on cpus[0] (tickpar.host.affinity)
        self.groups: list[_Group] = []
        self.take = itertools.count().__next__
        self.closing = False
        self.error: BaseException | None = None
        # Doorbells, not threading.Event: with the GIL off and a core per worker the waiter spins briefly
        # instead of sleeping through a futex wake-up at each of the batch's two hand-offs (tickpar.host.doorbell).
        spin = spin_budget(cpus is not None)
        self.start = [Doorbell(spin) for _ in range(helpers)]
        self.done = [Doorbell(spin) for _ in range(helpers)]
        self.done_seen = [0] * helpers
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
        with pinned(self.cpus, i + 1):
            self._serve(i)

    def _serve(self, i: int) -> None:
        start, done = self.start[i], self.done[i]
        idle = 0.0
        seen = 0
        while True:
            t0 = time.perf_counter()
            seen = start.wait_past(seen)  # type: ignore[assignment]  # no timeout: never None
            idle += time.perf_counter() - t0
            if self.closing:
                self.idle_s[i + 1] = idle
                return
            try:
                self._work()
            except BaseException as exc:  # a bug outside run_group: hand it to the main thread
                self.error = exc
            finally:
                done.ring()
            self.idle_s[i + 1] = idle

    def run(self, groups: list[_Group]) -> None:
        """Run ``groups`` on the main thread and as many helpers as there are groups beyond one."""
        self.groups = groups
        self.take = itertools.count().__next__
        woken = min(len(self.start), len(groups) - 1)
        for i in range(woken):
            self.start[i].ring()
        self._work()
        t0 = time.perf_counter()
        for i in range(woken):
            while (count := self.done[i].wait_past(self.done_seen[i], 1.0)) is None:
                if not self.threads[i].is_alive():
                    raise DeadlockError(f"tick-barrier: helper thread {i + 1} died during a batch")
            self.done_seen[i] = count
        self.idle_s[0] += time.perf_counter() - t0
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self.closing = True
        for bell in self.start:
            bell.ring()
        for t in self.threads:
            t.join(5.0)


class _Runner:
    """The batch loop: pop a bin, group it, run the groups, barrier, commit, repeat."""

    def __init__(self, model: Model, queue: BatchQueue, workers: int, options: dict[str, Any]) -> None:
        self.model = model
        self.queue = queue
        self.workers = workers
        self.by_name = options.get("lock_key", "component") == "name"
        self.inline = options.get("executor", "threads") == "inline"
        self.min_parallel = max(2, options.get("min_parallel", 2))
        self.message_class = model.message_class
        self.model_events = (model.event_class, model.message_class)
        self.canonical = queue.order == "canonical"
        self.claim_lock = threading.Lock()
        self.claimed: list[Component] = []
        self.pool: _Pool | None = None
        #: Per member of the running batch: (ops list, first, end) of the insertions it made.
        self.spans: list[tuple[list[Op], int, int] | None] = []
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
        model.call_guard = self.guard_call

    # -- claims (who may be inside which component during a batch) ------------------------
    def _claim(self, comp: Component, g: _Group) -> bool:
        with self.claim_lock:
            occupant = comp.claim(g.gid)
            if occupant is None:
                self.claimed.append(comp)
                self.stats["claims"] += 1
                return True
            return occupant == g.gid

    def own(self, g: _Group, event: Event) -> None:
        """``g`` operates on a long-lived event: it must own the event's component."""
        comp = getattr(event, "component", None)
        if comp is None or comp.occupant == g.gid or self._claim(comp, g):
            return
        self.model.note_race(
            comp, event, f"group {g.gid} operates on {event.name} while group {comp.occupant} owns {comp.name}"
        )

    def child(self, g: _Group, op: Op) -> None:
        """A zero-delay child (key <= the batch key): run it in ``g`` if ``g`` may own its component."""
        event, when, source = op
        comp = getattr(event, "component", None)
        if comp is not None and comp.occupant != g.gid and not self._claim(comp, g):
            self.model.note_race(
                comp,
                event,
                f"zero-delay child {event.name} at ({when}, {event.priority}) of group {g.gid} into "
                f"{comp.name}, owned by group {comp.occupant}: the sequential run would process it before "
                "the rest of the batch",
            )
            g.late_children += 1
            return  # its insertion stays deferred: committed after the barrier
        g.nchild += 1
        heappush(g.children, (op_key(op), child_tie(self.canonical, source, g.nchild), g.nchild, op))
        g.local_children += 1

    def guard_call(self, caller: Component, peer: Component, method: str) -> None:
        """The model's call guard: a direct call during a batch claims the peer for the calling group."""
        d = self.queue.deferring()
        if d is None:
            return  # outside a batch: one thread
        g: _Group = d  # type: ignore[assignment]  # the group is its own Deferred
        if peer.occupant == g.gid or self._claim(peer, g):
            return
        self.model.note_race(
            peer,
            None,
            f"direct call from {caller.name} to {peer.name}.{method}: group {g.gid} entered while group "
            f"{peer.occupant} inside",
        )

    # -- one group ---------------------------------------------------------------------
    def run_group(self, g: _Group) -> None:
        queue = self.queue
        d = g
        queue.defer_to(d)
        kbatch = d.limit_key
        children = g.children
        ops = d.ops
        spans = self.spans
        run_entry, run_op = queue.run_entry, queue.run_op
        try:
            for entry, index in g.members:
                tie0 = entry[1]
                while children and (children[0][0] < kbatch or children[0][1] < tie0):
                    key, tie, _n, op = heappop(children)
                    run_op(d, op, key, tie)  # skipped when no longer live
                start = len(ops)
                if run_entry(d, entry):  # False: an earlier event rescheduled or descheduled it
                    spans[index] = (ops, start, len(ops))
            while children:
                key, tie, _n, op = heappop(children)
                run_op(d, op, key, tie)
        except BaseException as exc:  # reported after the barrier, in sequential order
            g.error = exc
        finally:
            queue.defer_to(None)

    # -- the loop ------------------------------------------------------------------------
    def run(self) -> None:
        queue = self.queue
        if self.workers == 1:
            queue.run()  # nothing can run beside anything: gem5's loop, exact by construction
            return
        cpus = None if self.inline else worker_cpus(self.workers)
        with pinned(cpus, 0):
            self._run_batches(cpus)

    def _run_batches(self, cpus: list[int] | None) -> None:
        queue = self.queue
        model_events = self.model_events
        pool = None if self.inline else _Pool(self.workers - 1, self, cpus)
        self.pool = pool
        try:
            while True:
                head = queue.head()
                if head is None:
                    return
                kbatch = head[0]
                groups: list[_Group] = []
                members: list[Entry] = []
                if head[2].__class__ in model_events:
                    members = queue.pop_bin()
                    if len(members) >= self.min_parallel:
                        groups = self._group(members, kbatch)
                if len(groups) < 2:
                    self.stats["serial_runs"] += 1
                    # The gem5 loop: the popped bin (if any), then whatever else is due up to its key.
                    if (members and queue.serve_bin(members) is not None) or queue.serve_until(kbatch) is not None:
                        return
                    continue
                self.spans = [None] * len(members)
                self._batch(kbatch, groups)
        finally:
            if pool is not None:
                pool.close()

    def _group(self, members: list[Entry], kbatch: int) -> list[_Group]:
        """The bin's groups by lock key, in order of first member; none when a plain event is in the bin.

        A method of its own (not inlined in :meth:`run`): CPython 3.11 specialises a
        code object only after it was entered a few times, and ``run`` is entered once.
        """
        model_events = self.model_events
        by_name = self.by_name
        groups: dict[object, _Group] = {}
        for index, entry in enumerate(members):
            ev = entry[2]
            if ev.__class__ not in model_events:
                return []  # an exit or plain event in the bin: the gem5 loop serves it
            lk = ev.name if by_name else ev.component  # type: ignore[attr-defined]
            g = groups.get(lk)
            if g is None:
                g = groups[lk] = _Group(len(groups), self, kbatch)
            g.members.append((entry, index))
        return list(groups.values())

    def _batch(self, kbatch: int, groups: list[_Group]) -> None:
        queue = self.queue
        queue.cur_tick = key_when(kbatch)
        stats = self.stats
        stats["parallel_batches"] += 1
        stats["groups"] += len(groups)
        # Claims: each group owns the components of its events; a second group on one is a race.
        claimed = self.claimed
        for g in groups:
            gid = g.gid
            last = None
            for entry, _index in g.members:
                comp = entry[2].component  # type: ignore[attr-defined]
                if comp is last:
                    continue  # lock_key=component: one claim per group
                last = comp
                occupant = comp.claim(gid)
                if occupant is None:
                    claimed.append(comp)
                elif occupant != gid:
                    self.model.note_race(
                        comp,
                        entry[2],
                        f"lock key splits {comp.name}: {entry[2].name} in group {gid}, other events in group "
                        f"{occupant} of the same batch ({key_when(kbatch)}, {key_priority(kbatch)})",
                    )
        try:
            if self.pool is None:
                for g in groups:
                    self.run_group(g)
            else:
                self.pool.run(groups)
        finally:
            for comp in claimed:
                comp.release()
            claimed.clear()
        self._commit(groups)

    def _commit(self, groups: list[_Group]) -> None:
        """After the barrier: insertions, violations and the first error, in sequential order."""
        queue = self.queue
        stats = self.stats
        size_delta = 0
        execs = 0
        simple = True
        for g in groups:
            d = g
            size_delta += d.size_delta
            execs += len(d.execs)
            if g.nchild or g.error is not None or d.violations:
                simple = False
        if simple:
            # Fast path: only the bin's own events ran, so the sequential order is the bin's order.
            ordered: list[Op] = []
            for span in self.spans:
                if span is not None:
                    ops, first, end = span
                    if end - first == 1:
                        ordered.append(ops[first])
                    elif end > first:
                        ordered += ops[first:end]
            queue.commit(ordered, size_delta)
            stats["replayed_ops"] += len(ordered)
            stats["parallel_events"] += execs
            return
        runs: list[list[tuple[Any, Any, int, int, int, int]]] = []
        for g in groups:
            execs = g.execs
            ops_end = len(g.ops)
            runs.append(
                [
                    (key, tie, g.gid, j, start, execs[j + 1][2] if j + 1 < len(execs) else ops_end)
                    for j, (key, tie, start) in enumerate(execs)
                ]
            )
            stats["local_children"] += g.local_children
            stats["late_children"] += g.late_children
        # The sequential order: the global queue would always serve the smallest (key, tie) head.
        order = runs[0] if len(runs) == 1 else list(merge(*runs))
        ordered = []
        vpos = [0] * len(groups)
        failed: _Group | None = None
        for _key, _tie, gid, j, start, end in order:
            g = groups[gid]
            if g.error is not None and j == len(g.execs) - 1:
                failed = g  # the sequential run stops inside this event
                break
            ordered += g.ops[start:end]
            viols = g.violations
            k = vpos[gid]
            while k < len(viols) and viols[k][0] == j:
                queue.violations.append(viols[k][1])
                k += 1
            vpos[gid] = k
        if failed is None:
            failed = next((g for g in groups if g.error is not None), None)  # failed before running any event
        if failed is not None:
            raise failed.error  # type: ignore[misc]
        queue.commit(ordered, size_delta)
        stats["replayed_ops"] += len(ordered)
        stats["parallel_events"] += len(order)


class TickBarrier(Strategy):
    name = "tick-barrier"
    summary = "the head (when, priority) bin in parallel, one group per component, barrier before time advances"
    engines = ("python", "native")  # the native engine has it built in (native/src)
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
        "debug_invariants": Param(bool, False, "check the queue's invariants after every commit (slow)"),
    }

    def promise(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> Promise:
        """From the contract and the workload's traits (module docstring: "Where exactness cannot hold").

        Whether two groups ever reach one component depends on which events share a bin, which no
        trait says: where one can, the promise is ``exact`` or ``race``, never a silent divergence.
        """
        if spec.order not in self.orders:
            return Promise(None, (), f"order {spec.order} is not one tick-barrier guarantees")
        if workers == 1:
            return Promise("exact", (), "one worker: every bin runs on the plain gem5 loop")
        traits = spec.traits()
        basis: list[str] = []
        why: list[str] = []
        if "zero_latency_links" in traits:
            basis.append("zero_latency_links")
            why.append("a zero-delay child into a component another group owns runs late (race)")
        if "direct_calls" in traits:
            basis.append("direct_calls")
            why.append("a direct call may enter a component another group owns in the batch (race)")
        if options.get("lock_key", "component") == "name" and "several_named_events" in traits:
            basis.append("several_named_events")
            why.append("name groups split a component whose events of two names share a bin (race)")
        if not basis:
            return Promise(
                "exact", (), "component groups, no direct calls: every batch is replayed in sequential order"
            )
        verdicts = {"exact", "race"}
        requeue = [t for t in ("stored_ticks", "several_named_events", "direct_calls") if t in traits]
        if requeue:
            verdicts.add("causality")
            basis += requeue
            why.append(
                "after a race, a stored tick or an event two groups queue may fail an assertion, which outranks it"
                " (causality)"
            )
        why.append("exact where no bin lets two groups reach one component")
        return Promise(verdicts, tuple(dict.fromkeys(basis)), "; ".join(why))

    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        # No race guard on events: the claims see every component two groups reach, whatever the timing.
        model, queue = start_single_queue(
            spec,
            BatchQueue,
            checks=options.get("checks", True),
            debug_invariants=options.get("debug_invariants", False),
        )
        runner = _Runner(model, queue, workers, options)
        started = time.perf_counter()
        after_race = None
        try:
            runner.run()
        except Exception as exc:
            if not model.races or isinstance(exc, DeadlockError):
                raise
            # The claims saw two groups inside one component, and the model then failed (a crash, or a
            # gem5 assertion such as a double schedule): on real parallel threads (the free-threaded
            # build) two groups in one component can corrupt its lists and events.  The race is the
            # cause and the verdict; what followed is kept as a statistic.
            after_race = f"{type(exc).__name__}: {exc}"
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
        if after_race is not None:
            stats["failed_after_race"] = after_race
        return StrategyResult(record, stats)
