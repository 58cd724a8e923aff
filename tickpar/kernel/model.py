"""The model API that workloads are written in: components, named events, links, direct calls.

A :class:`Component` is gem5's SimObject: a unique hierarchical name
(``system.cpu0.dcache``), an integer id, its own state and its own seeded RNG,
and any number of named events.  It is also the *context* its handlers run
in: a handler is a method ``handler(self, payload)`` that reads

* ``self.cur_tick``: the tick of the queue the component is bound to, i.e.
  what gem5 code gets from ``curTick()``.  A strategy that moves that clock
  early makes model code see the wrong "now", exactly as in gem5;
* ``self.when``: the tick of the event being processed;
* ``self.schedule/reschedule/deschedule``: its own long-lived events;
* ``self.send(link, payload, delay)``: a message to a peer through a
  :class:`Link` with a latency (ticks), received ``latency + delay`` after
  ``cur_tick``;
* ``self.call(peer, method, *args)``: a same-tick direct call into a peer
  (gem5's port calls), declared with :meth:`Model.connect_direct`;
* ``self.work(us)``: synthetic work (see :mod:`tickpar.kernel.work`);
* ``self.rng``: the component's own ``random.Random``.

Everything a component processes is folded into its digest in order:
``(when, priority, event-name id, payload)`` per event, and
``(when, "call", method id, args)`` per direct call received; the oracle adds
the final :meth:`Component.state`.  The fold (:mod:`tickpar.kernel.digests`) keeps
distinct values and distinct types apart (``-1``/``-2``, ``1``/``1.0``/``True``)
and is the same in every process and under every ``PYTHONHASHSEED``, which is
what lets process and MPI backends be compared with a threaded run.  Payloads
and state are built from ints, floats, bools, strs, bytes, ``None`` and tuples
of them; a plain non-negative int payload (below ``2**60``) is the fast case.

Who is inside a component is the component's own business:
:meth:`Component.claim`/:meth:`Component.release` (and :attr:`Component.occupant`)
are what the race guard, strategies' workers and direct calls use, and a
strategy that decides ownership itself installs :attr:`Model.call_guard`,
which then checks every direct call instead of the worker-occupancy test.

For strategies that roll back (``optimistic``, Time Warp), a component declares
its state: ``state_attrs``, the names of the attributes its handlers change
(or :meth:`Component.save_state`/:meth:`Component.restore_state`).
:meth:`Component.save` takes that and the kernel's own fields (digest, count,
``when``, RNG, source sequence, named events' payloads), :meth:`Component.restore`
puts it back (rules: :mod:`tickpar.kernel.statesave`).  Nothing on the event
path reads any of it: a run that does not roll back never pays for it.
:meth:`Model.keep_messages` stops recycling message events, so a rolled-back
message can be queued again as the same object.

A model is built by a workload plugin as a pure function of (params, seed);
strategies then :meth:`Model.bind` components to event queues and call
:meth:`Model.start`, which runs every component's :meth:`Component.init` in
id order (gem5's ``init``/``startup``) to schedule the first events.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from threading import get_ident
from time import perf_counter
from typing import Any, ClassVar

from tickpar.kernel import snapshot, statesave
from tickpar.kernel.digests import NAME_ID_BITS, event_id, fold_record
from tickpar.kernel.eventq import Event, EventQueue, Priority, canonical_source

__all__ = [
    "Component",
    "GuardedMessageEvent",
    "GuardedModelEvent",
    "Link",
    "MessageEvent",
    "Model",
    "ModelEvent",
    "Priority",
    "Race",
    "derive_seed",
]

_CALL_PRIORITY = -129  # below any event priority: marks a direct call in the digest
_COMPACT = (1 << 30) - 1  # ticks and int payloads below this fold inline; the rest through fold_record


def derive_seed(seed: int, name: str) -> int:
    """A stable 64-bit seed for ``name`` under the run seed (same in every process)."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


@dataclass(frozen=True)
class Race:
    """Two workers inside one component at once (detected when the second one enters)."""

    component: str
    event: str
    when: int
    detail: str


