"""Time Warp (Jefferson 1985): optimistic LPs that run ahead, roll back on a straggler, and commit below GVT.

:class:`OptimisticSync` is the ``optimistic`` synchronisation policy of an
LP (:mod:`tickpar.pdes.sync`).  Each LP serves its own queue in key order
without waiting for its inputs:

* **State saving.**  Before an event runs, the LP saves the state of the
  event's component (:meth:`tickpar.kernel.model.Component.save`: what it
  declares in ``state_attrs`` and the kernel's fields), and of every
  component a direct call enters during it (through the model's
  ``call_guard``).  The queue journals what the event does to it
  (:class:`tickpar.kernel.eventq.JournalQueue`: the event served, every
  schedule, reschedule and deschedule).  Messages to other LPs leave right
  after the event, one packet per destination, and the event's record keeps
  their source keys.  Message events are never recycled
  (:meth:`tickpar.kernel.model.Model.keep_messages`).
* **Rollback.**  A message whose key ``(when, priority, source)`` is below
  that of an event already processed is a *straggler*: the LP undoes every
  event processed after the first one above it, newest first (the queue's
  journal, then each component's earliest saved state), which puts them back
  in the queue, and sends an anti-message for every message they sent
  (aggressive cancellation).  The straggler then goes in, and the LP goes on.
* **Anti-messages.**  An anti-message names the source key of the message it
  cancels (a source key is unique: a re-execution that sends the message
  again sends it after the anti-message, on the same FIFO channel).  A
  message still queued is descheduled; one already processed is first
  rolled back.
* **GVT and fossil collection.**  :class:`~tickpar.pdes.gvt.MarkerGVT`
  rounds, started by LP 0 every ``gvt_interval`` of its events, and when it
  is idle (its window stops it, or nothing is left) and something changed or
  a peer asked (a peer asks every ``gvt_interval`` of its own events, and
  once per GVT when it is idle).  The events processed below GVT are
  committed: their records (saved states, journals, sent messages) are
  dropped.  GVT "nothing left" ends the run.
* **Bounded optimism.**  With ``window > 0`` an LP runs only events with
  ``when < GVT + window`` (ticks), as ROSS's and WARPED's time windows do;
  ``0`` is unbounded.
* **Errors while speculating.**  A handler may raise on a state that a
  straggler or an anti-message will undo (a fill for a request that was
  rolled back).  Under canonical order the LP takes the event back, holds
  the error and runs nothing at or after it; any rollback, annihilation or
  earlier event drops the hold (the event is retried).  The error is real
  once GVT, computed without the held event, passes it.  With a
  zero-latency link crossing LPs (GVT by tick) errors are raised at once.
* **Rollback-safety check** (``rollback_check``, ROSS's optimistic debug
  mode): every event is run, rolled back and run again.  After the rollback
  the component's whole attribute tree (:meth:`~tickpar.kernel.model.Component.fingerprint`)
  must equal what it was before; the two runs must change the same state and
  send the same messages.  Otherwise: :class:`~tickpar.plugins.UnsavedStateError`
  naming the component, the event, its tick and what escaped (verdict
  ``unsaved-state``).

Exactness: under canonical order each component's committed events are
exactly the sequential run's, in its order (every LP serves its queue in key
order; any event served before an input that precedes it is undone), so the
digests, counts and final states match; traces and counts see committed
events only, since a rollback restores them too.

What crosses LPs: with ``backend=threads`` the LPs share one model in memory,
each touching only its own components; only packets (messages,
anti-messages, GVT markers, reports and values) cross.  With processes,
each builds the model and runs its own partition: the same packets, pickled
over sockets.  Saved states never leave their LP.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from typing import Any

from tickpar.kernel.eventkeys import PRIO_BITS, key_when, pack_key
from tickpar.kernel.eventq import Event, JournalQueue
from tickpar.kernel.model import Component, Link
from tickpar.kernel.statesave import saved_bytes
from tickpar.pdes.errors import Aborted
from tickpar.pdes.gvt import INF, MIN_TIE, Key, MarkerGVT
from tickpar.pdes.lp import LogicalProcess
from tickpar.pdes.packets import ABORT, ANTI, CLOSE, GVT, GVT_REQUEST, MARK, MSG, READY, REPORT
from tickpar.pdes.plan import Plan
from tickpar.plugins import UnsavedStateError

__all__ = ["OptimisticSync"]

#: An event record: ``(prefix max key, when, journal, saved states, sent)``.  The prefix max is the
#: largest key processed up to and including this event (a same-tick priority inversion can serve a
#: lower key after a higher one); ``sent`` lists ``(dst LP, source key)`` of its messages, or None.
Record = tuple[Key, int, list[Any], dict[Component, Any], list[tuple[int, int]] | None]

#: Every this-many-th record is measured (bytes) for the saved-state estimate.
_SAMPLE_EVERY = 64
#: Under gem5 order ties are not comparable across LPs: messages, anti-messages and records compare by
#: ``(packed key, MIN_TIE)``, and a queued event reports ``(packed key, _QUEUED_TIE)``, just above: a message
#: still to come at a queued event's key is already in a channel (counted at MIN_TIE), since a message sent
#: from now on lands at least a tick later; so GVT can pass a held event's key without passing its anti-message.
_QUEUED_TIE = MIN_TIE + 1

_running = threading.local()


def _call_guard(caller: Component, peer: Component, method: str) -> None:
    """The model's ``call_guard``: save a component before a direct call first enters it in this event."""
    policy = getattr(_running, "policy", None)
    if policy is not None:
        policy.entering(peer)


