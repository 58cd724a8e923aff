"""``split``: the research prototype's ``popNextEvent()`` / ``executePoppedEvent()`` loop, faithfully.

Sync: a global queue lock around each pop and a mutex per lock key around each
execution; no barrier.
Lookahead: none: a worker pops the head whatever its tick, so handlers of
different ticks run at once.
Ownership: none by component: the mutex is keyed by event name
(``lock_key=name``) or by component (``lock_key=component``); direct calls
enter their peer unlocked.
Determinism: ``executor=interleave`` is deterministic for a given
``interleave_seed``; ``executor=threads`` depends on the machine's timing.
Promise: ``exact`` with one worker and ``pop_ahead=0``; otherwise what
:meth:`Split.expected_verdict` says (the reproduced failure, or nothing).

N workers share one :class:`~tickpar.eventq.EventQueue`.  Each worker loops:

1. **pop**: under the global queue lock, ``queue.pop_next(advance=True)``
   takes the head, clears its Scheduled flag and sets ``cur_tick`` to its
   ``when`` -- even for a squashed event, as the prototype's ``popNextEvent``
   does and gem5's ``serviceOne`` does not; then the queue lock is released;
2. **lock**: take the mutex keyed by the event (``lock_key=name``: the
   event's name, the prototype; ``lock_key=component``: the component that
   owns the event);
3. **execute**: ``queue.execute_popped(ev)`` runs ``process()``; whatever it
   schedules goes into the shared queue (whose own operations are atomic:
   the ``threads`` executor guards them with the queue lock, as gem5 expects
   ``schedule`` to run under the queue's ``service_mutex``);
4. **release** the mutex.  A worker that executes the exit event (the
   ``simulate()`` limit) stops every worker: the others finish the event they
   hold and pop nothing more.  With no limit the run ends when the queue is
   empty and no worker holds an event.

Why it fails with two or more workers (gem5-eventq.md §6, "several workers"):

* **cur_tick moved by another worker's pop** (A).  ``cur_tick`` is the
  queue's, not the event's.  While worker 1 holds an event of tick 100,
  worker 2 pops one of tick 150 and moves ``cur_tick`` to 150.  Worker 1's
  handler now sees "now" = 150: an event it schedules at a *stored* absolute
  tick (a crossbar layer's or a DRAM bus's busy-until, ``respQueue.front()
  ->readyTime``) lies in the past and gem5's ``assert(when >= curTick())``
  fires (verdict ``causality``); an event it schedules *relative* to "now"
  lands at the wrong tick (verdict ``diverged``), and fails the assertion
  too when a pop moves ``cur_tick`` between the handler's read of "now" and
  the check inside ``schedule``.  With the assertions off (``checks=false``)
  the run goes on, ``cur_tick`` even goes backwards at the next pop, and
  state can be corrupted for good (mechanism D below).
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
  worker holds it; it then runs twice, and a second ``sendEvent`` on an
  empty packet queue crashes the model (as gem5's ``deferredPacketReady``
  assertion would).

Why it is exact with one worker, and where the prototype's reported
one-worker failure must come from (§6, "one worker"): one worker strictly
alternating pop -> execute -> pop is ``serviceOne`` for the ``when >=
curTick`` check -- nothing else moves ``cur_tick`` while ``process()`` runs,
and the only difference (``setCurTick`` on a squashed pop) is overwritten by
the next pop before anything reads it.  This model leaves out the gem5
mechanisms that can break that: (1) the main (Python) thread still running
``doSimLoop``/``serviceOne`` or its async branch (``pollQueue``, stat events,
``exitSimLoop``) next to the worker -- a second agent on the queue; (2)
pop-ahead or pipelined dispatch, popping the next event before the current
one has executed (here: ``pop_ahead>=1``, which reproduces the failure with
one worker: the handler runs with the clock of an event popped after it);
(3) the exit path: a worker that keeps popping after the exit
event, then Python's next ``simulate()`` -> ``set_max_tick`` ->
``reschedule`` racing it, or a popped-but-unrun event put back with
``schedule(ev, ev->when())``; (4) a thread-local clock mismatch: the worker's
``curTick()`` bound to another ``EventQueue`` than the one ``popNextEvent``
advances; (5) a pop without gem5's stale-``nextBin`` fix-up, silently
skipping bins; (6) the transient Squashed-but-not-Scheduled window that
O3's ``reschedule(always=false)`` trips; (7) ``service_mutex`` left held by
``ScopedRelease`` (hangs rather than asserts); (8) missing ``doSimLoop``
pieces (async signals, the ``curTick() <= nextTick()`` check).

Two executors run the same worker code, written as a generator of steps
(pop, lock, execute, release):

* ``executor=interleave`` (default; correctness cells and tests): one
  thread, a scheduler seeded with ``interleave_seed`` picks uniformly among
  the workers that can make progress and advances that one by one step.
  Inside a handler, every read of "now" (``queue.cur_tick``) and every
  ``schedule``/``reschedule``/``deschedule`` call is a switch point too:
  the scheduler may run other workers' steps there (their pops, which move
  ``cur_tick``; their handlers, nested) before the handler goes on.  Every
  interleaving it produces is one real threads could produce; the weights
  are not real time (a few-instruction window is as likely to be hit as a
  whole handler), so it finds failures sooner than a real run does.  The
  verdict and the first failing event are the same on every run.  A worker
  is *inside* the component of the event it executes from its execute step
  to its release step; ``model.worker_id`` returns the simulated worker, so
  the model's race guard reports two simulated workers in one component
  (two events under name locks, or a direct call into a component another
  worker is in) exactly when their inside-windows overlap.
* ``executor=threads``: real ``threading.Thread`` workers for timing.  The
  failure shows up as often as the machine allows (the GIL serialises
  handlers; ``--work gil-release`` lets them overlap).  A worker's exception
  stops every worker and is raised; a run that makes no progress for
  ``stall_s`` seconds is a ``DeadlockError``; it never hangs.

Observed verdicts (interleave, default ``interleave_seed``, seeds 1-3, both
orders): 1 worker ``exact`` everywhere.  ``multicore``, 2 to 8 workers:
``causality`` in every one of 384 cells tried (12 interleave seeds x 2 run
seeds x 2 orders x 4 worker counts x both lock keys), first failures within
the first ~70 ns of simulated time, e.g. ``schedule(system.cpu0.dcache.
cpuSidePort.sendEvent, when=3001) with cur_tick=3500`` -- hence the promise.
``phold``: ``causality`` at 3 or more workers, ``diverged`` or ``causality``
at 2 depending on the interleave seed (no promise).  ``checks=false``:
``phold`` ``diverged`` with the violations listed; ``multicore``
``diverged`` with ``lock_key=component``, but name locks and direct calls
give ``race``, and mechanism D can end a run in ``crash``.  With one worker
and ``pop_ahead>=1``, ``multicore`` gets ``causality`` (a CPU resuming at the
clock edge after a response's own tick, behind the popped-ahead clock).
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

from tickpar.eventq import Event, EventQueue
from tickpar.model import Model
from tickpar.oracle import collect
from tickpar.params import Param, ParamError
from tickpar.plugins import DeadlockError, RunSpec, Strategy, StrategyResult, base_stats
from tickpar.simloop import start_single_queue

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


def _worker(
    wid: int,
    queue: _InterleavedQueue,
    shared: _Shared,
    key_of: Callable[[Event], object],
    pop_ahead: int,
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
            held.append(ev)
            yield None
        # Pop-ahead: take more events before executing the first (one-worker failure mechanism 2).
        while len(held) <= pop_ahead and not shared.stop and not held[-1].is_exit and not queue.empty():
            ev = queue.pop_next(advance=True)
            shared.busy += 1
            shared.pops[wid] += 1
            shared.squashed_pops[wid] += ev.squashed
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
        result = execute(ev)  # may raise SchedulingError: the run stops there
        shared.executed[wid] += 1
        shared.progress += 1
        yield None  # still inside: other workers' steps happen now
        if mine:
            comp.release()
        del locks[key]
        shared.busy -= 1
        if result is not None:
            shared.stop = True  # the exit event: every worker stops


class _Interleaver:
    """The interleave executor: the workers' steps on one thread, in a seeded random order.

    Step boundaries are the worker's own steps (pop, lock, execute, release)
    and, inside a handler, every read of "now" (:class:`_InterleavedQueue`
    calls :meth:`preempt` before it): there the scheduler may run other
    workers' steps -- their pops, which move ``cur_tick`` under the running
    handler, and even their handlers, nested -- before the handler goes on.  A suspended worker resumes only when the
    scheduler picks it again, so every interleaving is a real one; the pick is
    uniform over the workers that can make progress, from ``seed``.
    """

    def __init__(
        self, model: Model, queue: _InterleavedQueue, shared: _Shared, gens: dict[int, Any], seed: int
    ) -> None:
        self.rng = random.Random(seed)
        self.queue = queue
        self.shared = shared
        self.gens = gens
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
        while True:
            ready = self._ready()
            if not ready:
                return
            pick = self.rng.randrange(len(ready) + 1)
            if pick == len(ready):
                return  # the running handler goes on
            self.preemptions += 1
            self._step(ready[pick])


_BASE_CUR_TICK = EventQueue.tick_slot  # the slot that holds the queue's tick


class _InterleavedQueue(EventQueue):
    """The interleave executor's queue: every read of ``cur_tick`` by model code is a switch point.

    Model code reads "now" through ``queue.cur_tick`` (``Component.cur_tick``,
    ``clockEdge``, ``Link.send``); before each such read the interleaver may
    run other workers' steps.  The queue's own reads (the ``when >= cur_tick``
    check inside ``schedule``/``reschedule``) are not switch points: a
    time computed from "now" and scheduled at once is checked against the
    same "now", as in a real run where that window is a few instructions.
    So a schedule relative to ``cur_tick`` lands at a wrong tick but passes
    the check, and one at a *stored* tick fails it when another worker's pop
    moved ``cur_tick`` past that tick while the handler was running.
    """

    __slots__ = ("_quiet", "interleaver")

    def __init__(self, name: str, order: str, checks: bool) -> None:
        self.interleaver: _Interleaver | None = None
        self._quiet = False
        super().__init__(name, order=order, checks=checks)

    @property  # type: ignore[override]
    def cur_tick(self) -> int:
        interleaver = self.interleaver
        if interleaver is not None and not self._quiet:
            interleaver.preempt()
        return _BASE_CUR_TICK.__get__(self)

    @cur_tick.setter
    def cur_tick(self, value: int) -> None:
        _BASE_CUR_TICK.__set__(self, value)

    def schedule(self, event: Event, when: int) -> None:
        interleaver = self.interleaver
        if interleaver is not None:
            interleaver.preempt()
        self._quiet = True
        try:
            EventQueue.schedule(self, event, when)
        finally:
            self._quiet = False

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        interleaver = self.interleaver
        if interleaver is not None:
            interleaver.preempt()
        self._quiet = True
        try:
            EventQueue.reschedule(self, event, when, always)
        finally:
            self._quiet = False

    def deschedule(self, event: Event) -> None:
        interleaver = self.interleaver
        if interleaver is not None:
            interleaver.preempt()
        EventQueue.deschedule(self, event)

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

    threads = [threading.Thread(target=run, args=(w,), name=f"split-{w}", daemon=True) for w in range(workers)]
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
        "pop_ahead": Param(int, 0, "events a worker pops beyond the one it is about to execute", min=0, max=64),
        "stall_s": Param(float, 30.0, "threads: no event finished for this long -> deadlock", min=0.1, max=3600.0),
    }

    def validate(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> None:
        super().validate(spec, workers, options)
        if options.get("executor") == "threads" and options.get("pop_ahead", 0):
            raise ParamError(
                f"split option pop_ahead={options['pop_ahead']} is not allowed with executor=threads: 0"
                " (pop-ahead is modelled by the interleave executor)"
            )

    def expected_verdict(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> str | None:
        if spec.order not in self.orders:
            return None
        pop_ahead = options.get("pop_ahead", 0)
        if workers == 1 and pop_ahead == 0:
            return "exact"
        if options.get("executor", "interleave") != "interleave":
            return None  # real threads: the failure shows up as often as the machine allows
        busy_multicore = spec.workload == "multicore" and spec.params.get("requests_per_core", 0) >= 100
        if busy_multicore and workers >= 2 and options.get("checks", True):
            # Observed in every cell tried (see the module docstring): a time computed from "now" or
            # stored earlier, scheduled after another worker's pop moved cur_tick past it.
            return "causality"
        return None

    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        checks = options.get("checks", True)
        executor = options.get("executor", "interleave")
        pop_ahead = options.get("pop_ahead", 0)
        key_of = _lock_key_fn(options.get("lock_key", "name"))
        queue_class = _LockedQueue if executor == "threads" else _InterleavedQueue
        model, queue = start_single_queue(spec, queue_class, checks=checks, detect_races=workers > 1 or pop_ahead > 0)
        shared = _Shared(workers)
        started = time.perf_counter()
        steps = preemptions = 0
        if isinstance(queue, _LockedQueue):
            _threads(queue, shared, workers, key_of, options.get("stall_s", 30.0))
        else:
            assert isinstance(queue, _InterleavedQueue)
            gens = {w: _worker(w, queue, shared, key_of, pop_ahead) for w in range(workers)}
            interleaver = _Interleaver(model, queue, shared, gens, options.get("interleave_seed", 0))
            queue.interleaver = interleaver
            try:
                interleaver.run()
            finally:
                queue.interleaver = None
            steps, preemptions = interleaver.steps, interleaver.preemptions
        elapsed = time.perf_counter() - started
        record = collect(model, violations=queue.violations)
        stats = base_stats(workers)
        pops = sum(shared.pops)
        stats.update(
            events=record.events,
            batches=pops,
            mean_events_per_batch=1.0 if pops else 0.0,
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
