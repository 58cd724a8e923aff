"""Logical processes (LPs) for conservative parallel simulation, and the transports between them.

One :class:`LogicalProcess` owns one :class:`~tickpar.eventq.EventQueue` and the
components of its partition.  Links that cross LPs get :meth:`LogicalProcess.sink`
as their ``remote`` hook: the message goes into an outbox per destination LP and
leaves in one packet per destination per round (a window, or a null-message
round).  The receiver calls ``link.deliver`` on its own model (links are named
by ``link.id``, the same in every process).  The same LP code runs on three
transports: :class:`ThreadTransport` (queues between threads sharing one
model), :class:`SocketTransport` (socket pairs between processes, non-blocking,
so two LPs sending large packets to each other cannot deadlock) and
:class:`MPITransport` (mpi4py point-to-point, ``isend`` + matched probe).

Synchronisation (``sync``):

``window`` (YAWNS; gem5's ``sim_quantum`` barrier with the window placed at the
    global next event time).  Every round each LP sends every other LP one packet
    ``(DATA, messages, local next time)``, where the local next time is the
    smaller of its queue head (if it runs before the end) and the messages it
    sent; from the ``n`` values every LP computes the same global minimum ``T``
    and runs the events with ``when < T + lookahead``.  A message sent from an
    event at ``t >= T`` arrives at ``>= t + lookahead >= T + lookahead``: in the
    next window, inserted before its receiver runs anything at its tick, so the
    canonical order is reproduced exactly.  The run ends when ``T`` is infinite
    (nothing before the end anywhere, nothing in flight: every message has been
    delivered at the barrier).

``null-message`` (Chandy–Misra–Bryant).  Each input channel has a clock: the
    sender's promise that it sends nothing earlier.  An LP runs events with
    ``when < safe`` (``safe`` = the smallest input clock; *strictly* below it, so
    a message at exactly ``safe`` is still in time), then sends on each output
    channel its messages and the promise ``min(next local event, safe) +
    lookahead`` (a null message when there are no messages; sent only when the
    promise grew).  With an ``end_tick`` an LP is done when ``safe > end_tick``
    and nothing of its own runs before the end; it then closes its channels.
    Without one, global quiescence is detected with Safra's token algorithm
    (counts of sent minus received messages and colours, around the ring
    ``0 -> 1 -> ... -> 0``); LP 0 then broadcasts STOP.  Every LP ends by
    sending CLOSE to every other LP and draining until it has a CLOSE from each,
    so no packet is left unreceived (MPI needs this to finalise).

Errors: an exception in an LP (a lookahead violation raised by the sink, a
scheduling error, a crash) is reported, and the other LPs are told with an
ABORT packet (in the next window round, or at once in null-message mode);
every LP returns a result with ``error`` set.  A wait longer than ``stall_s``
is a deadlock.

gem5 order: LP queues are :class:`CountingQueue`\\ s, which stamp every
insertion with where it was made: the ``(when, priority)`` and execution id of
the event that was running (its *parent*), the insertion's number within that
execution, and up to :data:`STAMP_DEPTH` levels of the parent's own stamp.  From
two stamps :func:`inserted_earlier` tells the order in which a single queue
would have made the two insertions (parents in one bin run LIFO, so each
ancestor level flips the order).  When an event is served and the next one in
its ``(when, priority)`` bin was queued before it and came from another LP,
that is a *cross-LP tie*; it is a *reorder* when the single queue would have
inserted the served one first (gem5 serves a bin LIFO, so it would have served
the other first), and *unresolved* when the stamps run out of levels.  The
counts are taken along the parallel run's own trajectory.
"""

from __future__ import annotations

import math
import os
import pickle
import queue as queue_mod
import select
import socket
import struct
import time
import traceback
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tickpar.eventq import Event, EventQueue, SchedulingError
from tickpar.model import Component, Link, Model
from tickpar.oracle import OracleRecord, collect
from tickpar.plugins import DeadlockError, LookaheadError
from tickpar.simloop import before_end