class _Hold:
    """A speculative error: the event taken back, and the exception, until GVT passes it or something changes."""

    __slots__ = ("event", "exc", "gen", "key", "tie")

    def __init__(self, event: Event, tie: Any, key: Key, exc: BaseException, gen: int) -> None:
        self.event = event
        self.tie = tie
        self.key = key
        self.exc = exc
        self.gen = gen


class OptimisticSync:
    """The Time Warp policy for one LP (see the module docstring).

    ``plan.sync_args``: ``window`` (ticks ahead of GVT, 0: unbounded),
    ``gvt_interval`` (LP 0's events between rounds), ``rollback_check``
    (bool) and ``zero_cut`` (a zero-latency link crosses LPs: GVT by tick).
    """

    name = "optimistic"
    #: Messages may arrive in the receiver's past: that is what rollback is for.
    checks_lookahead = False

    def __init__(self, plan: Plan) -> None:
        args = plan.sync_args
        self.window = int(args.get("window", 0) or 0)
        self.gvt_interval = max(1, int(args.get("gvt_interval", 64)))
        self.checking = bool(args.get("rollback_check", False))
        self.zero_cut = bool(args.get("zero_cut", False))
        self.canonical = plan.order == "canonical"
        #: Hold speculative errors (see the module docstring) only where GVT can pass a held key.
        self.hold_errors = not self.zero_cut
        end = plan.end_tick
        #: Events run while their packed key is below this: ``when <= end_tick`` (model priorities < SIM_EXIT).
        self.end_key: Any = math.inf if end is None else (end + 1) << PRIO_BITS
        #: Events run while their packed key is below this: the end, and ``GVT + window`` (GVT starts at 0).
        self.limit_key: Any = self.end_key if not self.window else min(self.end_key, self.window << PRIO_BITS)
        #: The smallest tick of a link crossing LPs (0 with a zero-latency one; none: nothing ever arrives).
        self.lookahead: float = 0 if self.zero_cut else (math.inf if plan.lookahead is None else plan.lookahead)
        #: Events with a packed key below this are *safe*: once an LP knows GVT, every message it will still
        #: receive was sent after its sender's cut, by an event at GVT's tick or later, so it lands at
        #: ``GVT tick + lookahead`` or later (an anti-message too: it cancels such a message).  Safe events run
        #: without saving and commit at once; with ``window <= lookahead`` every event is safe.
        self.safe_key: Any = self._safe_key(0)
        self.lp: LogicalProcess | None = None
        self.queue: JournalQueue | None = None
        self.log: deque[Record] = deque()
        self.max_key: Key = (-1, MIN_TIE)
        self.commit_tick = 0
        self.commit_key: Key = (-1, MIN_TIE)
        #: Received messages not yet committed, by source key (for anti-messages).
        self.inbox: dict[int, Event] = {}
        self.snaps: dict[Component, Any] | None = None
        self.sent: list[tuple[Link, int, Any, int]] | None = None
        self.prints: dict[Component, Any] | None = None
        self.hold: _Hold | None = None
        self.hold_gen = 0
        #: The hold (its generation, -1: none) at this LP's cut of each round not yet announced.
        self.cut_holds: dict[int, int] = {}
        self.done = False
        self.changes = 0
        self.changes_at_round = -1
        self.asked = False
        self.requested = False
        self.since_round = 0
        self.gvt: MarkerGVT | None = None
        # statistics
        self.processed = 0
        self.committed = 0
        self.rolled_back = 0
        self.rollbacks = 0
        self.lengths: dict[int, int] = {}
        self.anti_sent = 0
        self.annihilated = 0
        self.stragglers = 0
        self.safe_events = 0
        self.held_errors = 0
        self.peak_snapshots = 0
        self.logged = 0
        self.sampled_bytes = 0
        self.sampled = 0

    # -- set-up -------------------------------------------------------------------------------------
    def prepare(self, lp: LogicalProcess) -> None:
        """Before the LP binds its queue: a journaling queue, one-shot messages, the direct-call guard."""
        lp.queue = JournalQueue(f"lp{lp.index}", order=lp.plan.order)
        lp.gem5 = False  # no tie stamps: the LP's gem5 tie counting belongs to its own serve()
        lp.model.keep_messages()
        lp.model.call_guard = _call_guard

    def _safe_key(self, gvt_tick: int) -> Any:
        bound = gvt_tick + self.lookahead
        return math.inf if bound == math.inf else int(bound) << PRIO_BITS

    def _key(self, event: Event) -> Key:
        """A message event's key, as a straggler or an anti-message compares it (see :meth:`_local_min`)."""
        source = event.source
        second = source if self.canonical and source is not None and source >= 0 else MIN_TIE
        return (pack_key(event.when, event.priority), second)

    # -- running ------------------------------------------------------------------------------------
    def run(self, lp: LogicalProcess) -> None:
        """Serve, speculate, roll back and commit until GVT says nothing is left (or a peer fails)."""
        _running.policy = self
        self.lp = lp
        self.queue = lp.queue  # type: ignore[assignment]
        self.gvt = MarkerGVT(lp.index, lp.peers, self._send, self._local_min, tick_only=self.zero_cut)
        try:
            if not lp.peers and not self.checking:
                self._alone(lp)
            else:
                self._start(lp)
                self._loop(lp)
                self._close(lp)
        except Aborted:
            raise
        except BaseException as exc:
            lp.fail(exc)
            self.abort(lp)
        finally:
            _running.policy = None

    def _alone(self, lp: LogicalProcess) -> None:
        """One LP: no message can come, so nothing is ever rolled back: serve it all, saving nothing."""
        before = sum(c.count for c in lp.own)
        lp.serve(math.inf)
        self.processed = self.committed = sum(c.count for c in lp.own) - before
        self.done = True

    def _start(self, lp: LogicalProcess) -> None:
        for link in lp.links:
            if link.remote is not None and lp.lp_of[link.src.id] == lp.index:
                link.remote = self.sink
        for p in lp.peers:  # what init() sent: never cancelled (init is not rolled back)
            box = lp.take_outbox(p)
            if box:
                self._send(p, (MSG, box))

    def _loop(self, lp: LogicalProcess) -> None:
        q = self.queue
        assert q is not None and self.gvt is not None
        gvt = self.gvt
        poll = lp.poll
        handle = self.handle
        process = self.process_checked if self.checking else self.process
        leader = lp.index == 0
        while not self.done:
            got = poll()
            while got is not None:
                handle(*got)
                if self.done:
                    return
                got = poll()
            head = q.head()
            if head is not None and head[0] < self.limit_key:
                hold = self.hold
                if hold is None or head[2] is not hold.event or head[1] != hold.tie:
                    self.hold = None
                    process(head)
                    self.since_round += 1
                    if leader:
                        # A peer's request waits for the interval too while LP 0 is busy: a round costs the
                        # busiest LP four packets, and LP 0 starts one itself whenever its window stops it.
                        if not gvt.collecting and self.since_round >= self.gvt_interval:
                            self._start_round()
                    elif self.since_round >= self.gvt_interval:
                        self.since_round = 0
                        self._send(0, (GVT_REQUEST,))
                    continue
            # Idle: nothing to run before the window's end (or the next event is held).
            if leader:
                if not gvt.collecting and (self.requested or self.changes != self.changes_at_round):
                    self._start_round()
                    continue
            elif not self.asked:
                self.asked = True
                self.since_round = 0
                self._send(0, (GVT_REQUEST,))
            handle(*lp.wait())

    def _close(self, lp: LogicalProcess) -> None:
        """The ending: each peer tells LP 0 it sends nothing more; LP 0 waits for all of them.

        A peer may have asked for a round just before it learnt the last GVT; LP 0 stays until that
        request (FIFO: before the peer's CLOSE) is in, so no peer ever sends to an LP that is gone.
        """
        if lp.index != 0:
            self._send(0, (CLOSE,))
            return
        waiting = set(lp.peers)
        while waiting:
            src, packet = lp.wait()
            if packet[0] == CLOSE:
                waiting.discard(src)
            elif packet[0] == ABORT:
                raise Aborted

    def _start_round(self) -> None:
        assert self.gvt is not None
        self.since_round = 0
        self.requested = False
        self.changes_at_round = self.changes
        value = self.gvt.start()
        if value is not None:
            self._new_gvt(self.gvt.round, value)

    def _send(self, dst: int, packet: tuple[Any, ...]) -> None:
        lp = self.lp
        assert lp is not None
        lp.packets += 1
        lp.transport.send(dst, packet)

    # -- events -------------------------------------------------------------------------------------
    def sink(self, link: Link, when: int, payload: Any, source: int) -> None:
        """``Link.remote`` for links leaving this LP while it runs: the message leaves after the event."""
        end = self.lp.end_tick  # type: ignore[union-attr]
        if end is not None and when > end:
            self.lp.dropped += 1  # type: ignore[union-attr]
            return  # never runs (the sequential run leaves it queued too)
        self.sent.append((link, when, payload, source))  # type: ignore[union-attr]

    def entering(self, peer: Component) -> None:
        """A direct call is about to enter ``peer``: save it first (once per event)."""
        snaps = self.snaps
        if snaps is not None and peer not in snaps:
            snaps[peer] = peer.save()
            if self.prints is not None:
                self.prints[peer] = peer.fingerprint()

    def process(self, head: tuple[int, Any, Event]) -> None:
        """Save, serve the head event with the queue journaling, send its messages, log it.

        An event below :attr:`safe_key` can never be rolled back: it runs without saving and commits at once.
        """
        key, tie, event = head
        q = self.queue
        if key < self.safe_key:
            self.sent = sent = []
            q.serve_next()  # type: ignore[union-attr]
            if self.inbox.get(event.source) is event:  # type: ignore[arg-type]
                del self.inbox[event.source]  # type: ignore[arg-type]
            self._safe(key, tie, sent)
            return
        comp = getattr(event, "component", None)
        snaps: dict[Component, Any] = {} if comp is None else {comp: comp.save()}
        self.snaps = snaps
        journal: list[Any] = []
        self.sent = sent = []
        q.journal = journal  # type: ignore[union-attr]
        before = q.cur_tick  # type: ignore[union-attr]
        try:
            q.serve_next()  # type: ignore[union-attr]
        except Exception as exc:
            q.journal = None  # type: ignore[union-attr]
            self.snaps = None
            self._take_back(journal, snaps, before)
            self._speculative_error(event, tie, key, exc)
            return
        q.journal = None  # type: ignore[union-attr]
        self.snaps = None
        self._log(key, tie, event, journal, snaps, sent)

    def _safe(self, key: int, tie: Any, sent: list[tuple[Link, int, Any, int]]) -> None:
        """A safe event ran: send its messages; it is committed (nothing to undo it with, nothing will)."""
        k = (key, tie) if self.canonical else (key, MIN_TIE)
        if k > self.max_key:
            self.max_key = k
        if sent:
            self._flush(sent)
        self.commit_key = self.max_key
        self.commit_tick = key_when(key)
        self.processed += 1
        self.committed += 1
        self.safe_events += 1
        self.changes += 1

    def _flush(self, sent: list[tuple[Link, int, Any, int]]) -> list[tuple[int, int]]:
        """Send an event's messages, one packet per destination LP; ``(dst, source)`` of each."""
        out = []
        by_dst: dict[int, list[tuple[int, int, Any, int]]] = {}
        lp_of = self.lp.lp_of  # type: ignore[union-attr]
        for link, when, payload, source in sent:
            dst = lp_of[link.dst.id]
            by_dst.setdefault(dst, []).append((link.id, when, payload, source))
            out.append((dst, source))
        for dst, msgs in by_dst.items():
            self._send(dst, (MSG, msgs))
        self.lp.messages += len(sent)  # type: ignore[union-attr]
        return out

    def _log(self, key: int, tie: Any, event: Event, journal: list[Any], snaps: dict[Component, Any],
             sent: list[tuple[Link, int, Any, int]]) -> None:
        k = (key, tie) if self.canonical else (key, MIN_TIE)
        if k > self.max_key:
            self.max_key = k
        out = self._flush(sent) if sent else None
        record = (self.max_key, key_when(key), journal, snaps, out)
        log = self.log
        log.append(record)
        self.processed += 1
        self.changes += 1
        if len(log) > self.peak_snapshots:
            self.peak_snapshots = len(log)
        self.logged += 1
        if self.logged % _SAMPLE_EVERY == 1:
            self.sampled_bytes += saved_bytes(snaps) + saved_bytes(journal) + saved_bytes(out)
            self.sampled += 1

    def _take_back(self, journal: list[Any], snaps: dict[Component, Any], cur_tick: int) -> None:
        """Undo one event that was served but not logged (it raised, or the check runs it twice)."""
        q = self.queue
        q.undo(journal)  # type: ignore[union-attr]
        for comp, saved in snaps.items():
            comp.restore(saved)
        q.repair([u[0] for u in journal])  # type: ignore[union-attr]
        q.cur_tick = cur_tick  # type: ignore[union-attr]

    def _speculative_error(self, event: Event, tie: Any, key: int, exc: Exception) -> None:
        if not self.hold_errors or isinstance(exc, UnsavedStateError):
            raise exc
        self.hold_gen += 1
        self.held_errors += 1
        self.hold = _Hold(event, tie, (key, tie) if self.canonical else (key, MIN_TIE), exc, self.hold_gen)
        if self.gvt is not None and self.gvt.value >= self.hold.key:  # cannot happen: GVT <= a pending key
            raise exc

    # -- rollback-safety check -------------------------------------------------------------------------
    def process_checked(self, head: tuple[int, Any, Event]) -> None:
        """Run the event, roll it back, compare the component with before, run it again, compare the runs."""
        key, tie, event = head
        q = self.queue
        comp = getattr(event, "component", None)
        if comp is None:
            self.process(head)
            return
        before_tick = q.cur_tick  # type: ignore[union-attr]
        snaps = {comp: comp.save()}  # first: a first save may switch a helper to its logging class
        self.prints = {comp: comp.fingerprint()}
        self.snaps = snaps
        journal: list[Any] = []
        self.sent = sent = []
        q.journal = journal  # type: ignore[union-attr]
        try:
            q.serve_next()  # type: ignore[union-attr]
        except Exception as exc:
            q.journal = None  # type: ignore[union-attr]
            self.snaps = None
            self.prints = None
            self._take_back(journal, snaps, before_tick)
            self._speculative_error(event, tie, key, exc)
            return
        q.journal = None  # type: ignore[union-attr]
        self.snaps = None
        first = self._outputs(snaps, journal, sent)
        prints = self.prints
        self.prints = None
        self._take_back(journal, snaps, before_tick)
        for c, before in prints.items():
            after = c.fingerprint()
            if after != before:
                name = next((k for k in before if before[k] != after.get(k)), "?")
                raise UnsavedStateError(
                    c.name, event.name, key_when(key),
                    f"attribute {name!r} is not what it was before the event after a rollback: "
                    f"the component's saved state (state_attrs / save_state) leaves it out",
                )
        snaps = {comp: comp.save()}
        self.snaps = snaps
        journal = []
        self.sent = sent = []
        q.journal = journal  # type: ignore[union-attr]
        try:
            q.serve_next()  # type: ignore[union-attr]
        finally:
            q.journal = None  # type: ignore[union-attr]
            self.snaps = None
        second = self._outputs(snaps, journal, sent)
        if second != first:
            what = next(k for k in first if first[k] != second[k])
            raise UnsavedStateError(
                comp.name, event.name, key_when(key),
                f"running it again after a rollback gave different {what}: the handler reads state "
                "that no saved state covers (module or class attributes, another component's)",
            )
        self._log(key, tie, event, journal, snaps, sent)

    @staticmethod
    def _outputs(snaps: dict[Component, Any], journal: list[Any], sent: list[Any]) -> dict[str, Any]:
        """What one run of an event did: the components' digests and states, the queue, the messages."""
        return {
            "state": [(c.name, c.count, c.digest, repr(c.state())) for c in snaps],
            "queue": [
                (e.name, e.scheduled, e.when, repr(getattr(e, "payload", None))) for e in (u[0] for u in journal)
            ],
            "messages": [(link.id, when, repr(payload), source) for link, when, payload, source in sent],
        }

    # -- packets ------------------------------------------------------------------------------------
    def handle(self, src: int, packet: tuple[Any, ...]) -> None:
        kind = packet[0]
        gvt = self.gvt
        assert gvt is not None
        if kind == MSG:
            self.receive(src, packet[1])
        elif kind == ANTI:
            self.annihilate(src, packet[1])
        elif kind == MARK:
            value = gvt.on_mark(src, packet[1])
            if value is not None:
                self._new_gvt(packet[1], value)
        elif kind == REPORT:
            value = gvt.on_report(src, packet[1], packet[2])
            if value is not None:
                self._new_gvt(packet[1], value)
        elif kind == GVT:
            gvt.learn(packet[2])
            self._new_gvt(packet[1], packet[2])
        elif kind == GVT_REQUEST:
            self.requested = True
        elif kind == ABORT:
            raise Aborted
        elif kind != READY:
            raise RuntimeError(f"LP {self.lp.index}: unexpected packet kind {kind} from LP {src}")  # type: ignore[union-attr]

    def receive(self, src: int, msgs: list[tuple[int, int, Any, int]]) -> None:
        """Messages from ``src``: roll back past a straggler, then queue each one."""
        links = self.lp.links  # type: ignore[union-attr]
        on_message = self.gvt.on_message  # type: ignore[union-attr]
        inbox = self.inbox
        canonical = self.canonical
        for lid, when, payload, source in msgs:
            link = links[lid]
            k = (pack_key(when, link.priority), source if canonical else MIN_TIE)
            on_message(src, k)
            if k < self.max_key:
                self.stragglers += 1
                self.rollback(k)
            inbox[source] = link.deliver(when, payload, source)
            if self.hold is not None and k < self.hold.key:
                self.hold = None  # it runs before the held event: retry that one after it
        self.changes += 1

    def annihilate(self, src: int, sources: list[int]) -> None:
        """Anti-messages from ``src``: each cancels its message, rolled back first if it was processed."""
        q = self.queue
        inbox = self.inbox
        for source in sources:
            event = inbox.pop(source)
            k = self._key(event)
            self.gvt.on_message(src, k)  # type: ignore[union-attr]
            if not event.scheduled:  # processed (and not committed: GVT is at most the anti-message's key)
                self.rollback(k)
            if self.hold is not None and event is self.hold.event:
                self.hold = None
            q.deschedule(event)  # type: ignore[union-attr]
            self.annihilated += 1
        q.repair()  # type: ignore[union-attr]
        self.changes += 1

    def rollback(self, bound: Key) -> None:
        """Undo every processed event from the first one whose key is ``>= bound``, newest first."""
        log = self.log
        q = self.queue
        earliest: dict[Component, Any] = {}
        events: list[Event] = []
        anti: dict[int, list[int]] = {}
        n = 0
        while log and log[-1][0] >= bound:
            _maxkey, _when, journal, snaps, sent = log.pop()
            q.undo(journal)  # type: ignore[union-attr]
            events.extend(u[0] for u in journal)
            earliest.update(snaps)  # older records overwrite newer ones: the earliest save wins
            if sent:
                for dst, source in sent:
                    anti.setdefault(dst, []).append(source)
            n += 1
        if not n:
            return
        for comp, saved in earliest.items():
            comp.restore(saved)
        q.repair(events)  # type: ignore[union-attr]
        # Back to the last event still done: a logged one, or a committed (or safe) one, whichever came later.
        if log and log[-1][0] > self.commit_key:
            self.max_key = log[-1][0]
            q.cur_tick = log[-1][1]  # type: ignore[union-attr]
        else:
            self.max_key = self.commit_key
            q.cur_tick = self.commit_tick  # type: ignore[union-attr]
        for dst, sources in anti.items():
            self._send(dst, (ANTI, sources))
            self.anti_sent += len(sources)
        self.rollbacks += 1
        self.rolled_back += n
        self.lengths[n] = self.lengths.get(n, 0) + 1
        self.changes += 1
        self.hold = None

    # -- GVT ----------------------------------------------------------------------------------------
    def _local_min(self) -> Key:
        """This LP's cut: the smallest key it still has to run (a held event left out: see the module doc)."""
        q = self.queue
        hold = self.hold
        self.cut_holds[self.gvt.round] = -1 if hold is None else hold.gen  # type: ignore[union-attr]
        if hold is None:
            head = q.head()  # type: ignore[union-attr]
            if head is None or head[0] >= self.end_key:
                return INF
            return (head[0], head[1]) if self.canonical else (head[0], _QUEUED_TIE)
        for event in q.pending():  # type: ignore[union-attr]
            if event is hold.event:
                continue
            key = self._key(event) if self.canonical else (pack_key(event.when, event.priority), _QUEUED_TIE)
            return INF if key[0] >= self.end_key else key
        return INF

    def _new_gvt(self, r: int, value: Key) -> None:
        """Round ``r``'s GVT: confirm a held error, commit below it, move the window, maybe finish.

        A held error is real when it was held, unchanged, at this LP's cut of the round and the round's
        GVT (which left it out) is above it: nothing that could change or cancel it can come any more.
        """
        hold = self.hold
        held_at_cut = self.cut_holds.pop(r, -1)
        for old in [k for k in self.cut_holds if k < r]:
            del self.cut_holds[old]
        if hold is not None and hold.gen == held_at_cut and value > hold.key:
            raise hold.exc
        self.commit(value)
        self.asked = False
        if value[0] >= self.end_key:
            self.done = True
            return
        tick = key_when(value[0])
        if tick > 0:
            self.safe_key = self._safe_key(tick)
        if self.window:
            limit = (tick + self.window) << PRIO_BITS
            self.limit_key = limit if limit < self.end_key else self.end_key

    def commit(self, gvt: Key) -> None:
        """Fossil collection: the events whose prefix key is below ``gvt`` can never be rolled back."""
        log = self.log
        inbox = self.inbox
        n = 0
        while log and log[0][0] < gvt:
            maxkey, when, journal, _snaps, _sent = log.popleft()
            served = journal[0][0] if journal else None
            if served is not None and inbox.get(served.source) is served:  # type: ignore[arg-type]
                del inbox[served.source]  # type: ignore[arg-type]
            if maxkey > self.commit_key:  # safe events may have run after it
                self.commit_key = maxkey
                self.commit_tick = when
            n += 1
        self.committed += n

    # -- endings ------------------------------------------------------------------------------------
    def abort(self, lp: LogicalProcess) -> None:
        """Tell every peer this LP failed; they stop at their next packet."""
        for p in lp.peers:
            try:
                lp.send(p, (ABORT, lp.error))
            except OSError:
                pass

    def abandon(self, lp: LogicalProcess) -> None:
        return None

    def stats(self) -> dict[str, Any]:
        """This LP's Time Warp figures (summed or merged over LPs by the strategy)."""
        per = self.sampled_bytes / self.sampled if self.sampled else 0.0
        return {
            "processed": self.processed,
            "committed": self.committed,
            "rolled_back": self.rolled_back,
            "rollbacks": self.rollbacks,
            "rollback_lengths": {str(k): v for k, v in sorted(self.lengths.items())},
            "anti_messages": self.anti_sent,
            "annihilated": self.annihilated,
            "stragglers": self.stragglers,
            "safe_events": self.safe_events,
            "held_errors": self.held_errors,
            "gvt_rounds": self.gvt.rounds if self.gvt is not None else 0,
            "peak_saved_snapshots": self.peak_snapshots,
            "peak_saved_bytes": int(self.peak_snapshots * per),
        }

