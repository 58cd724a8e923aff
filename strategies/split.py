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

* ``executor=interleave`` (``strategies/_split_interleaver.py``): one thread;
  at each step boundary a scheduler seeded with ``interleave_seed`` picks
  uniformly among the workers that can make progress and advances that one
  by one step.  Inside a handler, every read of "now" by model code
  (``queue.cur_tick``: ``Component.cur_tick``, ``clockEdge``, ``Link.send``)
  is a switch point too: with probability
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
with a recorder (never on in a measured run) and returns the steps that led to
a non-exact verdict (``strategies/_split_anatomy.py``): for ``causality`` the
pop that moved ``cur_tick``, the running handler and where its ``when`` came
from (replayed once more with the handler reading its own event's tick: an
unchanged ``when`` is a stored tick, a changed one ``cur_tick + delay``); for
``race`` the two workers and events in one component; for ``diverged`` the
schedule that produced the first divergence.  What the verdicts are for given
cells is asserted by tests/test_split.py and tests/test_conformance.py;
failure rates against ``preempt`` and real threads are measured by the
report's failure pages.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from tickpar.builtin.strategies._split_anatomy import split_anatomy
from tickpar.builtin.strategies._split_interleaver import SharedState, lock_key_function, set_up_interleaved_run

from tickpar.host.affinity import pinned, worker_cpus
from tickpar.kernel.eventq import Event, EventQueue, SchedulingError
from tickpar.kernel.params import Param, ParamError
from tickpar.kernel.simloop import start_single_queue
from tickpar.plugins import DeadlockError, Promise, RunSpec, Strategy, StrategyResult, base_stats
from tickpar.verify.oracle import Verdict, collect


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


def _threads(
    queue: _LockedQueue,
    shared: SharedState,
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


class Split(Strategy):
    name = "split"
    summary = "the research prototype: N workers pop under a queue lock, execute under a name/component mutex"
    engines = ("python", "native")  # the native engine has it built in (native/src)
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
            shared = SharedState(workers)
            started = time.perf_counter()
            key_of = lock_key_function(options.get("lock_key", "name"))
            try:
                _threads(queue, shared, workers, key_of, options.get("stall_s", 30.0))
            except SchedulingError as err:
                err.partial = collect(model, violations=queue.violations)  # type: ignore[attr-defined]
                raise
        else:
            model, iqueue, shared, interleaver = set_up_interleaved_run(spec, workers, options)
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

    def anatomy(
        self, spec: RunSpec, workers: int, options: dict[str, Any], verdict: Verdict
    ) -> list[dict[str, Any]] | None:
        """The steps that led to ``verdict``, from a recorded replay (interleave executor only)."""
        return split_anatomy(spec, workers, options, verdict)