class ModelEvent(Event):
    """A named event owned by a component; ``process`` records it and calls the handler."""

    __slots__ = ("component", "eid", "handler", "payload")

    def __init__(
        self,
        component: Component,
        name: str,
        handler: Callable[[Any], object],
        priority: int = Priority.DEFAULT,
    ) -> None:
        if int(priority) >= Priority.SIM_EXIT:
            raise ValueError(f"event {name}: priority {int(priority)} must be below SIM_EXIT (100)")
        super().__init__(None, name, priority)
        self.component = component
        self.handler = handler
        self.payload: Any = 0
        #: The event's name and priority as one digest lane (they never change; see tickpar.kernel.digests).
        self.eid = event_id(component.model.name_id(name), self._priority)

    def process(self) -> None:
        # The per-event hot path: record (when, priority, name id, payload), then run the handler.
        comp = self.component
        when = self._when
        payload = self.payload
        comp.when = when
        comp.count += 1
        # A fast record (tickpar.kernel.digests); the bound is one CPython digit, so the compares stay specialised.
        if type(payload) is int and -1 < payload < _COMPACT > when > -1:
            comp.digest = hash((comp.digest, when, self.eid, payload))
        else:
            comp.digest = fold_record(comp.digest, when, self.eid, payload)
        self.handler(payload)


class MessageEvent(ModelEvent):
    """A one-shot event delivering a link message, recycled through its link (gem5 AutoDelete).

    It returns itself to the link's free list at the end of ``process`` rather
    than through the kernel's ``release`` hook: one Python call less per message.
    """

    __slots__ = ("_free", "link")

    def __init__(self, link: Link) -> None:
        super().__init__(link.dst, link.event_name, link.handler, link.priority)
        self.link = link
        self._free = link._free

    def process(self) -> None:
        comp = self.component
        when = self._when
        payload = self.payload
        comp.when = when
        comp.count += 1
        # A fast record (tickpar.kernel.digests); the bound is one CPython digit, so the compares stay specialised.
        if type(payload) is int and -1 < payload < _COMPACT > when > -1:
            comp.digest = hash((comp.digest, when, self.eid, payload))
        else:
            comp.digest = fold_record(comp.digest, when, self.eid, payload)
        self.handler(payload)
        self._free.append(self)


class _RaceGuard:
    """Mixin for events of models run by several workers: detect two workers in one component."""

    __slots__ = ()

    def process(self) -> None:
        comp = self.component  # type: ignore[attr-defined]
        model = comp.model
        me = model.worker_id()
        occupant = comp.claim(me)
        if occupant is not None and occupant != me:
            model.note_race(comp, self, f"worker {me} entered while worker {occupant} was inside")
        try:
            super().process()  # type: ignore[misc]
        finally:
            if occupant is None:
                comp.release()


class _Traced:
    """Mixin for events of traced models: append each event to its component's trace first."""

    __slots__ = ()

    def process(self) -> None:
        self.component.trace.append((self._when, self._priority, self._name, self.payload))  # type: ignore[attr-defined]
        super().process()  # type: ignore[misc]


class GuardedModelEvent(_RaceGuard, ModelEvent):
    """A :class:`ModelEvent` with race detection (models built with ``detect_races=True``)."""

    __slots__ = ()


class GuardedMessageEvent(_RaceGuard, MessageEvent):
    """A :class:`MessageEvent` with race detection."""

    __slots__ = ()


class _DagRecorded:
    """Mixin for models that record their event DAG (for :mod:`tickpar.perf.predict.bounds`).

    Each processed event appends ``(component id, when, priority, source key,
    first seq, last seq, cost_s)``.  The source key says who scheduled it; the
    seq range says which source keys the event itself issued, so the parent of
    an event with source ``(c, s)`` is the event of component ``c`` whose range
    contains ``s`` (none: scheduled by ``init()`` or inside a direct call).
    """

    __slots__ = ()

    def process(self) -> None:
        # Read the event's own fields before the handler runs: a handler may reschedule this very
        # event (a CPU's tickEvent, a port's send event) and a message event is recycled at the end
        # of process(), either of which overwrites when, priority and source.
        comp = self.component  # type: ignore[attr-defined]
        first = comp._seq
        key = (comp.id, self._when, self._priority, self.source)  # type: ignore[attr-defined]
        started = perf_counter()
        super().process()  # type: ignore[misc]
        cost = perf_counter() - started
        comp.model.dag.append((*key, first, comp._seq, cost))  # type: ignore[attr-defined]


def _event_classes(
    detect_races: bool, trace: bool, record_dag: bool = False
) -> tuple[type[ModelEvent], type[MessageEvent]]:
    """The (named, message) event classes for a model: the hot path pays only for what it uses."""
    named: type[ModelEvent] = GuardedModelEvent if detect_races else ModelEvent
    message: type[MessageEvent] = GuardedMessageEvent if detect_races else MessageEvent
    if trace:
        named, message = _TRACED[named], _TRACED[message]
    if record_dag:
        named = type("Dag" + named.__name__, (_DagRecorded, named), {"__slots__": ()})
        message = type("Dag" + message.__name__, (_DagRecorded, message), {"__slots__": ()})
    return named, message


