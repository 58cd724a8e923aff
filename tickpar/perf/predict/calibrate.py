"""The Python engine's cost microbenchmarks, measured in this process.

Each returns seconds (or a table of them) that :mod:`tickpar.perf.predict.costs` turns into a preset: the engine's
per-event cost, barrier rounds and window exchanges between ``P`` workers, messages, the work model's cost
per call, the GIL's release threshold and hand-off, and tick-barrier's batch machinery.
:func:`tickpar.perf.predict.prediction.calibrate` gathers them into the ``here`` calibration record.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import pickle
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tickpar.kernel.eventq import EventQueue
from tickpar.kernel.simloop import schedule_limit
from tickpar.native.engine import TB_CALIBRATION_SHAPE
from tickpar.perf.predict.costs import OVERLAP_MIN_CPU
from tickpar.plugins import BASELINE

if TYPE_CHECKING:
    from tickpar.kernel.model import Model

__all__ = [
    "calibrate_barrier",
    "calibrate_event_cost",
    "gil_release_bytes",
]


class _Ticker:
    """The smallest model there is: one component rescheduling one event each tick."""

    def __init__(self, events: int) -> None:
        from tickpar.kernel.model import Component, Model

        class Tick(Component):
            def __init__(self, model: Model) -> None:
                super().__init__(model, "ticker")
                self.ev = self.event("tick", self.on_tick)

            def init(self) -> None:
                self.schedule(self.ev, 1)

            def on_tick(self, _payload: object) -> None:
                self.schedule(self.ev, self.when + 1)

        self.model = Model(0)
        Tick(self.model)
        self.model.end_tick = events

    def run(self) -> float:
        queue = EventQueue("main")
        self.model.bind(queue)
        self.model.start()
        schedule_limit(queue, self.model.end_tick)
        started = time.perf_counter()
        queue.run()
        return time.perf_counter() - started


def calibrate_event_cost(events: int = 20_000, repeats: int = 3) -> float:
    """The sequential engine's per-event cost with no work (seconds, best of ``repeats``)."""
    return min(_Ticker(events).run() for _ in range(repeats)) / events


def calibrate_barrier(workers: int, rounds: int = 40) -> float:
    """Seconds per ``threading.Barrier(workers)`` round between ``workers`` threads."""
    if workers < 1:
        raise ValueError(f"workers={workers}: an int >= 1")
    barrier = threading.Barrier(workers)

    def loop() -> None:
        for _ in range(rounds + 1):
            barrier.wait()

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(workers - 1)]
    for t in threads:
        t.start()
    barrier.wait()  # everyone started
    started = time.perf_counter()
    for _ in range(rounds):
        barrier.wait()
    elapsed = time.perf_counter() - started
    for t in threads:
        t.join()
    return elapsed / rounds


# -- calibration -------------------------------------------------------------------------------
def work_cost(mode: str) -> tuple[float, float]:
    """``(per_call_s, per_us_s)`` of the work model ``mode``: best-of timings at 2 and 50 µs, a line through them."""
    from tickpar.kernel.work import make_work

    work, _ = make_work(mode)
    sizes = (2.0, 50.0)
    took = []
    for us in sizes:
        reps = max(20, int(2000 / us))
        best = math.inf
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(reps):
                work(us)
            best = min(best, (time.perf_counter() - started) / reps)
        took.append(best)
    per_us = max(0.0, (took[1] - took[0]) / (sizes[1] - sizes[0]))
    return max(0.0, took[0] - per_us * sizes[0]), per_us


