"""The ``split`` strategy's interleave executor (``executor=interleave``) and its recorder.

Not a plugin (the registry skips files starting with ``_``): ``strategies/split.py`` imports it as
``tickpar.builtin.strategies._split_interleaver``.  split's module docstring says what the executor
promises (``Determinism:``) and how it works (``executor=interleave``); this module is the code: the state both
executors share (:class:`SharedState`, :func:`lock_key_function`), one simulated worker
(:func:`interleaved_worker`), the seeded step scheduler (:class:`Interleaver`), the queue whose reads of
``cur_tick`` are switch points (:class:`InterleavedQueue`), their set-up (:func:`set_up_interleaved_run`)
and the :class:`Recorder` that an anatomy replay (``strategies/_split_anatomy.py``) attaches.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

from tickpar.kernel.eventq import Event, EventQueue, SchedulingError
from tickpar.kernel.model import Model
from tickpar.kernel.simloop import start_single_queue
from tickpar.plugins import DeadlockError, RunSpec

#: One row of :attr:`Recorder.log`: ``(step, worker, kind, event, when, cur_tick, note)``.
LogRow = tuple[int, int, str, str, int, int, str]

# What a worker step yields: None (made progress, runnable again), WAITS_FOR_QUEUE
# (waits for an event to pop) or a lock key (waits for that mutex).
WAITS_FOR_QUEUE = ("queue",)


def lock_key_function(mode: str) -> Callable[[Event], object]:
    """The mutex key of an event: its name, or its component (events without one fall back to the name)."""
    if mode == "name":
        return lambda ev: ev.name

    def by_component(ev: Event) -> object:
        comp = getattr(ev, "component", None)
        return comp if comp is not None else ev.name

    return by_component


class SharedState:
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


class ProbeDone(Exception):
    """Raised by a probing replay when the probed handler reaches the probed operation."""


class Recorder:
    """What the interleave executor did, step by step: only in an anatomy replay, never in a measured run.

    ``log`` holds ``(step, worker, kind, event, when, cur_tick, note)`` rows:
    kinds ``pop``, ``handler`` (a handler starts), ``read`` (a handler reads a
    ``cur_tick`` other than its event's tick), ``schedule``/``reschedule``/
    ``deschedule``, ``race`` and ``fail``.  With ``probe=(handler index, op
    index)`` the replay lets that handler read its own event's tick as "now"
    and stops at that operation, keeping the ``when`` it asked for.
    """

    def __init__(self, probe: tuple[int, int] | None = None) -> None:
        self.log: list[LogRow] = []
        self.handlers = 0
        #: worker -> [handler index, event, operations so far, step it started]
        self.running: dict[int, list[Any]] = {}
        #: worker -> log index where its handler started, until its release step (it is inside till then)
        self.inside: dict[int, int] = {}
        self.probe = probe
        self.probe_when: int | None = None
        self.step: Callable[[], int] = lambda: 0
        self.failed: LogRow | None = None

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
            raise ProbeDone
        self.add(worker, kind, target.name, when, now, run[1].name)


def interleaved_worker(
    wid: int,
    queue: InterleavedQueue,
    shared: SharedState,
    key_of: Callable[[Event], object],
    pop_ahead: int,
    recorder: Recorder | None,
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
                    yield WAITS_FOR_QUEUE
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


class Interleaver:
    """The interleave executor: the workers' steps on one thread, in a seeded random order.

    At a step boundary the pick is uniform over the workers that can make
    progress.  Inside a handler, every read of "now" (:class:`InterleavedQueue`
    calls :meth:`preempt` before it) is a switch point: with probability
    ``preempt`` another worker's step runs there -- a pop, which moves
    ``cur_tick`` under the running handler, or a handler, nested -- and the
    draw repeats after it.  A suspended worker resumes only when the scheduler
    picks it again, so every interleaving is a real one.
    """

    def __init__(
        self,
        model: Model,
        queue: InterleavedQueue,
        shared: SharedState,
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
            elif wait is WAITS_FOR_QUEUE:
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


class InterleavedQueue(EventQueue):
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
    while the handler was running.  A :class:`Recorder`, when attached,
    sees every read and operation.
    """

    __slots__ = ("_quiet", "interleaver", "recorder")

    def __init__(self, name: str, order: str, checks: bool) -> None:
        self.interleaver: Interleaver | None = None
        self.recorder: Recorder | None = None
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


def set_up_interleaved_run(
    spec: RunSpec, workers: int, options: dict[str, Any], recorder: Recorder | None = None
) -> tuple[Model, InterleavedQueue, SharedState, Interleaver]:
    """Build the model and set up an interleaved run (not started): what :meth:`Split.run` and replays share."""
    pop_ahead = options.get("pop_ahead", 0)
    model, queue = start_single_queue(
        spec, InterleavedQueue, checks=options.get("checks", True), detect_races=workers > 1 or pop_ahead > 0
    )
    shared = SharedState(workers)
    key_of = lock_key_function(options.get("lock_key", "name"))
    gens = {w: interleaved_worker(w, queue, shared, key_of, pop_ahead, recorder) for w in range(workers)}
    interleaver = Interleaver(
        model, queue, shared, gens, options.get("interleave_seed", 0), options.get("preempt", 0.5)
    )
    queue.interleaver = interleaver
    queue.recorder = recorder
    if recorder is not None:
        recorder.step = lambda: interleaver.steps
    return model, queue, shared, interleaver