_TRACED: dict[type, type] = {
    cls: type("Traced" + cls.__name__, (_Traced, cls), {"__slots__": ()})
    for cls in (ModelEvent, MessageEvent, GuardedModelEvent, GuardedMessageEvent)
}


class _Discard:
    """A free list that keeps nothing (the pool of one-shot message events)."""

    __slots__ = ()

    def append(self, _event: object) -> None:
        return None


_DISCARD = _Discard()


class _OneShot:
    """Mixin for message events of models that do not recycle them (:meth:`Model.keep_messages`)."""

    __slots__ = ()

    def __init__(self, link: Link) -> None:
        super().__init__(link)  # type: ignore[call-arg]
        self._free = _DISCARD  # type: ignore[assignment]


class Link:
    """A one-way connection from ``src`` to a handler of ``dst`` with a latency in ticks.

    ``send`` schedules the message on ``dst``'s queue at
    ``src.cur_tick + latency + delay``.  A strategy that puts ``src`` and ``dst``
    in different logical processes sets :attr:`remote` to its own sink, which
    receives ``(link, when, payload, source)`` and later calls :meth:`deliver`
    on the receiving side.
    """

    __slots__ = ("_free", "dst", "event_name", "handler", "handler_name", "id", "latency", "priority", "remote", "src")

    def __init__(
        self,
        link_id: int,
        src: Component,
        dst: Component,
        handler_name: str,
        latency: int,
        priority: int,
        event_name: str,
        pool: list[MessageEvent] | None = None,
    ) -> None:
        self.id = link_id
        self.src = src
        self.dst = dst
        self.latency = latency
        self.handler_name = handler_name
        self.handler = getattr(dst, handler_name)
        self.event_name = event_name
        self.priority = int(priority)
        self.remote: Callable[[Link, int, Any, int], None] | None = None
        #: Recycled message events, shared by every link with the same (dst, handler, priority, name).
        self._free: list[MessageEvent] = [] if pool is None else pool

    def send(self, payload: Any = 0, delay: int = 0) -> None:
        """Send from ``src`` (called by ``src``'s handler code); see :meth:`Component.send`."""
        src = self.src
        when = src.queue.cur_tick + self.latency + delay
        seq = src._seq = src._seq + 1
        if self.remote is None:
            # deliver(), inlined: this is the per-event hot path of every message.
            try:
                event = self._free.pop()  # one call, atomic under the GIL: the pool may have several senders
            except IndexError:
                event = src.model.message_class(self)
            event.payload = payload
            # EventQueue.post: stamp the source and schedule in one call (the queue's plain case inlined there).
            # ``+`` is ``|`` here (the base's low SRC_BITS are 0) and, unlike ``|``, specialised by CPython 3.11.
            self.dst.queue.post(event, when, src._source_base + seq)
        else:
            self.remote(self, when, payload, src._source_base + seq)

    def deliver(self, when: int, payload: Any, source: int) -> MessageEvent:
        """Schedule the message on ``dst``'s queue (sender side for local links); returns its event."""
        try:
            event = self._free.pop()
        except IndexError:
            event = self.dst.model.message_class(self)
        event.payload = payload
        self.dst.queue.post(event, when, source)
        return event

    def __repr__(self) -> str:
        return f"<Link {self.id} {self.src.name}->{self.dst.name}.{self.handler_name} lat={self.latency}>"


