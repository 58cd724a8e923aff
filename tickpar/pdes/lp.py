"""The logical process (LP): one queue, the components of one partition, outboxes, and serving.

One :class:`LogicalProcess` owns one :class:`~tickpar.kernel.eventq.EventQueue` and the
components of its partition.  Links that cross LPs get :meth:`LogicalProcess.sink`
as their ``remote`` hook: the message goes into an outbox per destination LP and
leaves in one packet per destination per round (a window, a null-message round
or a quantum).  The receiver calls :meth:`LogicalProcess.deliver`, which calls
``link.deliver`` on its own model (links are named by ``link.id``, the same in
every process).

The LP does not decide *when* to run what: its synchronisation policy
(:mod:`tickpar.pdes.sync`) does, through the LP's public primitives
(:meth:`~LogicalProcess.serve` up to a tick,
:meth:`~LogicalProcess.take_outbox`, :meth:`~LogicalProcess.send`,
:meth:`~LogicalProcess.wait`, :meth:`~LogicalProcess.deliver`).  Every run
starts with a barrier (each LP sends every peer ``READY`` once it is built and
started), so ``loop_s`` is the synchronised execution alone.

Errors: an exception in an LP (a lookahead violation raised by the sink, a
scheduling error, a crash) is recorded (:mod:`tickpar.pdes.errors`) and the
policy tells the other LPs; every LP returns a result with ``error`` set.  A wait
longer than ``stall_s`` is a deadlock.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Protocol

from tickpar.kernel.eventq import Event, EventQueue, Priority
from tickpar.kernel.model import Component, Link, Model
from tickpar.pdes.errors import Aborted, describe_error
from tickpar.pdes.packets import ABORT, READY
from tickpar.pdes.plan import Plan
from tickpar.pdes.stamps import CountingQueue, inserted_earlier
from tickpar.pdes.transport import Transport
from tickpar.plugins import DeadlockError, LookaheadError
from tickpar.verify.oracle import OracleRecord, collect

__all__ = ["INF", "LPResult", "LogicalProcess"]

INF = math.inf
# (when, _BELOW) < (when', prio) exactly when when < when' (priorities are >= -128).
_BELOW = -1000
# End bound: (when, prio) < (end_tick, _END_PRIO) is simloop.before_end.
_END_PRIO = 100


@dataclass
class LPResult:
    """What one LP hands back: its oracle record, statistics, and an error description if it failed."""

    index: int
    record: OracleRecord
    stats: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None


class SyncPolicy(Protocol):
    """What :class:`LogicalProcess` needs from a synchronisation policy (see :mod:`tickpar.pdes.sync`)."""

    name: str
    checks_lookahead: bool

    def run(self, lp: LogicalProcess) -> None: ...

    def abort(self, lp: LogicalProcess) -> None: ...

    def abandon(self, lp: LogicalProcess) -> None: ...


class LogicalProcess:
    """One LP: its queue, its components, its outboxes; run by a synchronisation policy.

    ``model`` may be shared with other LPs (threads) or private to this
    process; ``own`` are the components this LP runs.  Call :meth:`attach` to
    bind the queue and the remote hooks, start the model, then :meth:`run`.
    ``sync`` is the policy object that drives it (the launchers pass the
    plan's, :func:`tickpar.pdes.sync.sync_policy`): an argument, because the
    policies are built on this module and it must not import them.  A policy
    with a ``prepare(lp)`` method gets the LP at the end of construction,
    before :meth:`attach` binds the queue (the optimistic policy puts its
    journaling queue there).
    """

    def __init__(self, plan: Plan, index: int, model: Model, transport: Transport, sync: SyncPolicy) -> None:
        self.plan = plan
        self.sync = sync
        self.index = index
        self.model = model
        self.transport = transport
        self.parts = plan.parts
        self.lp_of = plan.lp_of
        self.lookahead: float = INF if plan.lookahead is None else plan.lookahead
        #: The sink raises LookaheadError for a message sent less than the lookahead ahead (policy's choice).
        self.checks_lookahead: bool = getattr(sync, "checks_lookahead", True)
        #: Optional hook ``admit(link, when) -> when`` applied to every delivered message (e.g. clamping).
        self.admit: Callable[[Link, int], int] | None = None
        self.end_tick = plan.end_tick
        self.gem5 = plan.order == "gem5"
        self.queue: EventQueue = (
            CountingQueue(f"lp{index}", plan.order, index) if self.gem5 else EventQueue(f"lp{index}", order=plan.order)
        )
        self.own: list[Component] = [model.components[c] for c in plan.members(index)]
        self.peers = [p for p in range(plan.parts) if p != index]
        self.outbox: dict[int, list[tuple[Any, ...]]] = {p: [] for p in self.peers}
        #: The earliest ``when`` among the messages in the outboxes (INF when they are empty).
        self.out_min: float = INF
        self.running = False
        self.links = model.links
        self.pending: deque[tuple[int, Any]] = deque()
        self._recv = transport.recv
        self._stall = plan.stall_s or None
        # Stop events of serve() (canonical order): the window's end and the simulate() limit.
        self._window_stop = Event(name=f"lp{index}.window_end", priority=Priority.MAXIMUM, is_exit=True)
        self._end_stop = Event(name=f"lp{index}.simulate_limit", priority=Priority.SIM_EXIT, is_exit=True)
        self._executed = 0
        # statistics
        self.rounds = 0
        self.windows = 0
        self.messages = 0
        self.null_messages = 0
        self.packets = 0
        self.dropped = 0
        self.idle_s = 0.0
        self.loop_s = 0.0
        self.cpu_s = 0.0
        self.cross_ties = 0
        self.reorders = 0
        self.unresolved = 0
        #: Also check same-origin ties against the stamps (tests): counted in the two fields below.
        self.check_stamps = False
        self.same_origin_ties = 0
        self.stamp_disagreements = 0
        self.error: dict[str, Any] | None = None
        self.exception: BaseException | None = None
        prepare = getattr(sync, "prepare", None)
        if prepare is not None:
            prepare(self)

    # -- wiring ---------------------------------------------------------------------------
    def attach(self) -> None:
        """Put own components on this LP's queue; give links leaving this LP the remote sink."""
        for comp in self.own:
            comp.queue = self.queue
        lp_of, me = self.lp_of, self.index
        for link in self.links:
            if lp_of[link.src.id] == me and lp_of[link.dst.id] != me:
                link.remote = self.sink

    def sink(self, link: Link, when: int, payload: Any, source: int) -> None:
        """``Link.remote`` hook: check the lookahead, then queue the message for its LP."""
        q = self.queue
        if self.running and when < q.cur_tick + self.lookahead and self.checks_lookahead:
            raise LookaheadError(
                f"LP {self.index}: {link.src.name} -> {link.dst.name} (link {link.id}, latency {link.latency}) "
                f"sent at tick {q.cur_tick} for tick {when}, less than the lookahead {self.plan.lookahead} ahead"
            )
        end = self.end_tick
        if end is not None and when > end:
            # Never runs (link priorities are below SIM_EXIT): the single-queue run leaves it queued too.
            self.dropped += 1
            return
        box = self.outbox[self.lp_of[link.dst.id]]
        if self.gem5:
            box.append((link.id, when, payload, source, q.stamp(source)))  # type: ignore[attr-defined]
        else:
            box.append((link.id, when, payload, source))
        if when < self.out_min:
            self.out_min = when

    def take_outbox(self, dst: int) -> list[tuple[Any, ...]]:
        """The messages for ``dst`` gathered since the last call (counted in ``messages``); the box empties."""
        box = self.outbox[dst]
        # Always a fresh list: the sent one may be shared with the receiver (threads pass packets by reference).
        self.outbox[dst] = []
        self.messages += len(box)
        return box

    def deliver(self, src: int, msgs: list[tuple[Any, ...]]) -> float:
        """Insert messages from LP ``src`` into this LP's queue, in their order; the earliest tick inserted."""
        links = self.links
        admit = self.admit
        first = INF
        if self.gem5:
            q: CountingQueue = self.queue  # type: ignore[assignment]
            try:
                for lid, when, payload, source, stamp in msgs:
                    q.incoming = (stamp, src)
                    link = links[lid]
                    if admit is not None:
                        when = admit(link, when)
                    link.deliver(when, payload, source)
                    if when < first:
                        first = when
            finally:
                q.incoming = None
        elif admit is None:
            for lid, when, payload, source in msgs:
                links[lid].deliver(when, payload, source)
                if when < first:
                    first = when
        else:
            for lid, when, payload, source in msgs:
                link = links[lid]
                when = admit(link, when)
                link.deliver(when, payload, source)
                if when < first:
                    first = when
        return first

    # -- serving ----------------------------------------------------------------------------
    def local_next(self) -> float:
        """The tick of this LP's next event if it runs before the end, else INF.

        Model events have priorities below ``SIM_EXIT``, so one at ``end_tick``
        still runs: ``when <= end_tick`` is :func:`~tickpar.kernel.simloop.before_end` for them.
        """
        q = self.queue
        if q.empty():
            return INF
        when = q.next_tick()
        end = self.end_tick
        return when if end is None or when <= end else INF

    def bound(self, limit: float) -> tuple[float, int]:
        """The key below which events run: ``when < limit`` and before the simulate() limit."""
        bound = (limit, _BELOW)
        end = self.end_tick
        if end is not None and (end, _END_PRIO) < bound:
            return (end, _END_PRIO)
        return bound

    def serve(self, limit: float, head: float | None = None) -> bool:
        """Run this LP's events with ``when < limit`` that run before the simulate() limit; True if any ran.

        ``head``: :meth:`local_next` as the caller already knows it (saves
        looking at the queue again).

        Canonical order: one :meth:`EventQueue.run <tickpar.kernel.eventq.EventQueue.run>`
        (the sequential engine's own loop) up to a stop event, at ``(limit - 1,
        MAXIMUM)`` (after every model event of the tick before ``limit``: model
        priorities are below ``SIM_EXIT``) or at the simulate() limit ``(end_tick,
        SIM_EXIT)``, whichever comes first.  The stop moves ``cur_tick`` to its
        tick, as gem5's quantum barrier event moves every queue's ``curTick``.
        gem5 order: one event at a time, counting cross-LP ties.
        """
        if self.gem5:
            return self._serve_counting(self.bound(limit)) > 0
        if (self.local_next() if head is None else head) >= limit:
            return False
        q = self.queue
        end = self.end_tick
        if end is not None and end < limit:
            q.schedule(self._end_stop, end)
        elif limit != INF:
            q.schedule(self._window_stop, int(limit) - 1)
        q.run()
        return True

    def _serve_counting(self, bound: tuple[float, int]) -> int:
        q: CountingQueue = self.queue  # type: ignore[assignment]
        meta = q.meta
        exec_base = self.index << 40
        n = 0
        while True:
            key = q.next_key()
            if key is None or key >= bound:
                break
            mine = meta.pop(id(q.peek()), None)
            q.enter(mine[0] if mine is not None else None, key[0], key[1], exec_base + self._executed + n)
            q.service_one()
            n += 1
            if mine is None or q.next_key() != key:
                continue
            other = meta.get(id(q.peek()))
            if other is None or other[2] > mine[2]:
                continue  # queued after the served event was popped
            if other[1] == mine[1]:
                # Same origin: this LP inserted them in the single queue's order (a self-check of the stamps).
                if self.check_stamps:
                    self.same_origin_ties += 1
                    if inserted_earlier(mine[0], other[0]) is not False:
                        self.stamp_disagreements += 1
                continue
            self.cross_ties += 1
            earlier = inserted_earlier(mine[0], other[0])
            if earlier is None:
                self.unresolved += 1
            elif earlier:
                # The single queue would serve the later insertion (the other one) first.
                self.reorders += 1
        self._executed += n
        return n

    # -- communication ------------------------------------------------------------------------
    def send(self, dst: int, packet: tuple[Any, ...]) -> None:
        """Send ``packet`` to LP ``dst`` (counted in ``packets``)."""
        self.packets += 1
        self.transport.send(dst, packet)

    def wait(self) -> tuple[int, Any]:
        """The next packet from any peer, ``(src, packet)``; ``DeadlockError`` after ``stall_s`` seconds."""
        if self.pending:
            return self.pending.popleft()
        t0 = perf_counter()
        try:
            return self._recv(self._stall)
        except TimeoutError:
            raise DeadlockError(
                f"LP {self.index} waited {self.plan.stall_s:g} s for a packet from another LP (no progress)"
            ) from None
        finally:
            self.idle_s += perf_counter() - t0

    def poll(self) -> tuple[int, Any] | None:
        """The next packet if one is already here, else ``None``."""
        if self.pending:
            return self.pending.popleft()
        return self.transport.poll()

    def ready(self) -> None:
        """The start barrier: tell every peer this LP is started, and wait until every peer is.

        Packets that arrive early (from a peer already past the barrier) are
        kept for :meth:`wait`/:meth:`poll`.  An ``ABORT`` raises :class:`Aborted`.
        """
        for p in self.peers:
            self.transport.send(p, (READY,))
        waiting = set(self.peers)
        early: list[tuple[int, Any]] = []
        aborted = False
        while waiting:
            src, packet = self.wait()
            kind = packet[0]
            if kind == READY:
                waiting.discard(src)
            elif kind == ABORT:
                aborted = True
                waiting.discard(src)
            else:
                early.append((src, packet))
        self.pending.extend(early)
        self.idle_s = 0.0
        if aborted:
            raise Aborted

    # -- running ------------------------------------------------------------------------------
    def run(self) -> LPResult:
        """Pass the start barrier, run the policy to the end (or to an error); never raises."""
        try:
            self.ready()
        except Aborted:
            self.sync.abandon(self)
            return self._finish()
        except BaseException as exc:
            self.fail(exc)
            return self._finish()
        started = time.perf_counter()
        cpu_started = time.thread_time()
        self.running = True  # from here on the sink checks the lookahead (not during init)
        try:
            self.sync.run(self)
        except Aborted:
            pass
        except BaseException as exc:  # reported to the strategy, which raises it
            self.fail(exc)
        self.loop_s = time.perf_counter() - started
        self.cpu_s = time.thread_time() - cpu_started
        return self._finish()

    def _finish(self) -> LPResult:
        try:
            self.transport.finish()
        except BaseException as exc:
            if self.error is None:
                self.fail(exc)
        return self.result()

    def fail(self, exc: BaseException) -> None:
        """Record ``exc`` as this LP's error (the first one wins)."""
        if self.error is None:
            self.error = describe_error(exc, self.index)
            self.exception = exc

    def abort_start(self, exc: BaseException) -> LPResult:
        """The LP could not start (a component's ``init`` failed): tell the peers, take part in the ending."""
        self.fail(exc)
        if self.peers:
            try:
                self.sync.abort(self)
            except BaseException as err:  # the peers may be gone already
                self.fail(err)
        return self._finish()

    # -- results --------------------------------------------------------------------------------
    def result(self) -> LPResult:
        """This LP's record (its own components) and statistics."""
        record = collect(self.model, components=self.own, violations=self.queue.violations)
        stats = {
            "served": sum(c.count for c in self.own),
            "windows": self.windows,
            "rounds": self.rounds,
            "messages": self.messages,
            "null_messages": self.null_messages,
            "packets": self.packets,
            "dropped_after_end": self.dropped,
            "idle_s": self.idle_s,
            "loop_s": self.loop_s,
            "cpu_s": self.cpu_s,
            "gem5_cross_lp_ties": self.cross_ties,
            "gem5_tie_reorders": self.reorders,
            "gem5_tie_unresolved": self.unresolved,
        }
        policy_stats = getattr(self.sync, "stats", None)  # a policy's own figures (e.g. quantum's late events)
        if policy_stats is not None:
            stats.update(policy_stats())
        return LPResult(self.index, record, stats, self.error)