def work_overlap(
    sizes_us: Sequence[float] = (3.0, 10.0, 30.0, 100.0, 300.0, 1000.0),
    min_cpu_available: float = OVERLAP_MIN_CPU, tries: int = 2, pause_s: float = 0.5,
) -> dict[str, list[float]]:  # fmt: skip
    """Per ``gil-release`` call size: a thread's time per call while a second thread makes the same calls, over
    one thread's alone (best of 3 each).  1 where the two overlap perfectly; about 2 where they do not at all.

    Each size is measured between two CPU-availability probes (:func:`tickpar.perf.timing.cpu_availability`),
    again after a pause where one saw less than ``min_cpu_available`` (up to ``tries`` times); the lower
    probe is recorded (``cpu_available``), and :func:`preset` leaves out a size measured below it.
    """
    from tickpar.kernel.work import make_work

    work, _ = make_work("gil-release")

    def calls(us: float, n: int) -> None:
        for _ in range(n):
            work(us)

    def both(us: float, n: int) -> float:
        other = threading.Thread(target=calls, args=(us, n), daemon=True)
        started = time.perf_counter()
        other.start()
        calls(us, n)
        other.join()
        return (time.perf_counter() - started) / n

    from tickpar.host.probe import cpu_availability

    out: dict[str, list[float]] = {"call_us": [], "alone_s": [], "beside_s": [], "inflation": [], "cpu_available": []}
    for us in sizes_us:
        n = max(20, int(20_000 / us))
        for attempt in range(tries):
            free = float(cpu_availability(0.05)["min"])
            alone = min(_timed(lambda us=us, n=n: calls(us, n)) for _ in range(3)) / n
            beside = min(both(us, n) for _ in range(3))
            free = min(free, float(cpu_availability(0.05)["min"]))
            if free >= min_cpu_available or attempt == tries - 1:
                break
            time.sleep(pause_s)  # another process wants a core: its figure would be the sharing, not the hand-off
        out["call_us"].append(float(us))
        out["alone_s"].append(alone)
        out["beside_s"].append(beside)
        out["inflation"].append(beside / alone if alone > 0 else 1.0)
        out["cpu_available"].append(free)
    return out


#: What :func:`gil_handoff`'s threads hold the GIL with: Python that updates objects of a working set far
#: larger than the caches, about an event's engine and handler cost, not a tight loop (which hides most of
#: the hand-off; figures in docs/measurements/2026-12-06-perf-comments.md).
HANDOFF_OBJECTS = 200_000
HANDOFF_UPDATES = 12


class _Churned:
    __slots__ = ("count", "last")

    def __init__(self) -> None:
        self.count = 0
        self.last = 0


def gil_handoff(
    calls_us: Sequence[float] = (3.0, 10.0, 30.0, 100.0, 300.0), budget_us: float = 60_000.0,
    min_cpu_available: float = OVERLAP_MIN_CPU, tries: int = 2, pause_s: float = 0.5,
) -> dict[str, Any]:  # fmt: skip
    """What two threads lose to the GIL's hand-offs: each loops "hold the GIL (Python), one ``gil-release`` call".

    Per call size ``r``: one thread's time per iteration alone (``alone_s``, ``h + r``), and beside a second
    thread doing the same (``beside_s``), best of 3; ``excess_s`` is what the second thread adds beyond the
    larger of ``h + r`` and ``2 h`` (both holds, serialised by the GIL): where a call is short the two threads
    alternate and each hand-off waits for the sleeping thread to wake (bench/gil_handoff.py shows the grid
    of holds and calls).  The hold is :data:`HANDOFF_UPDATES` updates of random objects of
    :data:`HANDOFF_OBJECTS` (``hold_s``, measured alone).  CPU availability is probed around each size as in
    :func:`work_overlap`.  The two threads are pinned as the thread strategies pin their workers
    (:mod:`tickpar.host.affinity`): unpinned, the excess varied with where the scheduler placed the threads
    (docs/measurements/2026-12-06-code-comments.md).  Empty where the GIL is off.
    """
    import random

    from tickpar.host.affinity import gil_disabled, pinned, worker_cpus
    from tickpar.host.probe import cpu_availability
    from tickpar.kernel.work import make_work

    if gil_disabled():
        return {}
    work, _ = make_work("gil-release")
    objects = [_Churned() for _ in range(HANDOFF_OBJECTS)]
    cpus = worker_cpus(2)  # None where the strategies leave their threads unpinned

    def loop(r: float, n: int, seed: int) -> None:
        pick = random.Random(seed).randrange
        size = len(objects)
        for _ in range(n):
            for _ in range(HANDOFF_UPDATES):
                o = objects[pick(size)]
                o.count += 1
                o.last = o.count
            if r:
                work(r)

    def iterations(r: float) -> int:  # about budget_us of loop alone
        return max(300, int(budget_us / (r + 5.0)))

    def alone(r: float) -> float:
        n = iterations(r)
        with pinned(cpus, 0):  # where a strategy's worker 0 runs
            return min(_timed(lambda: loop(r, n, 1)) for _ in range(3)) / n

    def second(r: float, n: int) -> None:
        with pinned(cpus, 1):
            loop(r, n, 2)

    def both(r: float) -> float:
        n = iterations(r)
        other = threading.Thread(target=second, args=(r, n), daemon=True)
        with pinned(cpus, 0):
            started = time.perf_counter()
            other.start()
            loop(r, n, 1)
            other.join()
            return (time.perf_counter() - started) / n

    hold = alone(0.0)
    out: dict[str, Any] = {"hold_s": hold, "call_us": [], "alone_s": [], "beside_s": [], "excess_s": [],
                           "cpu_available": []}  # fmt: skip
    for r in calls_us:
        for attempt in range(tries):
            free = float(cpu_availability(0.05)["min"])
            one = alone(r)
            two = min(both(r) for _ in range(3))
            free = min(free, float(cpu_availability(0.05)["min"]))
            if free >= min_cpu_available or attempt == tries - 1:
                break
            time.sleep(pause_s)
        out["call_us"].append(float(r))
        out["alone_s"].append(one)
        out["beside_s"].append(two)
        out["excess_s"].append(max(0.0, two - max(one, 2 * hold)))
        out["cpu_available"].append(free)
    return out