class Component:
    """gem5's SimObject, and the context its handlers run in (see the module docstring).

    Subclasses set up state and events in ``__init__`` (after calling
    ``super().__init__``), schedule their first events in :meth:`init`, and
    summarise their final state in :meth:`state`.  ``state_attrs`` declares
    which attributes the handlers change, for strategies that roll back (see
    :meth:`save`); ``None`` (not declared): the kernel saves every attribute
    the subclass set, except references.
    """

    #: The names of the attributes this component's handlers change (its state, for strategies that roll back).
    state_attrs: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, model: Model, name: str) -> None:
        self.model = model
        self.name = name
        self.id = model._register(self)
        self.rng = random.Random(derive_seed(model.seed, name))
        self.queue: EventQueue = model.unbound_queue
        self.when = 0
        self.count = 0
        self.digest = 0
        self.trace: list[tuple[int, int, str, Any]] | None = [] if model.trace else None
        self.events: dict[str, ModelEvent] = {}
        #: Who is inside: key 0 -> the occupant (absent: nobody). A one-slot dict, not an attribute, so that
        #: :meth:`claim` can take it in one atomic step (``dict.setdefault``), also on a free-threaded build.
        self._occupant: dict[int, object] = {}
        self._seq = 0
        self._source_base = canonical_source(self.id, 0)
        self.work = model.work

    # -- lifecycle ---------------------------------------------------------------------
    def init(self) -> None:
        """Schedule the first events (called once by :meth:`Model.start`, in id order)."""

    def state(self) -> tuple[Any, ...]:
        """The final state as a tuple of ints/floats/bools/tuples, folded into the digest."""
        return ()

    # -- state saving (strategies that roll back) ---------------------------------------------------
    def save_state(self) -> Any:
        """This component's own state, saved (:mod:`tickpar.kernel.statesave` rules).

        Default: the attributes named in ``state_attrs``; without them, every
        attribute the subclass set (references are kept, not copied).
        Override together with :meth:`restore_state` for a cheaper save.
        """
        names = type(self).state_attrs
        try:
            if names is None:
                return [
                    (name, statesave.save_value(value, name, strict=False))
                    for name, value in vars(self).items()
                    if name not in _KERNEL_ATTRS
                ]
            return statesave.save_attrs(self, names)
        except TypeError as exc:
            raise TypeError(f"component {self.name}: {exc}") from None

    def restore_state(self, saved: Any) -> None:
        """Put back what :meth:`save_state` returned (each saved value is used once)."""
        names = type(self).state_attrs
        if names is None:
            for name, value in saved:
                setattr(self, name, statesave.restore_value(value))
        else:
            statesave.restore_attrs(self, names, saved)

    def save(self) -> tuple[Any, ...]:
        """Everything an event of this component may change: the kernel's fields and :meth:`save_state`.

        The kernel's fields: ``when``, ``count``, the digest, the source
        sequence, the trace length, the named events' payloads and the RNG
        (:func:`tickpar.kernel.statesave.save_rng`).  Queue state (which events
        are scheduled when) is the queue's: :class:`tickpar.kernel.eventq.JournalQueue`.
        """
        return snapshot.save(self)

    def restore(self, saved: tuple[Any, ...]) -> None:
        """Put back a :meth:`save` (each save is restored at most once)."""
        snapshot.restore(self, saved)

    def fingerprint(self) -> dict[str, Any]:
        """Every attribute of this component as comparable data (the rollback-safety check).

        Kernel fields included (``when``, ``count``, digest, sequence, RNG state,
        trace length, named events' payloads and queue state); the model, the
        queue and the work function count by identity.
        """
        return snapshot.fingerprint(self)

    # -- context -----------------------------------------------------------------------
    @property
    def cur_tick(self) -> int:
        return self.queue.cur_tick

    def event(self, suffix: str, handler: Callable[[Any], object], priority: int = Priority.DEFAULT) -> ModelEvent:
        """Create the long-lived event ``<name>.<suffix>`` handled by ``handler(payload)``."""
        name = f"{self.name}.{suffix}"
        if name in self.events:
            raise ValueError(f"component {self.name} already has an event named {suffix!r}")
        ev = self.model.event_class(self, name, handler, priority)
        self.events[name] = ev
        return ev

    def schedule(self, event: ModelEvent, when: int, payload: Any = 0) -> None:
        """Schedule one of this component's events at absolute tick ``when``."""
        event.payload = payload
        self._seq += 1
        event.source = self._source_base | self._seq
        self.queue.schedule(event, when)

    def reschedule(self, event: ModelEvent, when: int, always: bool = False, payload: Any = 0) -> None:
        """gem5 ``reschedule`` of one of this component's events."""
        event.payload = payload
        self._seq += 1
        event.source = self._source_base | self._seq
        self.queue.reschedule(event, when, always)

    def deschedule(self, event: ModelEvent) -> None:
        """gem5 ``deschedule`` of one of this component's events."""
        self.queue.deschedule(event)

    def send(self, link: Link, payload: Any = 0, delay: int = 0) -> None:
        """Send ``payload`` through ``link``; it arrives at ``cur_tick + latency + delay``."""
        link.send(payload, delay)

    # -- ownership (who is inside the component) ------------------------------------------
    @property
    def occupant(self) -> object:
        """The worker inside this component now (``None``: nobody), as set by :meth:`claim`."""
        return self._occupant.get(0)

    def claim(self, owner: object) -> object:
        """Enter as ``owner`` (not ``None``): take the component if nobody is inside; return who was inside before.

        ``None`` means the claim took it (the caller releases it later);
        ``owner`` itself means it already held it; anything else is another
        worker inside (a race for the caller to report).  Atomic: of two
        threads claiming at once exactly one takes it and the other sees it
        taken (``dict.setdefault`` is one step under the GIL and on a
        free-threaded build alike; a read then a write was not: on 3.13t two
        threads both took it and the race went unreported).
        """
        slot = self._occupant
        occupant = slot.get(0)
        if occupant is not None:
            return occupant
        occupant = slot.setdefault(0, owner)
        return None if occupant is owner else occupant

    def release(self) -> None:
        """Leave the component (undo a claim that returned ``None``)."""
        self._occupant.pop(0, None)

    def call(self, peer: Component, method: str, *args: Any) -> Any:
        """A same-tick direct call into ``peer`` (gem5 port call): in ``peer``'s digest, never counted as an event.

        Who may enter ``peer`` is checked by the model's :attr:`Model.call_guard`
        when a strategy installs one, else by the worker-occupancy check
        (:meth:`claim` with ``model.worker_id()``).
        """
        model = self.model
        if peer.queue is not self.queue:
            model.note_race(peer, None, f"direct call {self.name}->{peer.name}.{method} across event queues")
        guard = model.call_guard
        if guard is not None:
            guard(self, peer, method)
            occupant: object = True  # the guard owns the bookkeeping: nothing to release here
        else:
            me = model.worker_id()
            occupant = peer.claim(me)
            if occupant is not None and occupant != me:
                model.note_race(
                    peer, None, f"direct call from {self.name}: worker {me} entered while {occupant} inside"
                )
        when = self.when
        saved_when = peer.when
        peer.when = when
        # A call is folded into the digest but is not an event: ``count`` (and every run's ``events``) counts
        # only processed events, so a replayed gem5 trace reports the trace's own event count.
        call_id = event_id(model.name_id(f"{peer.name}:{method}"), _CALL_PRIORITY)
        peer.digest = fold_record(peer.digest, when, call_id, args)
        if peer.trace is not None:
            peer.trace.append((when, _CALL_PRIORITY, f"{peer.name}:{method}", args))
        try:
            return getattr(peer, method)(*args)
        finally:
            peer.when = saved_when
            if occupant is None:
                peer.release()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} id={self.id}>"


