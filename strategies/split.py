"""``split``: the research prototype's ``popNextEvent()`` / ``executePoppedEvent()`` loop, faithfully.

Sync: none beyond the prototype's locks.  N workers share one
:class:`~tickpar.kernel.eventq.EventQueue`; each loops (1) **pop**: under the global
queue lock, ``queue.pop_next(advance=True)`` takes the head, clears its
Scheduled flag and sets ``cur_tick`` to its ``when`` -- even for a squashed
event, as the prototype's ``popNextEvent`` does and gem5's ``serviceOne``
does not -- then releases the queue lock; (2) **lock**: takes the mutex keyed
by the event (``lock_key=name``: the event's name, the prototype;
``lock_key=component``: the component that owns the event); (3) **execute**:
``queue.execute_popped(ev)`` runs ``process()``, whose schedules go into the
shared queue (atomic operations: the ``threads`` executor guards them with the
queue lock, as gem5 expects ``schedule`` under ``service_mutex``); (4)
**release** the mutex.  A worker that executes the exit event (the
``simulate()`` limit) stops every worker; with no limit the run ends when the
queue is empty and no worker holds an event.

Lookahead: none.  Any worker pops the head whatever its tick, so ``cur_tick``
(the queue's, not the event's) moves while other workers' handlers run.

Ownership: a mutex per event name or per component, taken after the pop and
held while the handler runs; direct calls (``Component.call``) enter a peer
without its mutex.  Nothing owns time.

Determinism: ``executor=interleave`` (default) runs the workers' steps on one
thread in an order drawn from ``interleave_seed``: the same cell gives the
same verdict, failing event and anatomy on every run.  ``executor=threads``
runs real threads: its verdict depends on the machine and the run.

Promise: ``exact`` with one worker and no pop-ahead (one worker strictly
alternating pop -> execute is ``serviceOne`` for the ``when >= curTick``
check).  With the interleave executor and assertions on, two or more workers
(or pop-ahead) promise the set of verdicts that can come first, from the
workload's traits (:meth:`Split.promise`): ``diverged`` always (a shifted or
reordered event, A and B below); ``causality`` with ``stored_ticks`` (A: a
stored tick behind a moved clock) or with ``several_named_events`` or
``direct_calls`` (D: another handler of the component queues a popped event
again, which then fails an assertion); ``race`` with two or more workers and
``direct_calls``, or ``several_named_events`` under ``lock_key=name`` (C);
``exact`` too unless ``long_run``.  Which one a run reaches first depends on
the interleaving, and an assertion stops the run, so a ``causality`` verdict
may follow a race the guard saw earlier (the oracle's precedence).  Nothing
otherwise: assertions off give ``diverged``, ``race`` or ``crash`` depending
on the interleaving, real threads fail as often as the machine lets handlers
overlap.

Why it fails with two or more workers (docs/explanation/gem5-eventq.md §6, "several workers"):

* **cur_tick moved by another worker's pop** (A).  While worker 1 holds an
  event of tick 100, worker 2 pops one of tick 150 and moves ``cur_tick`` to
  150.  Worker 1's handler now sees "now" = 150: an event it schedules at a
  *stored* absolute tick (a crossbar layer's or a DRAM bus's busy-until,
  ``respQueue.front()->readyTime``, the event's own tick) lies in the past
  and gem5's ``assert(when >= curTick())`` fires (verdict ``causality``); an
  event it schedules *relative* to "now" lands at the wrong tick (verdict
  ``diverged``).  With the assertions off (``checks=false``) the run goes on,
  ``cur_tick`` even goes backwards at the next pop, and state can be
  corrupted for good (mechanism D below).
* **same-tick order lost** (B).  Events of one (when, priority) bin, of
  different priorities and of different ticks run at once: priorities and
  gem5's LIFO tie order no longer decide what a component sees first.
* **name locks are not component locks** (C).  gem5 event names identify
  neither a component nor an event (§5): a cache's ``cpuSidePort.sendEvent``
  and ``memSidePort.sendEvent`` share the cache's state under two names, so
  two workers can be inside one component at once (verdict ``race``, found
  by the model's race guard).  ``lock_key=component`` closes that hole ...
* **direct calls are never covered** ... but not this one: a handler's
  same-tick port call (``Component.call``) enters a peer whose lock it does
  not hold.
* **check-then-act on a popped event** (D).  Between pop and execute an
  event looks unscheduled, so ``if not ev.scheduled: schedule(ev, t)``
  (gem5's ``PacketQueue::schedSendEvent``) queues it a second time while a
  worker holds it; it then runs twice.

Where the prototype's reported one-worker failure must come from (§6, "one
worker"): one worker strictly alternating pop -> execute cannot fail the
``when >= curTick`` check -- nothing else moves ``cur_tick`` while
``process()`` runs, and the only difference (``setCurTick`` on a squashed
pop) is overwritten by the next pop before anything reads it.  This model
leaves out the gem5 mechanisms that can break that: (1) the main (Python)
thread still running ``doSimLoop``/``serviceOne`` or its async branch
(``pollQueue``, stat events, ``exitSimLoop``) next to the worker -- a second
agent on the queue; (2) pop-ahead or pipelined dispatch, popping the next
event before the current one has executed (here: ``pop_ahead>=1``, which
breaks one worker: the handler runs with the clock of an event popped after
it); (3) the exit path: a worker that keeps popping after the exit event,
then Python's next ``simulate()`` -> ``set_max_tick`` -> ``reschedule``
racing it, or a popped-but-unrun event put back with ``schedule(ev,
ev->when())``; (4) a thread-local clock mismatch: the worker's ``curTick()``
bound to another ``EventQueue`` than the one ``popNextEvent`` advances; (5) a
pop without gem5's stale-``nextBin`` fix-up, silently skipping bins; (6) the
transient Squashed-but-not-Scheduled window that O3's
``reschedule(always=false)`` trips; (7) ``service_mutex`` left held by
``ScopedRelease`` (hangs rather than asserts); (8) missing ``doSimLoop``
pieces (async signals, the ``curTick() <= nextTick()`` check).

Two executors run the same worker steps (pop, lock, execute, release):

* ``executor=interleave``: one thread; at each step boundary a scheduler
  seeded with ``interleave_seed`` picks uniformly among the workers that can
  make progress and advances that one by one step.  Inside a handler, every
  read of "now" by model code (``queue.cur_tick``: ``Component.cur_tick``,
  ``clockEdge``, ``Link.send``) is a switch point too: with probability
  ``preempt`` (default 0.5, drawn again after each step it runs) the
  scheduler runs another worker's step there -- a pop, which moves
  ``cur_tick``, or a handler, nested -- before the handler goes on.  The
  queue operations themselves (``schedule``/``reschedule``/``deschedule``,
  and the ``when >= cur_tick`` check inside them) are not switch points: a
  tick computed from "now" and scheduled at once is checked against the same
  "now", as in a real run where that window is a few instructions.  So each
  verdict has one mechanism: ``causality`` is a stored tick (or a tick
  computed before a later switch point) behind a clock another pop moved,
  ``diverged`` a tick computed from a moved clock.  Every interleaving it
  produces is one real threads could produce; the weights are not real time.
  A worker is *inside* the component of the event it executes from its
  execute step to its release step; ``model.worker_id`` returns the
  simulated worker, so the model's race guard reports two simulated workers
  in one component exactly when their inside-windows overlap.
* ``executor=threads``: real ``threading.Thread`` workers.  The failure
  shows up as often as the machine allows (the GIL serialises handlers;
  ``--work gil-release`` lets them overlap).  A worker's exception stops
  every worker and is raised; a run that makes no progress for ``stall_s``
  seconds is a ``DeadlockError``; it never hangs.

A run stopped by a failed assertion still reports what it processed up to
there (events, final tick).  :meth:`Split.anatomy` replays an interleaved run
with a recorder (never on in a measured run) and returns the steps that led
to a non-exact verdict: for ``causality`` the pop that moved ``cur_tick``, the
running handler and where its ``when`` came from (replayed once more with the
handler reading its own event's tick: an unchanged ``when`` is a stored tick,
a changed one ``cur_tick + delay``); for ``race`` the two workers and events
in one component; for ``diverged`` the schedule that produced the first
divergence.  What the verdicts are for given cells is asserted by
tests/test_split.py and tests/test_conformance.py; failure rates against
``preempt`` and real threads are measured by the report's failure pages.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

from tickpar.host.affinity import pinned, worker_cpus
from tickpar.kernel.eventq import Event, EventQueue, SchedulingError
from tickpar.kernel.model import Component, Model
from tickpar.kernel.params import Param, ParamError
from tickpar.kernel.simloop import start_single_queue
from tickpar.plugins import DeadlockError, Promise, RunSpec, Strategy, StrategyResult, base_stats
from tickpar.verify.oracle import Verdict, collect

# What a worker step yields: None (made progress, runnable again), _QUEUE
# (waits for an event to pop) or a lock key (waits for that mutex).
_QUEUE = ("queue",)


def _lock_key_fn(mode: str) -> Callable[[Event], object]:
    """The mutex key of an event: its name, or its component (events without one fall back to the name)."""
    if mode == "name":
        return lambda ev: ev.name

    def by_component(ev: Event) -> object:
        comp = getattr(ev, "component", None)
        return comp if comp is not None else ev.name

    return by_component


class _LockedQueue(EventQueue):
    """An event queue whose own operations are atomic under ``lock`` (the threads executor).

    gem5 expects ``schedule`` to run under the queue's ``service_mutex``; the
    prototype's queue lock plays that part here.  What it does not protect is
    time: handlers read ``cur_tick`` without it, which is the point.
    """

    __slots__ = ("lock",)

    def __init__(self, name: str, order: str, checks: bool) -> None:
        super().__init__(name, order=order, checks=checks)
        self.lock = threading.Lock()

    def schedule(self, event: Event, when: int) -> None:
        with self.lock:
            EventQueue.schedule(self, event, when)

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        with self.lock:
            EventQueue.reschedule(self, event, when, always)

    def deschedule(self, event: Event) -> None:
        with self.lock:
            EventQueue.deschedule(self, event)


class _Shared:
    """State the workers share: the stop flag, who holds an event, locks, counters."""

    def __init__(self, workers: int) -> None:
        self.stop = False
        self.busy = 0  # workers holding popped events
        self.held_locks: dict[object, int] = {}
        self.pops = [0] * workers
        self.squashed_pops = [0] * workers
        self.executed = [0] * workers
        self.stale_now = [0] * workers
        self.lock_waits = [0] * workers
        self.wait_steps = [0] * workers
        self.idle_s = [0.0] * workers
        self.progress = 0


class _ProbeDone(Exception):
    """Raised by a probing replay when the probed handler reaches the probed operation."""


class _Recorder:
    """What the interleave executor did, step by step: only in an anatomy replay, never in a measured run.

    ``log`` holds ``(step, worker, kind, event, when, cur_tick, note)`` rows:
    kinds ``pop``, ``handler`` (a handler starts), ``read`` (a handler reads a
    ``cur_tick`` other than its event's tick), ``schedule``/``reschedule``/
    ``deschedule``, ``race`` and ``fail``.  With ``probe=(handler index, op
    index)`` the replay lets that handler read its own event's tick as "now"
    and stops at that operation, keeping the ``when`` it asked for.
    """

    def __init__(self, probe: tuple[int, int] | None = None) -> None:
        self.log: list[tuple[int, int, str, str, int, int, str]] = []
        self.handlers = 0
        #: worker -> [handler index, event, operations so far, step it started]
        self.running: dict[int, list[Any]] = {}
        #: worker -> log index where its handler started, until its release step (it is inside till then)
        self.inside: dict[int, int] = {}
        self.probe = probe
        self.probe_when: int | None = None
        self.step: Callable[[], int] = lambda: 0
        self.failed: tuple[int, int, str, str, int, int, str] | None = None

    def add(self, worker: int, kind: str, event: str, when: int, cur_tick: int, note: str = "") -> None:
        self.log.append((self.step(), worker, kind, event, int(when), int(cur_tick), note))

    def start(self, worker: int, ev: Event, now: int) -> None:
        self.running[worker] = [self.handlers, ev, 0, self.step()]
        self.handlers += 1
        self.inside[worker] = len(self.log)
        self.add(worker, "handler", ev.name, ev.when, now)

    def read(self, worker: int, now: int) -> int:
        """A read of ``cur_tick`` by ``worker``'s handler: log a stale one; a probed handler reads its own tick."""
        run = self.running.get(worker)
        if run is None:
            return now
        ev = run[1]
        if self.probe is not None and run[0] == self.probe[0]:
            return ev.when
        if now != ev.when:
            self.add(worker, "read", ev.name, ev.when, now, "stale")
        return now

    def op(self, worker: int, kind: str, target: Event, when: int, now: int) -> None:
        run = self.running.get(worker)
        if run is None:
            return
        index = run[2]
        run[2] += 1
        if self.probe is not None and (run[0], index) == self.probe:
            self.probe_when = int(when)
            raise _ProbeDone
        self.add(worker, kind, target.name, when, now, run[1].name)


def _worker(
    wid: int,
    queue: _InterleavedQueue,
    shared: _Shared,
    key_of: Callable[[Event], object],
    pop_ahead: int,
    recorder: _Recorder | None,
) -> Generator[object, None, None]:
    """One simulated worker of the interleave executor, one step per ``next()``."""
    held: deque[Event] = deque()
    locks = shared.held_locks
    execute = queue.execute_popped
    while True:
        if not held:
            while True:
                if shared.stop:
                    return
                if queue.empty():
                    if shared.busy == 0:
                        shared.stop = True  # drained: nothing left, nobody can add more
                        return
                    shared.wait_steps[wid] += 1
                    yield _QUEUE
                    continue
                break
            ev = queue.pop_next(advance=True)  # under the queue lock: one atomic step
            shared.busy += 1
            shared.pops[wid] += 1
            shared.squashed_pops[wid] += ev.squashed
            if recorder is not None:
                recorder.add(wid, "pop", ev.name, ev.when, queue.tick_now(), "squashed" if ev.squashed else "")
            held.append(ev)
            yield None
        # Pop-ahead: take more events before executing the first (one-worker failure mechanism 2).
        while len(held) <= pop_ahead and not shared.stop and not held[-1].is_exit and not queue.empty():
            ev = queue.pop_next(advance=True)
            shared.busy += 1
            shared.pops[wid] += 1
            shared.squashed_pops[wid] += ev.squashed
            if recorder is not None:
                recorder.add(wid, "pop", ev.name, ev.when, queue.tick_now(), "pop-ahead")
            held.append(ev)
            yield None
        ev = held.popleft()
        key = key_of(ev)
        if key in locks:
            shared.lock_waits[wid] += 1
            while key in locks:
                shared.wait_steps[wid] += 1
                yield key
        locks[key] = wid
        comp = getattr(ev, "component", None)
        mine = comp is not None and comp.claim(wid) is None  # inside from here until the release step
        if queue.tick_now() != ev.when and not ev.squashed:
            shared.stale_now[wid] += 1
        if recorder is not None and not ev.squashed:
            recorder.start(wid, ev, queue.tick_now())
        result = execute(ev)  # may raise SchedulingError: the run stops there
        if recorder is not None:
            recorder.running.pop(wid, None)
        shared.executed[wid] += 1
        shared.progress += 1
        yield None  # still inside: other workers' steps happen now
        if mine:
            comp.release()
        if recorder is not None:
            recorder.inside.pop(wid, None)
        del locks[key]
        shared.busy -= 1
        if result is not None:
            shared.stop = True  # the exit event: every worker stops


class _Interleaver:
    """The interleave executor: the workers' steps on one thread, in a seeded random order.

    At a step boundary the pick is uniform over the workers that can make
    progress.  Inside a handler, every read of "now" (:class:`_InterleavedQueue`
    calls :meth:`preempt` before it) is a switch point: with probability
    ``preempt`` another worker's step runs there -- a pop, which moves
    ``cur_tick`` under the running handler, or a handler, nested -- and the
    draw repeats after it.  A suspended worker resumes only when the scheduler
    picks it again, so every interleaving is a real one.
    """

    def __init__(
        self,
        model: Model,
        queue: _InterleavedQueue,
        shared: _Shared,
        gens: dict[int, Any],
        seed: int,
        preempt: float,
    ) -> None:
        self.rng = random.Random(seed)
        self.queue = queue
        self.shared = shared
        self.gens = gens
        self.preempt_p = preempt
        self.waits: dict[int, object] = dict.fromkeys(gens)
        self.suspended: set[int] = set()
        self.current = -1
        self.steps = 0
        self.preemptions = 0
        model.worker_id = lambda: self.current

    def _ready(self) -> list[int]:
        shared, queue, locks = self.shared, self.queue, self.shared.held_locks
        ready = []
        for w, wait in self.waits.items():
            if w in self.suspended:
                continue
            if wait is None:
                ready.append(w)
            elif wait is _QUEUE:
                if shared.stop or shared.busy == 0 or not queue.empty():
                    ready.append(w)
            elif wait not in locks:
                ready.append(w)
        return ready

    def _step(self, w: int) -> None:
        outer = self.current
        self.current = w
        self.suspended.add(w)
        self.steps += 1
        try:
            self.waits[w] = next(self.gens[w])
        except StopIteration:
            del self.gens[w]
            del self.waits[w]
        finally:
            self.suspended.discard(w)
            self.current = outer

    def run(self) -> None:
        while self.gens:
            ready = self._ready()
            if not ready:
                raise DeadlockError(f"split: no worker can make progress ({len(self.queue)} events queued)")
            self._step(ready[0] if len(ready) == 1 else self.rng.choice(ready))

    def preempt(self) -> None:
        """A switch point inside the running handler: maybe run other workers' steps first."""
        if self.current < 0:
            return
        rng, p = self.rng, self.preempt_p
        while True:
            ready = self._ready()
            if not ready or rng.random() >= p:
                return  # the running handler goes on
            self.preemptions += 1
            self._step(ready[0] if len(ready) == 1 else rng.choice(ready))


_BASE_CUR_TICK = EventQueue.tick_slot  # the slot that holds the queue's tick


class _InterleavedQueue(EventQueue):
    """The interleave executor's queue: every read of ``cur_tick`` by model code is a switch point.

    Model code reads "now" through ``queue.cur_tick`` (``Component.cur_tick``,
    ``clockEdge``, ``Link.send``); before each such read the interleaver may
    run other workers' steps.  The queue operations are not switch points, and
    their own reads (the ``when >= cur_tick`` check inside ``schedule``/
    ``reschedule``) are quiet: a time computed from "now" and scheduled at
    once is checked against the same "now", as in a real run where that
    window is a few instructions.  So a schedule relative to ``cur_tick``
    lands at a wrong tick but passes the check, and one at a *stored* tick
    fails it when another worker's pop moved ``cur_tick`` past that tick
    while the handler was running.  A :class:`_Recorder`, when attached,
    sees every read and operation.
    """

    __slots__ = ("_quiet", "interleaver", "recorder")

    def __init__(self, name: str, order: str, checks: bool) -> None:
        self.interleaver: _Interleaver | None = None
        self.recorder: _Recorder | None = None
        self._quiet = False
        super().__init__(name, order=order, checks=checks)

    @property  # type: ignore[override]
    def cur_tick(self) -> int:
        interleaver = self.interleaver
        if interleaver is None or self._quiet:
            return _BASE_CUR_TICK.__get__(self)
        interleaver.preempt()
        now = _BASE_CUR_TICK.__get__(self)
        if self.recorder is not None:
            return self.recorder.read(interleaver.current, now)
        return now

    @cur_tick.setter
    def cur_tick(self, value: int) -> None:
        _BASE_CUR_TICK.__set__(self, value)

    def _op(self, kind: str, event: Event, when: int) -> None:
        """Tell the recorder about an operation; a failed assertion is logged where it happens."""
        recorder, interleaver = self.recorder, self.interleaver
        if recorder is not None and interleaver is not None:
            recorder.op(interleaver.current, kind, event, when, self.tick_now())

    def _failed(self, err: SchedulingError) -> None:
        recorder, interleaver = self.recorder, self.interleaver
        if recorder is not None and interleaver is not None:
            row = (interleaver.steps, interleaver.current, "fail", err.event.name, err.when, err.cur_tick, str(err))
            recorder.failed = row
            recorder.log.append(row)

    def schedule(self, event: Event, when: int) -> None:
        self._quiet = True
        try:
            self._op("schedule", event, when)
            EventQueue.schedule(self, event, when)
        except SchedulingError as err:
            self._failed(err)
            raise
        finally:
            self._quiet = False

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        self._quiet = True
        try:
            self._op("reschedule", event, when)
            EventQueue.reschedule(self, event, when, always)
        except SchedulingError as err:
            self._failed(err)
            raise
        finally:
            self._quiet = False

    def deschedule(self, event: Event) -> None:
        self._quiet = True
        try:
            self._op("deschedule", event, event.when)
            EventQueue.deschedule(self, event)
        except SchedulingError as err:
            self._failed(err)
            raise
        finally:
            self._quiet = False

    def tick_now(self) -> int:
        """``cur_tick`` without a switch point (for the executor's own bookkeeping)."""
        return _BASE_CUR_TICK.__get__(self)


def _threads(
    queue: _LockedQueue,
    shared: _Shared,
    workers: int,
    key_of: Callable[[Event], object],
    stall_s: float,
) -> None:
    """Real threads: free-running workers; the first exception stops all and is raised."""
    qlock = queue.lock
    wake = threading.Condition(qlock)
    mutexes: dict[object, threading.Lock] = {}
    mutex_guard = threading.Lock()
    errors: list[BaseException] = []
    waiting = [0]

    def mutex(key: object) -> threading.Lock:
        found = mutexes.get(key)
        if found is None:
            with mutex_guard:
                found = mutexes.setdefault(key, threading.Lock())
        return found

    def run(wid: int) -> None:
        execute = queue.execute_popped
        idle = 0.0
        try:
            while True:
                with qlock:
                    while not shared.stop and queue.empty() and shared.busy > 0:
                        waiting[0] += 1
                        t0 = time.perf_counter()
                        wake.wait(0.05)
                        idle += time.perf_counter() - t0
                        waiting[0] -= 1
                    if shared.stop:
                        return
                    if queue.empty():  # and nobody busy: drained
                        shared.stop = True
                        wake.notify_all()
                        return
                    ev = EventQueue.pop_next(queue, advance=True)
                    shared.busy += 1
                    shared.pops[wid] += 1
                    shared.squashed_pops[wid] += ev.squashed
                lock = mutex(key_of(ev))
                if not lock.acquire(blocking=False):
                    shared.lock_waits[wid] += 1
                    t0 = time.perf_counter()
                    lock.acquire()
                    idle += time.perf_counter() - t0
                try:
                    if queue.cur_tick != ev.when and not ev.squashed:
                        shared.stale_now[wid] += 1
                    result = execute(ev)
                finally:
                    lock.release()
                shared.executed[wid] += 1
                with qlock:
                    shared.busy -= 1
                    shared.progress += 1
                    if result is not None:
                        shared.stop = True
                    if waiting[0]:
                        wake.notify_all()
        except BaseException as exc:  # stop everyone; the main thread re-raises it
            with qlock:
                errors.append(exc)
                shared.stop = True
                wake.notify_all()
        finally:
            shared.idle_s[wid] = idle

    cpus = worker_cpus(workers)  # each worker on a core of its own (tickpar.host.affinity)

    def run_pinned(wid: int) -> None:
        with pinned(cpus, wid):
            run(wid)

    threads = [
        threading.Thread(target=run_pinned, args=(w,), name=f"split-{w}", daemon=True) for w in range(workers)
    ]
    for t in threads:
        t.start()
    last_progress, last_change = -1, time.monotonic()
    for t in threads:
        while True:
            t.join(0.1)
            if not t.is_alive():
                break
            if shared.progress != last_progress:
                last_progress, last_change = shared.progress, time.monotonic()
            elif time.monotonic() - last_change > stall_s:
                with qlock:
                    shared.stop = True
                    wake.notify_all()
                raise DeadlockError(f"split: no event finished for {stall_s:g} s ({len(queue)} events queued)")
    if errors:
        raise errors[0]


def _interleave(
    spec: RunSpec, workers: int, options: dict[str, Any], recorder: _Recorder | None = None
) -> tuple[Model, _InterleavedQueue, _Shared, _Interleaver]:
    """Build the model and set up an interleaved run (not started): what :meth:`Split.run` and replays share."""
    pop_ahead = options.get("pop_ahead", 0)
    model, queue = start_single_queue(
        spec, _InterleavedQueue, checks=options.get("checks", True), detect_races=workers > 1 or pop_ahead > 0
    )
    shared = _Shared(workers)
    key_of = _lock_key_fn(options.get("lock_key", "name"))
    gens = {w: _worker(w, queue, shared, key_of, pop_ahead, recorder) for w in range(workers)}
    interleaver = _Interleaver(
        model, queue, shared, gens, options.get("interleave_seed", 0), options.get("preempt", 0.5)
    )
    queue.interleaver = interleaver
    queue.recorder = recorder
    if recorder is not None:
        recorder.step = lambda: interleaver.steps
    return model, queue, shared, interleaver


class Split(Strategy):
    name = "split"
    summary = "the research prototype: N workers pop under a queue lock, execute under a name/component mutex"
    options = {
        "lock_key": Param(
            str, "name", "mutex per event name (the prototype) or per component", choices=("name", "component")
        ),
        "checks": Param(bool, True, "keep gem5's schedule/reschedule assertions (false: count violations)"),
        "executor": Param(
            str,
            "interleave",
            "seeded step interleaving on one thread, or real threads",
            choices=("interleave", "threads"),
        ),
        "interleave_seed": Param(int, 0, "seed of the interleave executor's step scheduler", min=0, max=2**63 - 1),
        "preempt": Param(
            float,
            0.5,
            "interleave: probability that a read of cur_tick inside a handler lets another worker step first",
            min=0.0,
            max=1.0,
        ),
        "pop_ahead": Param(int, 0, "events a worker pops beyond the one it is about to execute", min=0, max=64),
        "stall_s": Param(float, 30.0, "threads: no event finished for this long -> deadlock", min=0.1, max=3600.0),
    }

    def validate(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> None:
        super().validate(spec, workers, options)
        if options.get("executor") == "threads":
            for option, neutral in (("pop_ahead", 0), ("preempt", 0.5)):
                if options.get(option, neutral) != neutral:
                    raise ParamError(
                        f"split option {option}={options[option]} is not allowed with executor=threads: {neutral}"
                        f" ({option} belongs to the interleave executor)"
                    )

    def promise(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> Promise:
        """From the contract (module docstring, "Promise:") and the workload's traits: the verdicts
        that can come first, each with the mechanism that brings it."""
        if workers == 1 and options.get("pop_ahead", 0) == 0:
            return Promise("exact", (), "one worker alternating pop and execute is gem5's serviceOne")
        if options.get("executor", "interleave") != "interleave":
            return Promise(None, (), "real threads: the failure shows up as often as the machine lets handlers overlap")
        if not options.get("checks", True):
            return Promise(None, (), "assertions off: diverged, race or crash, depending on the interleaving")
        traits = spec.traits()
        verdicts = {"diverged"}
        basis: list[str] = []
        why = ["a handler reads a clock another pop moved, or a component's events run out of order (diverged)"]
        if "stored_ticks" in traits:
            verdicts.add("causality")
            basis.append("stored_ticks")
            why.append("a stored tick behind a moved clock fails gem5's assertion (causality)")
        requeue = [t for t in ("several_named_events", "direct_calls") if t in traits]
        if requeue:
            verdicts.add("causality")
            basis += requeue
            why.append(
                "a popped event looks unscheduled, so another handler of its component queues it again (causality)"
            )
        if workers >= 2:
            if "direct_calls" in traits:
                verdicts.add("race")
                why.append("a direct call enters a component without its lock (race)")
            if options.get("lock_key", "name") == "name" and "several_named_events" in traits:
                verdicts.add("race")
                why.append("a lock per event name lets two workers into one component (race)")
        if "long_run" in traits:
            basis.append("long_run")
            why.append("a long run: one of them comes in practically every run, whichever first")
        else:
            verdicts.add("exact")
            why.append("a short run may end before any of them (exact)")
        return Promise(verdicts, tuple(dict.fromkeys(basis)), "; ".join(why))

    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        executor = options.get("executor", "interleave")
        started = time.perf_counter()
        steps = preemptions = 0
        if executor == "threads":
            model, queue = start_single_queue(
                spec, _LockedQueue, checks=options.get("checks", True), detect_races=workers > 1
            )
            shared = _Shared(workers)
            started = time.perf_counter()
            key_of = _lock_key_fn(options.get("lock_key", "name"))
            try:
                _threads(queue, shared, workers, key_of, options.get("stall_s", 30.0))
            except SchedulingError as err:
                err.partial = collect(model, violations=queue.violations)  # type: ignore[attr-defined]
                raise
        else:
            model, iqueue, shared, interleaver = _interleave(spec, workers, options)
            queue = iqueue
            started = time.perf_counter()
            try:
                interleaver.run()
            except SchedulingError as err:
                err.partial = collect(model, violations=queue.violations)  # type: ignore[attr-defined]
                raise
            finally:
                iqueue.interleaver = None
            steps, preemptions = interleaver.steps, interleaver.preemptions
        elapsed = time.perf_counter() - started
        record = collect(model, violations=queue.violations)
        stats = base_stats(workers)
        pops = sum(shared.pops)
        stats.update(
            events=record.events,
            batches=pops,
            # Events the model processed per pop: below 1 when pops take squashed events or the exit event.
            mean_events_per_batch=record.events / pops if pops else 0.0,
            lock_waits=sum(shared.lock_waits),
            idle_s=list(shared.idle_s),
            loop_s=elapsed,
            executor=executor,
            pops=list(shared.pops),
            squashed_pops=sum(shared.squashed_pops),
            executed=list(shared.executed),
            stale_now=sum(shared.stale_now),
            lock_waits_per_worker=list(shared.lock_waits),
            wait_steps=list(shared.wait_steps),
            steps=steps,
            preemptions=preemptions,
            violations=len(queue.violations),
            races=len(model.races),
        )
        return StrategyResult(record, stats)

    # -- anatomy ---------------------------------------------------------------------------------
    def anatomy(
        self, spec: RunSpec, workers: int, options: dict[str, Any], verdict: Verdict
    ) -> list[dict[str, Any]] | None:
        """The steps that led to ``verdict``, from a recorded replay (interleave executor only)."""
        if options.get("executor", "interleave") != "interleave" or verdict.kind not in {
            "causality",
            "race",
            "diverged",
        }:
            return None
        recorder = _Recorder()
        model, queue, _shared, interleaver = _interleave(spec, workers, options, recorder)
        first_race: list[tuple[Component, dict[int, int]]] = []
        note_race = model.note_race

        def noting(component: Component, event: Event | None, detail: str) -> None:
            note_race(component, event, detail)
            if not first_race:
                first_race.append((component, dict(recorder.inside)))
                name = event.name if event is not None else "<direct call>"
                recorder.add(interleaver.current, "race", name, component.when, queue.tick_now(), component.name)

        model.note_race = noting  # type: ignore[method-assign]
        try:
            interleaver.run()
        except SchedulingError:
            pass
        except Exception:  # a crash is explained by its message, not by a replay
            return None
        if verdict.kind == "causality" and recorder.failed is not None:
            return _causality_steps(recorder, self._replay_when(spec, workers, options, recorder))
        if verdict.kind == "race" and first_race:
            return _race_steps(recorder, *first_race[0])
        if verdict.kind == "diverged" and verdict.divergence is not None:
            return _diverged_steps(recorder, verdict.divergence)
        return None

    def _replay_when(
        self, spec: RunSpec, workers: int, options: dict[str, Any], recorder: _Recorder
    ) -> tuple[int, int | None] | None:
        """Replay once more with the failing handler reading its own event's tick as "now".

        Returns ``(handler's tick, when it then asks for)`` (``None``: it no
        longer reaches that operation), or ``None`` when no handler was running.
        """
        failed = recorder.failed
        assert failed is not None
        run = recorder.running.get(failed[1])
        if run is None:
            return None
        probe = _Recorder(probe=(run[0], run[2] - 1))
        _model, _queue, _shared, interleaver = _interleave(spec, workers, options, probe)
        try:
            interleaver.run()
        except (_ProbeDone, SchedulingError):
            pass
        except Exception:
            return None
        return run[1].when, probe.probe_when


def _step(row: tuple[int, int, str, str, int, int, str], note: str) -> dict[str, Any]:
    step, worker, _kind, event, when, cur_tick, _ = row
    return {"worker": worker, "step": step, "event": event, "when": when, "cur_tick": cur_tick, "note": note}


def _handler_context(
    log: list[tuple[int, int, str, str, int, int, str]], end: int, worker: int, handler: str, limit: int = 4
) -> list[dict[str, Any]]:
    """The pop and start of ``worker``'s handler running at log index ``end``, and the pops and
    stale reads of "now" that happened while it ran (the last ``limit`` pops)."""
    start = next(
        (i for i in range(end, -1, -1) if log[i][1] == worker and log[i][2] == "handler" and log[i][3] == handler),
        None,
    )
    if start is None:
        return []
    out: list[dict[str, Any]] = []
    pop = next(
        (i for i in range(start, -1, -1) if log[i][1] == worker and log[i][2] == "pop" and log[i][3] == handler),
        None,
    )
    if pop is not None:
        row = log[pop]
        out.append(_step(row, f"worker {worker} pops {row[3]}: cur_tick := {row[4]}"))
    row = log[start]
    out.append(_step(row, f"handler {row[3]} starts (its event's tick {row[4]}, cur_tick {row[5]})"))
    pops = [i for i in range(start + 1, end + 1) if log[i][2] == "pop"]
    shown = pops[-limit:]
    if len(pops) > len(shown):
        first = log[pops[0]]
        out.append(
            _step(first, f"{len(pops)} pops by other workers while {handler} runs; the last {len(shown)} follow")
        )
    for i in shown:
        row = log[i]
        who = "another worker" if row[1] != worker else "the same worker (pop-ahead)"
        out.append(_step(row, f"{who} pops {row[3]}: cur_tick := {row[4]} while {handler} runs"))
    reads = [i for i in range(start + 1, end + 1) if log[i][2] == "read" and log[i][1] == worker]
    for i in reads[-2:]:
        row = log[i]
        out.append(_step(row, f"{handler} reads cur_tick = {row[5]}; its event's tick is {row[4]}"))
    return out


def _causality_steps(recorder: _Recorder, replay: tuple[int, int | None] | None) -> list[dict[str, Any]]:
    log = recorder.log
    failed = recorder.failed
    assert failed is not None
    end = len(log) - 1
    _step_no, worker, _kind, _target, when, cur_tick, message = failed
    run = recorder.running.get(worker)
    steps: list[dict[str, Any]] = []
    if run is not None:
        handler = run[1].name
        steps = _handler_context(log, end, worker, handler)
        movers = [i for i in range(end) if log[i][2] == "pop" and log[i][4] == cur_tick]
        if movers:
            row = log[movers[-1]]
            steps.append(
                _step(row, f"the pop that set cur_tick = {cur_tick}: worker {row[1]} pops {row[3]}")
            )
        if replay is not None:
            own, replayed = replay
            if replayed == when:
                origin = (
                    f"when={when} is a stored tick: replayed with now = its event's own tick {own}, the handler"
                    " asks for the same tick, so it was not computed from cur_tick"
                )
            elif replayed is None:
                origin = f"when={when} depends on cur_tick: with now = {own} the handler no longer makes this call"
            else:
                origin = (
                    f"when={when} is cur_tick + delay: with now = its event's tick {own} the handler asks for"
                    f" {replayed} (delay {replayed - own})"
                )
            steps.append(_step(failed, origin))
    steps.sort(key=lambda s: s["step"])
    steps.append(_step(failed, f"{message} (gem5's assert(when >= curTick()) fails)"))
    return _unique(steps)


def _race_steps(recorder: _Recorder, component: Component, inside: dict[int, int]) -> list[dict[str, Any]]:
    log = recorder.log
    end = next(i for i in range(len(log) - 1, -1, -1) if log[i][2] == "race")
    race = log[end]
    worker = race[1]
    steps: list[dict[str, Any]] = []
    for other, start in sorted(inside.items()):
        row = log[start]
        if other == worker:
            steps.append(_step(row, f"worker {worker} starts {row[3]}"))
        elif start < end:
            steps.append(
                _step(row, f"worker {other} starts {row[3]}: inside its component until its release step")
            )
    how = "a direct call enters" if race[3] == "<direct call>" else f"{race[3]} enters"
    steps.append(
        _step(race, f"{how} {component.name} on worker {worker} while another worker is inside: the race guard fires")
    )
    steps.sort(key=lambda s: s["step"])
    return _unique(steps)


def _diverged_steps(recorder: _Recorder, divergence: dict[str, Any]) -> list[dict[str, Any]]:
    log = recorder.log
    got, expected = divergence.get("got"), divergence.get("expected")
    what = (
        f"first divergence: {divergence['component']} event #{divergence.get('index')}:"
        f" expected {expected}, got {got}"
    )
    last = {
        "worker": None,
        "step": None,
        "event": divergence["component"],
        "when": divergence.get("tick"),
        "cur_tick": None,
        "note": what,
    }
    if not isinstance(got, list) or len(got) < 3:
        return [last]
    found = next(
        (i for i, r in enumerate(log) if r[2] in {"schedule", "reschedule"} and r[3] == got[2] and r[4] == got[0]),
        None,
    )
    if found is None:
        return [last]
    row = log[found]
    steps = _handler_context(log, found, row[1], row[6])
    exp_when = expected[0] if isinstance(expected, list) else None
    steps.append(
        _step(row, f"{row[6]} {row[2]}s {row[3]} at {row[4]} (cur_tick {row[5]}); sequentially at {exp_when}")
    )
    steps.sort(key=lambda s: s["step"])
    last.update(step=row[0], when=got[0])
    steps.append(last)
    return _unique(steps)


def _unique(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen, out = set(), []
    for s in steps:
        key = (s["worker"], s["step"], s["note"])
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out