__all__ = [
    "INF",
    "SYNCS",
    "CountingQueue",
    "LPResult",
    "LogicalProcess",
    "MPITransport",
    "Plan",
    "SocketTransport",
    "ThreadTransport",
    "Transport",
    "error_to_exception",
    "lp_main",
    "pick_error",
]

INF = math.inf
SYNCS = ("window", "null-message")

# Packet kinds (first element of every packet).
DATA, TOKEN, STOP, ABORT, CLOSE = range(5)
# (when, _BELOW) < (when', prio) exactly when when < when' (priorities are >= -128).
_BELOW = -1000
# End bound: (when, prio) < (end_tick, _END_PRIO) is simloop.before_end.
_END_PRIO = 100


# --------------------------------------------------------------------------------------------
# The plan: what every LP (thread, process or rank) must agree on.
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """The partition and synchronisation settings shared by all LPs (JSON-ready)."""

    parts: int
    lp_of: tuple[int, ...]
    lookahead: int | None
    """Ticks; ``None``: no link crosses LPs (each LP runs to the end on its own)."""
    end_tick: int | None
    sync: str
    order: str
    channels: tuple[tuple[int, int], ...]
    """``(src lp, dst lp)`` pairs that some link crosses."""
    stall_s: float = 120.0

    def inputs(self, lp: int) -> list[int]:
        return sorted({s for s, d in self.channels if d == lp})

    def outputs(self, lp: int) -> list[int]:
        return sorted({d for s, d in self.channels if s == lp})

    def members(self, lp: int) -> list[int]:
        return [c for c, p in enumerate(self.lp_of) if p == lp]

    def to_dict(self) -> dict[str, Any]:
        return {
            "parts": self.parts,
            "lp_of": list(self.lp_of),
            "lookahead": self.lookahead,
            "end_tick": self.end_tick,
            "sync": self.sync,
            "order": self.order,
            "channels": [list(c) for c in self.channels],
            "stall_s": self.stall_s,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(
            int(data["parts"]),
            tuple(int(x) for x in data["lp_of"]),
            None if data["lookahead"] is None else int(data["lookahead"]),
            None if data["end_tick"] is None else int(data["end_tick"]),
            data["sync"],
            data["order"],
            tuple((int(a), int(b)) for a, b in data["channels"]),
            float(data["stall_s"]),
        )


@dataclass
class LPResult:
    """What one LP hands back: its oracle record, statistics, and an error description if it failed."""

    index: int
    record: OracleRecord
    stats: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None


# --------------------------------------------------------------------------------------------
# Errors across process boundaries.
# --------------------------------------------------------------------------------------------
def _describe_error(exc: BaseException, lp: int) -> dict[str, Any]:
    if isinstance(exc, LookaheadError):
        return {"kind": "lookahead", "message": str(exc), "lp": lp}
    if isinstance(exc, SchedulingError):
        return {
            "kind": "scheduling",
            "message": str(exc),
            "lp": lp,
            "op": exc.op,
            "event": exc.event.name,
            "when": exc.when,
            "cur_tick": exc.cur_tick,
            "reason": exc.reason,
        }
    if isinstance(exc, DeadlockError):
        return {"kind": "deadlock", "message": str(exc), "lp": lp}
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return {"kind": "crash", "message": f"LP {lp}: {type(exc).__name__}: {exc}{where}", "lp": lp}


_ERROR_RANK = {"lookahead": 0, "scheduling": 0, "crash": 1, "deadlock": 2, "aborted": 3}


def pick_error(errors: Iterable[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The error that explains a failed run: the cause first (not the LPs that were only told to stop)."""
    found = [e for e in errors if e is not None]
    if not found:
        return None
    return min(found, key=lambda e: (_ERROR_RANK.get(e["kind"], 1), e.get("lp", 0)))


def error_to_exception(err: dict[str, Any]) -> BaseException:
    """The exception the strategy raises for an LP's error (the runner turns it into a verdict)."""
    kind = err["kind"]
    if kind == "lookahead":
        return LookaheadError(err["message"])
    if kind == "scheduling":
        return SchedulingError(err["op"], Event(name=err["event"]), err["when"], err["cur_tick"], err["reason"])
    if kind == "deadlock":
        return DeadlockError(err["message"])
    return RuntimeError(err["message"])


class _Aborted(Exception):
    """Another LP failed; this one stops."""


# --------------------------------------------------------------------------------------------
# gem5-order tie accounting.
# --------------------------------------------------------------------------------------------
#: Ancestor levels kept per insertion stamp (deeper ties are reported as unresolved).
STAMP_DEPTH = 8

Stamp = tuple[int, int, int, int, tuple[tuple[int, int, int, int], ...]]
"""``(parent when, parent priority, parent execution id, k, ancestors)``: where an insertion was made.

``k`` numbers the insertions made while the parent ran; ``ancestors`` are the
parent's own ``(when, priority, execution id, k)`` levels, nearest first.  At
``init`` (before anything runs) the parent is ``(-1, -1, -1)`` and ``k`` is the
event's canonical source key, which orders init insertions as
``Model.start`` does (component id, then the component's own sequence).
"""


def inserted_earlier(a: Stamp, b: Stamp) -> bool | None:
    """Whether the single-queue run makes insertion ``a`` before ``b``; ``None`` when the stamps cannot tell.

    Insertions are ordered by their parents' execution order; parents in the
    same ``(when, priority)`` bin run LIFO (gem5), i.e. in the reverse of their
    own insertion order, hence the flip at each ancestor level.
    """
    flip = False
    levels_a = ((a[0], a[1], a[2], a[3]), *a[4])
    levels_b = ((b[0], b[1], b[2], b[3]), *b[4])
    for x, y in zip(levels_a, levels_b, strict=False):
        if x[0] != y[0] or x[1] != y[1]:
            return ((x[0], x[1]) < (y[0], y[1])) != flip
        if x[2] == y[2]:
            if x[3] == y[3]:
                return None
            return (x[3] < y[3]) != flip
        flip = not flip
    return None


class CountingQueue(EventQueue):
    """An :class:`EventQueue` that stamps every insertion with where it was made (see :data:`Stamp`).

    ``meta`` maps a queued event (by ``id``) to ``(stamp, origin lp, insertion
    number)``.  The LP calls :meth:`enter` before serving each event; a
    message delivered from another LP carries the sender's stamp
    (:attr:`incoming`).
    """

    __slots__ = ("_ins", "_k", "base", "incoming", "lp", "meta")

    def __init__(self, name: str, order: str, lp: int) -> None:
        super().__init__(name, order=order)
        self.lp = lp
        #: (when, priority, execution id, ancestors) of the running event; None during init.
        self.base: tuple[int, int, int, tuple[tuple[int, int, int, int], ...]] | None = None
        self.incoming: tuple[Stamp, int] | None = None
        self.meta: dict[int, tuple[Stamp, int, int]] = {}
        self._ins = 0
        self._k = 0

    def stamp(self, source: int | None) -> Stamp:
        """The stamp of an insertion made now (by the running event, or at init)."""
        base = self.base
        if base is None:
            return (-1, -1, -1, source if source is not None else -1, ())
        self._k += 1
        return (base[0], base[1], base[2], self._k, base[3])

    def enter(self, stamp: Stamp | None, when: int, priority: int, exec_id: int) -> None:
        """The event about to run: its own insertion ``stamp`` becomes its children's first ancestor."""
        if stamp is None:
            anc: tuple[tuple[int, int, int, int], ...] = ()
        else:
            anc = ((stamp[0], stamp[1], stamp[2], stamp[3]), *stamp[4][: STAMP_DEPTH - 2])
        self.base = (when, priority, exec_id, anc)
        self._k = 0

    def _note(self, event: Event) -> None:
        self._ins += 1
        incoming = self.incoming
        if incoming is not None:
            self.meta[id(event)] = (incoming[0], incoming[1], self._ins)
        else:
            self.meta[id(event)] = (self.stamp(event.source), self.lp, self._ins)

    def schedule(self, event: Event, when: int) -> None:
        super().schedule(event, when)
        self._note(event)

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        super().reschedule(event, when, always)
        self._note(event)


# --------------------------------------------------------------------------------------------
# Transports.
# --------------------------------------------------------------------------------------------
class Transport(Protocol):
    """Point-to-point, FIFO per (source, destination) pair, any picklable object."""

    def send(self, dst: int, obj: Any) -> None: ...

    def recv(self, timeout: float | None) -> tuple[int, Any]:
        """Block for the next packet from any peer; ``TimeoutError`` after ``timeout`` seconds."""
        ...

    def poll(self) -> tuple[int, Any] | None:
        """The next packet if one is already here, else ``None``."""
        ...

    def finish(self) -> None:
        """Complete every send (called once, at the end)."""
        ...


class ThreadTransport:
    """One inbox (``queue.SimpleQueue``) per LP; packets are passed by reference."""

    def __init__(self, inboxes: list[queue_mod.SimpleQueue[tuple[int, Any]]], index: int) -> None:
        self.inboxes = inboxes
        self.index = index
        self.inbox = inboxes[index]

    @classmethod
    def group(cls, n: int) -> list[ThreadTransport]:
        inboxes: list[queue_mod.SimpleQueue[tuple[int, Any]]] = [queue_mod.SimpleQueue() for _ in range(n)]
        return [cls(inboxes, i) for i in range(n)]

    def send(self, dst: int, obj: Any) -> None:
        self.inboxes[dst].put((self.index, obj))

    def recv(self, timeout: float | None) -> tuple[int, Any]:
        try:
            return self.inbox.get(timeout=timeout)
        except queue_mod.Empty:
            raise TimeoutError from None

    def poll(self) -> tuple[int, Any] | None:
        try:
            return self.inbox.get_nowait()
        except queue_mod.Empty:
            return None

    def finish(self) -> None:
        return None


_HEADER = struct.Struct("!I")


class SocketTransport:
    """Length-prefixed pickles over non-blocking socket pairs, one per peer, driven by ``poll``.

    Sends never block: what the kernel does not take is buffered and written
    whenever the transport waits, so two LPs exchanging large packets make
    progress together.
    """

    def __init__(self, index: int, socks: dict[int, socket.socket]) -> None:
        self.index = index
        self.socks = socks
        self.poller = select.poll()
        self.peer_of: dict[int, int] = {}
        self.inbuf: dict[int, bytearray] = {}
        self.outbuf: dict[int, bytearray] = {}
        self.frames: deque[tuple[int, Any]] = deque()
        self.eof: set[int] = set()
        for peer, sock in socks.items():
            sock.setblocking(False)
            self.peer_of[sock.fileno()] = peer
            self.inbuf[peer] = bytearray()
            self.outbuf[peer] = bytearray()
            self.poller.register(sock.fileno(), select.POLLIN)

    def send(self, dst: int, obj: Any) -> None:
        data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        frame = _HEADER.pack(len(data)) + data
        buf = self.outbuf[dst]
        if buf:
            buf += frame
            return
        sock = self.socks[dst]
        try:
            sent = sock.send(frame)
        except BlockingIOError:
            sent = 0
        if sent < len(frame):
            buf += frame[sent:]
            self.poller.modify(sock.fileno(), select.POLLIN | select.POLLOUT)

    def _flush(self, peer: int) -> None:
        buf = self.outbuf[peer]
        sock = self.socks[peer]
        while buf:
            try:
                sent = sock.send(buf)
            except BlockingIOError:
                return
            del buf[:sent]
        if peer not in self.eof:
            self.poller.modify(sock.fileno(), select.POLLIN)

    def _read(self, peer: int) -> None:
        sock = self.socks[peer]
        buf = self.inbuf[peer]
        while True:
            try:
                chunk = sock.recv(1 << 20)
            except BlockingIOError:
                break
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.eof.add(peer)
                self.poller.unregister(sock.fileno())
                break
            buf += chunk
        while len(buf) >= 4:
            (size,) = _HEADER.unpack_from(buf)
            if len(buf) < 4 + size:
                break
            self.frames.append((peer, pickle.loads(bytes(buf[4 : 4 + size]))))
            del buf[: 4 + size]

    def _pump(self, timeout_ms: int | None) -> None:
        for fd, ev in self.poller.poll(timeout_ms):
            peer = self.peer_of[fd]
            if ev & (select.POLLIN | select.POLLERR | select.POLLHUP):
                self._read(peer)
            if ev & select.POLLOUT and peer not in self.eof:
                self._flush(peer)

    def recv(self, timeout: float | None) -> tuple[int, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.frames:
            if len(self.eof) == len(self.socks):
                raise ConnectionError(f"LP {self.index}: every peer closed its connection")
            if deadline is None:
                self._pump(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._pump(max(1, int(left * 1000)))
        return self.frames.popleft()

    def poll(self) -> tuple[int, Any] | None:
        if not self.frames:
            self._pump(0)
        return self.frames.popleft() if self.frames else None

    def finish(self) -> None:
        deadline = time.monotonic() + 30.0
        while any(self.outbuf[p] for p in self.outbuf if p not in self.eof):
            if time.monotonic() > deadline:
                raise TimeoutError(f"LP {self.index}: peers stopped reading")
            self._pump(100)

    def close(self) -> None:
        for sock in self.socks.values():
            sock.close()


class MPITransport:
    """mpi4py point-to-point on ``COMM_WORLD``: pickled ``isend``, matched probe + receive.

    A waiting rank polls (as MPICH itself does); with ``yield_cpu`` (more ranks
    than cores) it yields the CPU after every empty probe, so the rank it waits
    for can run.
    """

    TAG = 7

    def __init__(self, comm: Any, yield_cpu: bool = False) -> None:
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.index = comm.Get_rank()
        self.reqs: list[Any] = []
        self.yield_cpu = yield_cpu

    def send(self, dst: int, obj: Any) -> None:
        self.reqs.append(self.comm.isend(obj, dest=dst, tag=self.TAG))
        if len(self.reqs) > 256:
            self.reqs = [r for r in self.reqs if not r.Test()]

    def recv(self, timeout: float | None) -> tuple[int, Any]:
        comm, MPI = self.comm, self.MPI
        status = MPI.Status()
        msg = comm.improbe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status)
        if msg is None:
            deadline = None if timeout is None else time.monotonic() + timeout
            spins = 0
            pause = os.sched_yield if self.yield_cpu else None
            while msg is None:
                if pause is not None:
                    pause()
                msg = comm.improbe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status)
                spins += 1
                if deadline is not None and spins % 2048 == 0 and time.monotonic() > deadline:
                    raise TimeoutError
        return status.Get_source(), msg.recv()

    def poll(self) -> tuple[int, Any] | None:
        MPI = self.MPI
        status = MPI.Status()
        msg = self.comm.improbe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status)
        if msg is None:
            return None
        return status.Get_source(), msg.recv()

    def finish(self) -> None:
        self.MPI.Request.waitall(self.reqs)
        self.reqs = []


# --------------------------------------------------------------------------------------------
# The logical process.
# --------------------------------------------------------------------------------------------
class LogicalProcess:
    """One LP: its queue, its components, its outboxes, and the two synchronisation loops.

    ``model`` may be shared with other LPs (threads) or private to this
    process; ``own`` are the components this LP runs.  Call :meth:`attach` to
    bind the queue and the remote hooks, start the model, then :meth:`run`.
    """

    def __init__(self, plan: Plan, index: int, model: Model, transport: Transport) -> None:
        self.plan = plan
        self.index = index
        self.model = model
        self.transport = transport
        self.parts = plan.parts
        self.lp_of = plan.lp_of
        self.lookahead: float = INF if plan.lookahead is None else plan.lookahead
        self.end_tick = plan.end_tick
        self.gem5 = plan.order == "gem5"
        self.queue: EventQueue = (
            CountingQueue(f"lp{index}", plan.order, index) if self.gem5 else EventQueue(f"lp{index}", order=plan.order)
        )
        self.own: list[Component] = [model.components[c] for c in plan.members(index)]
        self.peers = [p for p in range(plan.parts) if p != index]
        self.outbox: dict[int, list[tuple[Any, ...]]] = {p: [] for p in self.peers}
        self.out_min: float = INF
        self.running = False
        self.links = model.links
        self._early: dict[int, deque[tuple[Any, ...]]] = {}
        # statistics
        self.served = 0
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
        if self.running and when < q.cur_tick + self.lookahead:
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

    def _deliver(self, src: int, msgs: list[tuple[Any, ...]]) -> None:
        links = self.links
        if self.gem5:
            q: CountingQueue = self.queue  # type: ignore[assignment]
            try:
                for lid, when, payload, source, stamp in msgs:
                    q.incoming = (stamp, src)
                    links[lid].deliver(when, payload, source)
            finally:
                q.incoming = None
        else:
            for lid, when, payload, source in msgs:
                links[lid].deliver(when, payload, source)

    # -- serving ----------------------------------------------------------------------------
    def _bound(self, limit: float) -> tuple[float, int]:
        """The key below which events run: ``when < limit`` and before the simulate() limit."""
        bound = (limit, _BELOW)
        end = self.end_tick
        if end is not None and (end, _END_PRIO) < bound:
            return (end, _END_PRIO)
        return bound

    def _serve(self, bound: tuple[float, int]) -> int:
        if self.gem5:
            return self._serve_counting(bound)
        q = self.queue
        next_key = q.next_key
        service_one = q.service_one
        n = 0
        while True:
            key = next_key()
            if key is None or key >= bound:
                break
            service_one()
            n += 1
        self.served += n
        return n

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
            q.enter(mine[0] if mine is not None else None, key[0], key[1], exec_base + self.served + n)
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
        self.served += n
        return n

    # -- running ------------------------------------------------------------------------------
    def run(self) -> LPResult:
        """Run to the end (or to an error) and return this LP's result; never raises."""
        started = time.perf_counter()
        cpu_started = time.thread_time()
        try:
            if self.parts == 1 or self.plan.sync == "window":
                self._run_window()
            else:
                self._run_null()
        except _Aborted:
            pass
        except BaseException as exc:  # reported to the strategy, which raises it
            self._fail(exc)
        try:
            self.transport.finish()
        except BaseException as exc:
            if self.error is None:
                self._fail(exc)
        self.loop_s = time.perf_counter() - started
        self.cpu_s = time.thread_time() - cpu_started
        return self.result()

    def _fail(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = _describe_error(exc, self.index)
            self.exception = exc

    def _wait(self) -> tuple[int, Any]:
        t0 = time.perf_counter()
        timeout = self.plan.stall_s or None
        try:
            return self.transport.recv(timeout)
        except TimeoutError:
            raise DeadlockError(
                f"LP {self.index} waited {self.plan.stall_s:g} s for a packet from another LP (no progress)"
            ) from None
        finally:
            self.idle_s += time.perf_counter() - t0

    def _send(self, dst: int, packet: tuple[Any, ...]) -> None:
        self.packets += 1
        self.transport.send(dst, packet)

    # window ---------------------------------------------------------------------------------
    def _exchange(self) -> float:
        """One barrier round: send every peer its messages and my next time; deliver; the global minimum."""
        q = self.queue
        key = q.next_key()
        mine = self.out_min
        if key is not None and before_end(key[0], key[1], self.end_tick) and key[0] < mine:
            mine = key[0]
        for p in self.peers:
            box = self.outbox[p]
            self.messages += len(box)
            self._send(p, (DATA, box, mine))
            self.outbox[p] = []
        self.out_min = INF
        got = self._gather_round()
        aborted = False
        gmin = mine
        for src in self.peers:
            packet = got[src]
            if packet[0] == ABORT:
                aborted = True
                continue
            if packet[1]:
                self._deliver(src, packet[1])
            if packet[2] < gmin:
                gmin = packet[2]
        if aborted:
            raise _Aborted
        return gmin

    def _gather_round(self) -> dict[int, tuple[Any, ...]]:
        """One packet from every peer (a fast peer's next-round packet waits in ``_early``)."""
        early = self._early
        got: dict[int, tuple[Any, ...]] = {}
        for p in self.peers:
            if early.get(p):
                got[p] = early[p].popleft()
        while len(got) < len(self.peers):
            src, packet = self._wait()
            if src in got:
                early.setdefault(src, deque()).append(packet)
            else:
                got[src] = packet
        return got

    def _run_window(self) -> None:
        lookahead = self.lookahead
        while True:
            try:
                gmin = self._exchange() if self.peers else self._local_min()
            except (_Aborted, DeadlockError, ConnectionError):
                raise
            except BaseException as exc:
                # A delivery failed after this round was complete: tell the peers in the next one.
                self._fail(exc)
                self._abort_round()
                return
            if gmin == INF:
                return
            self.running = True
            try:
                n = self._serve(self._bound(gmin + lookahead))
            except BaseException as exc:
                self._fail(exc)
                self._abort_round()
                return
            self.windows += 1
            if n:
                self.rounds += 1

    def _local_min(self) -> float:
        key = self.queue.next_key()
        if key is not None and before_end(key[0], key[1], self.end_tick):
            return key[0]
        return INF

    def _abort_round(self) -> None:
        """Tell every peer in place of this round's packet, and take theirs."""
        for p in self.peers:
            self._send(p, (ABORT, self.error))
        if self.peers:
            self._gather_round()

    # null messages ----------------------------------------------------------------------------
    def _run_null(self) -> None:
        q = self.queue
        end = self.end_tick
        lookahead = self.lookahead
        inputs = self.plan.inputs(self.index)
        outputs = self.plan.outputs(self.index)
        clocks: dict[int, float] = dict.fromkeys(inputs, 0)
        last: dict[int, float] = dict.fromkeys(outputs, -1)
        closed: set[int] = set()
        n = self.parts
        # Safra's termination detection (only without an end tick).
        count = 0  # data messages sent minus received
        black = False
        token: tuple[int, bool] | None = None
        round_open = False
        stop = False
        try:
            while True:
                safe = min(clocks.values()) if clocks else INF
                self.running = True
                if self._serve(self._bound(safe)):
                    self.rounds += 1
                key = q.next_key()
                promise = min(key[0] if key is not None else INF, safe) + lookahead
                for p in outputs:
                    box = self.outbox[p]
                    old = last[p]
                    if box or (promise > old and not (end is not None and old > end)):
                        if promise < old:
                            raise RuntimeError(f"LP {self.index}: promise to LP {p} went back ({old} -> {promise})")
                        self._send(p, (DATA, box, promise))
                        last[p] = promise
                        self.messages += len(box)
                        count += len(box)
                        if not box:
                            self.null_messages += 1
                        self.outbox[p] = []
                self.out_min = INF
                passive = key is None or not before_end(key[0], key[1], end)
                if end is not None:
                    if safe > end and passive:
                        break
                elif passive:
                    if self.index == 0:
                        if token is not None:
                            tq, tblack = token
                            token = None
                            round_open = False
                            if not tblack and not black and tq + count == 0:
                                for p in self.peers:
                                    self._send(p, (STOP,))
                                break
                        if not round_open:
                            self._send(1, (TOKEN, 0, False))
                            black = False
                            round_open = True
                    elif token is not None:
                        self._send((self.index + 1) % n, (TOKEN, token[0] + count, token[1] or black))
                        black = False
                        token = None
                # wait for at least one packet, then take everything already here
                packet_src, packet = self._wait()
                while True:
                    kind = packet[0]
                    if kind == DATA:
                        msgs = packet[1]
                        if msgs:
                            clock = clocks.get(packet_src, 0)
                            if msgs[0][1] < clock:
                                raise RuntimeError(
                                    f"LP {self.index}: message for tick {msgs[0][1]} from LP {packet_src} "
                                    f"below its promise {clock}"
                                )
                            self._deliver(packet_src, msgs)
                            count -= len(msgs)
                            black = True
                        if packet_src in clocks:
                            clocks[packet_src] = packet[2]
                    elif kind == TOKEN:
                        token = (packet[1], packet[2])
                    elif kind == STOP:
                        stop = True
                    elif kind == ABORT:
                        raise _Aborted
                    elif kind == CLOSE:
                        closed.add(packet_src)
                        if packet_src in clocks:
                            clocks[packet_src] = INF
                    nxt = self.transport.poll()
                    if nxt is None:
                        break
                    packet_src, packet = nxt
                if stop:
                    break
        except _Aborted:
            self._close(closed, aborting=True)
            raise
        except (DeadlockError, ConnectionError):
            raise
        except BaseException as exc:
            self._fail(exc)
            for p in self.peers:
                self._send(p, (ABORT, self.error))
            self._close(closed, aborting=True)
            return
        self._close(closed, aborting=False)

    def _close(self, closed: set[int], aborting: bool) -> None:
        """Send CLOSE to every peer and drain until every peer's CLOSE is in."""
        for p in self.peers:
            self._send(p, (CLOSE,))
        while len(closed) < len(self.peers):
            src, packet = self._wait()
            if packet[0] == CLOSE:
                closed.add(src)
            elif packet[0] == DATA and packet[1] and not aborting and self.error is None:
                raise RuntimeError(f"LP {self.index}: data from LP {src} after termination")

    # -- results --------------------------------------------------------------------------------
    def result(self) -> LPResult:
        record = collect(self.model, components=self.own, violations=self.queue.violations)
        stats = {
            "served": self.served,
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
        return LPResult(self.index, record, stats, self.error)


def lp_main(plan: Plan, index: int, model: Model, transport: Transport) -> LPResult:
    """One LP of a process or MPI backend, on a model private to this process: wire, start, run.

    Components of other LPs stay on a placeholder queue and never run.  If a
    component's ``init`` fails, the LP still takes part in the protocol, so the
    other LPs are told and stop.
    """
    foreign = EventQueue("foreign")
    for comp in model.components:
        comp.queue = foreign
    lp = LogicalProcess(plan, index, model, transport)
    lp.attach()
    try:
        model.start(components=lp.own)
    except BaseException as exc:
        lp._fail(exc)
        if lp.peers:
            if plan.sync == "window":
                lp._abort_round()
            else:
                for p in lp.peers:
                    lp._send(p, (ABORT, lp.error))
                lp._close(set(), aborting=True)
        transport.finish()
        return lp.result()
    return lp.run()


def process_main(
    spec_data: dict[str, Any],
    plan_data: dict[str, Any],
    index: int,
    socks: dict[int, socket.socket],
    conn: Any,
    inherited: list[Any],
) -> None:
    """Entry point of one worker process of the processes backend (importable, so ``spawn`` works too).

    ``inherited`` are the parent's other sockets and pipe ends that a ``fork``
    child got a copy of; closing them makes a dead LP visible as end-of-file.
    """
    for obj in inherited:
        try:
            obj.close()
        except OSError:
            pass
    from tickpar.oracle import failure_record
    from tickpar.plugins import RunSpec

    started = time.perf_counter()
    transport = SocketTransport(index, socks)
    try:
        spec = RunSpec.from_dict(spec_data)
        plan = Plan.from_dict(plan_data)
        model = spec.build_model()
        built = time.perf_counter()
        result = lp_main(plan, index, model, transport)
        result.stats["build_s"] = built - started
    except BaseException as exc:
        err = _describe_error(exc, index)
        result = LPResult(index, failure_record("crash", err["message"]), {}, err)
    try:
        conn.send(result)
    finally:
        conn.close()
        transport.close()