def tick_barrier_costs(repeats: int = 5) -> dict[str, Any]:
    """Tick-barrier's own overheads at two workers, from :data:`TB_CALIBRATION_SHAPE` (work none) run three ways.

    ``event_s``: per event of a parallel batch, the batch machinery's cost (two workers with the inline
    executor, which groups, defers and replays as the threads do but on one thread, against the plain
    sequential loop).  ``batch_s``: per parallel batch, the hand-off to the helper thread and back
    (threads against inline).  Best of ``repeats`` loops each; CPU availability probed around it.
    """
    from tickpar.host.probe import cpu_availability
    from tickpar.plugins.registry import get_registry
    from tickpar.runner import resolve_cell

    def best(strategy: str, workers: int, options: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        cell = resolve_cell("phold", TB_CALIBRATION_SHAPE, strategy, options, workers, seed=1, work="none")
        runner = get_registry().strategy(cell.strategy)()
        runs = [runner.run(cell.spec, cell.workers, dict(cell.options)).stats for _ in range(repeats)]
        return min(float(r["loop_s"]) for r in runs), runs[0]

    free = float(cpu_availability(0.05)["min"])
    plain, _ = best(BASELINE, 1, {})
    inline, stats = best("tick-barrier", 2, {"executor": "inline"})
    threads, _ = best("tick-barrier", 2, {"executor": "threads"})
    free = min(free, float(cpu_availability(0.05)["min"]))
    events, batches = int(stats["parallel_events"]), int(stats["parallel_batches"])
    return {
        "shape": dict(TB_CALIBRATION_SHAPE),
        "sequential_s": plain, "inline_s": inline, "threads_s": threads,
        "parallel_events": events, "parallel_batches": batches,
        "event_s": max(0.0, inline - plain) / max(events, 1),
        "batch_s": max(0.0, threads - inline) / max(batches, 1),
        "cpu_available": free,
    }  # fmt: skip


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _exchange_rounds(transport: Any, peers: Sequence[int], rounds: int) -> float:
    """``rounds`` window exchanges as an LP makes them: a packet to every peer, then one from every peer."""
    packet = ("data", [], 12345)
    started = time.perf_counter()
    for _ in range(rounds):
        for p in peers:
            transport.send(p, packet)
        for _ in peers:
            transport.recv(10.0)
    return (time.perf_counter() - started) / rounds


def measured_sync(exchange: Callable[[int], float], cores: int, tries: int = 3) -> dict[int, float]:
    """Seconds per window exchange at each ``P`` in ``2 .. cores`` (best of ``tries``; ``{1: 0.0}`` on one core):
    the one Python sync calibration, which :func:`tickpar.perf.predict.costs.fit_sync` fits (never oversubscribed)."""
    return {p: min(exchange(p) for _ in range(tries)) for p in range(2, cores + 1)} or {1: 0.0}


def thread_exchange(workers: int, rounds: int = 60) -> float:
    """Seconds per window exchange between ``workers`` LP threads (:class:`tickpar.pdes.transport.ThreadTransport`)."""
    from tickpar.pdes.transport import ThreadTransport

    if workers < 2:
        return 0.0
    group = ThreadTransport.group(workers)
    peers = [[q for q in range(workers) if q != p] for p in range(workers)]
    threads = [
        threading.Thread(target=_exchange_rounds, args=(group[p], peers[p], rounds + 1), daemon=True)
        for p in range(1, workers)
    ]
    for t in threads:
        t.start()
    _exchange_rounds(group[0], peers[0], 1)  # everyone started
    took = _exchange_rounds(group[0], peers[0], rounds)
    for t in threads:
        t.join(10)
    return took


def _socket_lp(index: int, socks: dict[int, Any], rounds: int) -> None:
    from tickpar.pdes.transport import SocketTransport

    _exchange_rounds(SocketTransport(index, socks), sorted(socks), rounds)


def process_exchange(workers: int, rounds: int = 60) -> float:
    """Seconds per window exchange between ``workers`` forked LPs over :class:`tickpar.pdes.transport.SocketTransport`
    (socket pairs, as ``conservative backend=processes`` wires them)."""
    import socket

    from tickpar.pdes.transport import SocketTransport

    if workers < 2:
        return 0.0
    pairs = {(i, j): socket.socketpair() for i in range(workers) for j in range(i + 1, workers)}
    socks: list[dict[int, Any]] = [{} for _ in range(workers)]
    for (a, b), (sa, sb) in pairs.items():
        socks[a][b], socks[b][a] = sa, sb
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_socket_lp, args=(p, socks[p], rounds + 1), daemon=True) for p in range(1, workers)]
    for proc in procs:
        proc.start()
    mine = SocketTransport(0, socks[0])
    _exchange_rounds(mine, sorted(socks[0]), 1)
    took = _exchange_rounds(mine, sorted(socks[0]), rounds)
    for proc in procs:
        proc.join(10)
    for sa, sb in pairs.values():
        sa.close()
        sb.close()
    return took