class Model:
    """All components and links of one simulated system, built from (params, seed).

    ``work`` is the ``work(us)`` function (see :mod:`tickpar.kernel.work`); ``trace``
    keeps every component's full event list for first-divergence reports.
    ``end_tick`` (set by the workload, or ``None``) is where the simulation
    stops: events at ``end_tick`` with priority below ``SIM_EXIT`` still run,
    as with gem5's ``simulate(max_tick)``.
    """

    def __init__(
        self,
        seed: int,
        *,
        work: Callable[[float], None] | None = None,
        trace: bool = False,
        detect_races: bool = False,
        record_dag: bool = False,
    ) -> None:
        self.seed = int(seed)
        self.detect_races = detect_races
        #: Event classes for this model: race guard and tracing only when asked for.
        self.event_class, self.message_class = _event_classes(detect_races, trace, record_dag)
        #: With ``record_dag``: one tuple per processed event (see ``_DagRecorded``).
        self.dag: list[tuple[int, int, int, int | None, int, int, float]] | None = [] if record_dag else None
        self.work: Callable[[float], None] = work or (lambda us: None)
        self.trace = trace
        self.components: list[Component] = []
        self.by_name: dict[str, Component] = {}
        self.links: list[Link] = []
        self._pools: dict[tuple[int, str, int, str], list[MessageEvent]] = {}
        self.direct: list[tuple[Component, Component]] = []
        self.end_tick: int | None = None
        self.races: list[Race] = []
        self.unbound_queue = EventQueue("unbound")
        #: Returns the identity of the worker running now; executors that interleave
        #: simulated workers on one thread replace it.
        self.worker_id: Callable[[], object] = get_ident
        #: Set by a strategy that decides itself who may enter a component through a direct call:
        #: ``call_guard(caller, peer, method)`` runs before every :meth:`Component.call` enters ``peer``,
        #: instead of the worker-occupancy check (it reports races through :meth:`note_race`).
        self.call_guard: Callable[[Component, Component, str], None] | None = None
        self._name_ids: dict[str, int] = {}
        self._id_names: dict[int, str] = {}
        self._started = False

    # -- building ----------------------------------------------------------------------
    def _register(self, component: Component) -> int:
        if component.name in self.by_name:
            raise ValueError(f"duplicate component name {component.name!r}")
        self.components.append(component)
        self.by_name[component.name] = component
        return len(self.components) - 1

    def name_id(self, name: str) -> int:
        """A stable integer below ``2**51`` for an event or method name, unique within the model.

        Ids come from the name itself, not from first use, so every process
        agrees; two names of one model that would share an id are refused
        (a ``ValueError``; at 51 bits, about one model in 10**9 with 1,000 names).
        """
        ids = self._name_ids
        found = ids.get(name)
        if found is None:
            digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()
            found = int.from_bytes(digest[:8], "little") >> (64 - NAME_ID_BITS)
            other = self._id_names.setdefault(found, name)
            if other != name:
                raise ValueError(f"event names {other!r} and {name!r} share a digest id: rename one")
            ids[name] = found
        return found

    def link(
        self,
        src: Component,
        dst: Component,
        handler: str,
        latency: int,
        *,
        priority: int = Priority.DEFAULT,
        event_name: str | None = None,
    ) -> Link:
        """Connect ``src`` to ``dst.<handler>`` with ``latency`` ticks (>= 0)."""
        if latency < 0:
            raise ValueError(f"link latency {latency} must be >= 0")
        if int(priority) >= Priority.SIM_EXIT:
            raise ValueError(f"link to {dst.name}.{handler}: priority must be below SIM_EXIT (100)")
        if not callable(getattr(dst, handler, None)):
            raise ValueError(f"{dst.name} has no handler {handler!r}")
        name = event_name or f"{dst.name}.{handler}Event"
        pool = self._pools.setdefault((dst.id, handler, int(priority), name), [])
        link = Link(len(self.links), src, dst, handler, int(latency), priority, name, pool)
        self.links.append(link)
        return link

    def connect_direct(self, a: Component, b: Component) -> None:
        """Declare that ``a`` makes same-tick direct calls into ``b`` (zero-latency coupling)."""
        self.direct.append((a, b))

    def keep_messages(self) -> None:
        """Stop recycling message events: each message gets an event object of its own.

        For strategies that roll back: a processed message may have to be queued
        again, as the same object, after its recycled event carried another
        message.  Call before :meth:`start`; calling it again changes nothing.
        """
        cls = self.message_class
        if not issubclass(cls, _OneShot):
            self.message_class = type("OneShot" + cls.__name__, (_OneShot, cls), {"__slots__": ()})

    # -- running -----------------------------------------------------------------------
    def bind(self, queue_of: EventQueue | Callable[[Component], EventQueue]) -> None:
        """Put every component on an event queue (one shared queue, or a function of the component)."""
        for comp in self.components:
            comp.queue = queue_of if isinstance(queue_of, EventQueue) else queue_of(comp)

    def start(self, components: Iterable[Component] | None = None) -> None:
        """Run ``init()`` of ``components`` (default: all) in id order; call once, after :meth:`bind`."""
        if self._started:
            raise RuntimeError("Model.start() called twice")
        chosen = self.components if components is None else sorted(components, key=lambda c: c.id)
        for comp in chosen:  # all checked before any init() runs: a refused start changes nothing
            if comp.queue is self.unbound_queue:
                raise RuntimeError(f"component {comp.name} is not bound to an event queue")
        self._started = True
        for comp in chosen:
            comp.init()

    def note_race(self, component: Component, event: Event | None, detail: str) -> None:
        """Record that two workers were inside ``component`` at once."""
        self.races.append(
            Race(component.name, event.name if event is not None else "<direct call>", component.when, detail)
        )

    def lookahead_graph(self) -> list[tuple[int, int, int]]:
        """``(src id, dst id, min latency)`` for every coupled pair; direct calls have latency 0."""
        best: dict[tuple[int, int], int] = {}
        for link in self.links:
            key = (link.src.id, link.dst.id)
            best[key] = min(best.get(key, link.latency), link.latency)
        for a, b in self.direct:
            best[(a.id, b.id)] = 0
        return [(s, d, lat) for (s, d), lat in sorted(best.items())]


#: Attributes every component has from :class:`Component` itself: the kernel's, never a subclass's state.
_KERNEL_ATTRS = frozenset(vars(Component(Model(0), "probe")).keys())

statesave.register_reference(Component)
statesave.register_reference(Link)
statesave.register_reference(Model)