def threads_message(n: int = 20_000) -> float:
    """Seconds to hand one message to another LP's inbox under a lock and take it out."""
    box: deque[tuple[int, int, int, int]] = deque()
    lock = threading.Lock()
    msg = (3, 1000, 7, 1 << 41)
    started = time.perf_counter()
    for _ in range(n):
        with lock:
            box.append(msg)
        with lock:
            box.popleft()
    return (time.perf_counter() - started) / n


def pickled_message(n: int = 20_000) -> float:
    """Seconds to pickle and unpickle one message tuple (processes and MPI ship them pickled)."""
    msg = (3, 1000, (7, 11, 13), 1 << 41)
    dumps, loads = pickle.dumps, pickle.loads
    started = time.perf_counter()
    for _ in range(n):
        loads(dumps(msg))
    return (time.perf_counter() - started) / n


def waiter_runs(size: int, calls: int) -> int:
    """How often a thread waiting for the GIL ran while this one hashed ``size`` bytes ``calls`` times.

    The switch interval is set long (5 s) meanwhile, so the waiter never gets the GIL by a forced switch:
    only while a hash call releases it.  Not a timing: a count, near zero unless the hash releases it.
    """
    import hashlib
    import sys

    view = memoryview(bytes(range(256)) * 256)
    state = {"stop": False, "hits": 0}
    ready = threading.Event()

    def waiter() -> None:
        ready.set()
        while not state["stop"]:
            state["hits"] += 1
            time.sleep(0)  # lets the GIL go at once, so the hashing thread is never held up

    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    thread = threading.Thread(target=waiter, daemon=True)
    try:
        thread.start()
        ready.wait(5)
        time.sleep(0.001)
        before = state["hits"]
        sha256 = hashlib.sha256
        for _ in range(calls):
            sha256(view[:size]).digest()
        return int(state["hits"]) - int(before)
    finally:
        state["stop"] = True
        sys.setswitchinterval(old)
        thread.join(5)


def gil_release_bytes(largest: int = 1 << 16, calls: int = 4000, min_runs: int = 2, tries: int = 3) -> int | None:
    """The smallest buffer whose SHA-256 (the ``gil-release`` work model's call) releases the GIL, in bytes.

    Bisected over ``1 .. largest`` with :func:`waiter_runs`: a size releases it where a waiting thread
    ran at least ``min_runs`` times during ``calls`` hashes in any of ``tries`` attempts.  A call that
    holds the GIL never lets the waiter run, so a miss can only come from a waiter woken too late on a
    busy machine, hence several tries and not a majority.  ``None``: not even ``largest`` bytes did.
    """

    def releases(size: int) -> bool:
        return any(waiter_runs(size, calls) >= min_runs for _ in range(tries))

    if not releases(largest):
        return None
    lo, hi = 0, largest  # lo holds (or is 0), hi releases
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if releases(mid):
            hi = mid
        else:
            lo = mid
    return hi
