"""Record a workload's event DAG for the native engine: one Python sequential run, every operation logged.

The run is gem5's single-queue loop (:func:`~tickpar.kernel.simloop.start_single_queue`) on a
:class:`RecordingQueue`, with the synthetic work metered, not spent.  Per event *object* (a named
long-lived event, or one message: a recycled :class:`~tickpar.kernel.model.MessageEvent` is a new
object each time it is sent) it keeps the component, name and priority; per *occurrence* (the
object's k-th ``process()``) the operations it made, in call order, the direct calls it made and
the work it asked for.

Whether an operation's ``when`` came from the clock or is a stored tick is read off the value
itself: while the run records, every read of ``cur_tick`` returns a :class:`ClockTick`, an ``int``
that remembers the occurrence that read it, and arithmetic on it keeps that mark.  A ``when`` that
carries the running occurrence's mark was computed from this handler's "now" (``cur_tick + delay``,
``clockEdge``, ``max(stored, now + 1)`` when ``now + 1`` won); anything else (a plain ``int``, the
event's own tick, a value stored by an earlier event) is a stored tick.  A run replayed with the
wrong clock (split) then moves exactly the ``when``\\ s the model would have moved.

The marks cost the recording run speed and change its digests (tuples holding a :class:`ClockTick`
fold on the slow path), never its behaviour: the same events run at the same ticks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tickpar.kernel.eventq import Event, EventQueue
from tickpar.kernel.model import MessageEvent, Model
from tickpar.kernel.simloop import start_single_queue
from tickpar.plugins import RunSpec

__all__ = ["ClockTick", "RecordedDag", "RecordingQueue", "record"]

SCHEDULE, RESCHEDULE, RESCHEDULE_ALWAYS, DESCHEDULE = 0, 1, 2, 3
CLOCK, ABSOLUTE = 0, 1


class ClockTick(int):
    """An ``int`` read from the clock by occurrence ``epoch``; arithmetic keeps the latest mark."""

    epoch: int

    def __new__(cls, value: int, epoch: int) -> ClockTick:
        obj = int.__new__(cls, value)
        obj.epoch = epoch
        return obj

    def __repr__(self) -> str:
        return f"ClockTick({int(self)}, epoch={self.epoch})"


def _marked(name: str) -> Any:
    base = getattr(int, name)

    def op(self: ClockTick, *other: Any) -> Any:
        result = base(self, *other)
        if result is NotImplemented or type(result) is not int:
            return result
        epoch = self.epoch
        if other:
            theirs = getattr(other[0], "epoch", None)
            if theirs is not None and theirs > epoch:
                epoch = theirs
        return ClockTick(result, epoch)

    op.__name__ = name
    return op


for _name in (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__", "__rfloordiv__",
    "__mod__", "__rmod__", "__neg__", "__pos__", "__abs__", "__lshift__", "__rshift__",
):  # fmt: skip
    setattr(ClockTick, _name, _marked(_name))


@dataclass
class RecordedDag:
    """The recorded DAG as flat lists (see :mod:`tickpar_native`), plus the names to read results with."""

    components: list[str]
    names: list[str]
    obj_comp: list[int] = field(default_factory=list)
    obj_name: list[int] = field(default_factory=list)
    obj_prio: list[int] = field(default_factory=list)
    obj_flags: list[int] = field(default_factory=list)
    occs: list[list[int]] = field(default_factory=list)  # per object: its occurrence numbers (run order)
    init_ops: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    occ_ops: list[list[tuple[int, int, int, int, int]]] = field(default_factory=list)  # per occurrence
    occ_touch: list[list[tuple[int, int]]] = field(default_factory=list)
    occ_work: list[float] = field(default_factory=list)
    occ_tick: list[int] = field(default_factory=list)  # per occurrence: its tick (run order)
    occ_obj: list[int] = field(default_factory=list)  # per occurrence: its object
    end_tick: int | None = None
    events: int = 0
    wall_s: float = 0.0
    clock_ops: int = 0
    stored_ops: int = 0

    def arrays(self) -> dict[str, Any]:
        """The engine's flat arrays: occurrences regrouped by object (``occ_off``), ops by occurrence."""
        import numpy as np  # here, not at the top: a Python-engine cell imports this module and needs no numpy

        order = [k for per_obj in self.occs for k in per_obj]
        occ_off = np.zeros(len(self.obj_comp) + 1, dtype=np.int64)
        occ_off[1:] = np.cumsum([len(per_obj) for per_obj in self.occs])
        ops = list(self.init_ops)
        ops_off = [len(ops)]
        touch_comp: list[int] = []
        touch_name: list[int] = []
        touch_off = [0]
        work = []
        for k in order:
            ops.extend(self.occ_ops[k])
            ops_off.append(len(ops))
            for c, n in self.occ_touch[k]:
                touch_comp.append(c)
                touch_name.append(n)
            touch_off.append(len(touch_comp))
            work.append(self.occ_work[k])
        cols = list(zip(*ops, strict=True)) if ops else [(), (), (), (), ()]
        return {
            "ncomp": len(self.components),
            "obj_comp": self.obj_comp,
            "obj_name": self.obj_name,
            "obj_prio": self.obj_prio,
            "obj_flags": self.obj_flags,
            "occ_off": occ_off,
            "occ_seq": order,  # each occurrence's place in the run: the engine lays the DAG out in run order
            "ops_off": ops_off,
            "touch_off": touch_off,
            "work_us": work,
            "op_kind": cols[0],
            "op_mode": cols[1],
            "op_target": cols[2],
            "op_value": cols[3],
            "op_source": cols[4],
            "touch_comp": touch_comp,
            "touch_name": touch_name,
            "end_tick": self.end_tick,
        }


class RecordingQueue(EventQueue):
    """The single queue of a recording run: logs every operation; ``cur_tick`` reads are marked."""

    __slots__ = ("current", "epoch", "log", "name_ids", "obj_of", "rec")

    def __init__(self, name: str = "main", order: str = "gem5", checks: bool = True) -> None:
        super().__init__(name, order=order, checks=checks)
        self.epoch = -1  # the running occurrence (-1: init())
        self.obj_of: dict[int, int] = {}
        self.name_ids: dict[str, int] = {}
        self.rec: RecordedDag | None = None
        self.log: list[tuple[int, int, int, int, int]] = []
        self.current: list[tuple[int, int, int, int, int]] | None = None

    @property
    def cur_tick(self) -> int:  # type: ignore[override]
        return ClockTick(EventQueue.tick_slot.__get__(self), self.epoch)

    @cur_tick.setter
    def cur_tick(self, value: int) -> None:
        EventQueue.tick_slot.__set__(self, int(value))

    # -- objects and names --------------------------------------------------------------------------
    def name_id(self, name: str) -> int:
        found = self.name_ids.get(name)
        if found is None:
            found = self.name_ids[name] = len(self.name_ids)
            assert self.rec is not None
            self.rec.names.append(name)
        return found

    def _new_obj(self, event: Event) -> int:
        rec = self.rec
        assert rec is not None
        comp = getattr(event, "component", None)
        if comp is None:
            raise ValueError(f"event {event.name} belongs to no component: the native engine replays model events")
        obj = len(rec.obj_comp)
        rec.obj_comp.append(comp.id)
        rec.obj_name.append(self.name_id(event.name))
        rec.obj_prio.append(event.priority)
        rec.obj_flags.append(1 if isinstance(event, MessageEvent) else 0)
        rec.occs.append([])
        self.obj_of[id(event)] = obj
        return obj

    def _obj(self, event: Event, fresh: bool = False) -> int:
        found = self.obj_of.get(id(event))
        if found is None or fresh:
            return self._new_obj(event)
        return found

    def _log(self, kind: int, event: Event, when: Any) -> None:
        rec = self.rec
        assert rec is not None
        fresh = kind == SCHEDULE and isinstance(event, MessageEvent) and event.scheduled is False
        obj = self._obj(event, fresh=fresh)
        if kind == DESCHEDULE:
            mode, value = ABSOLUTE, 0
        elif type(when) is ClockTick and when.epoch == self.epoch:
            mode, value = CLOCK, int(when) - EventQueue.tick_slot.__get__(self)
            rec.clock_ops += 1
        else:
            mode, value = ABSOLUTE, int(when)
            rec.stored_ops += 1
        source = event.source if event.source is not None else -1
        op = (kind, mode, obj, value, int(source))
        (self.current if self.current is not None else rec.init_ops).append(op)

    # -- the gem5 API, logged -------------------------------------------------------------------------
    def schedule(self, event: Event, when: int) -> None:
        if self.rec is not None and getattr(event, "component", None) is not None:
            self._log(SCHEDULE, event, when)
        EventQueue.schedule(self, event, int(when))

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        if self.rec is not None:
            self._log(RESCHEDULE_ALWAYS if always else RESCHEDULE, event, when)
        EventQueue.reschedule(self, event, int(when), always)

    def deschedule(self, event: Event) -> None:
        if self.rec is not None:
            self._log(DESCHEDULE, event, 0)
        EventQueue.deschedule(self, event)


class _Meter:
    """Every component's ``work(us)`` during the recording: adds up what the running event asks for."""

    def __init__(self) -> None:
        self.us = 0.0

    def __call__(self, us: float) -> None:
        self.us += us


def record(spec: RunSpec) -> RecordedDag:
    """Run ``spec`` sequentially and return its event DAG (see the module docstring)."""
    meter = _Meter()
    # The model is built and init() run by start_single_queue; the queue records from its first schedule.
    rec_box: dict[str, RecordedDag] = {}
    calls: list[tuple[int, int]] = []
    holder: dict[str, RecordingQueue] = {}

    def prepare(model: Model) -> None:
        rec_box["rec"] = RecordedDag([c.name for c in model.components], [])
        for comp in model.components:
            comp.work = meter

        def guard(caller: Any, peer: Any, method: str) -> None:
            q = holder.get("q")
            if q is not None and q.current is not None:
                calls.append((peer.id, q.name_id(f"{peer.name}:{method}")))

        model.call_guard = guard


    class _Queue(RecordingQueue):
        __slots__ = ()

        def __init__(self, name: str, order: str = "gem5", checks: bool = True) -> None:
            super().__init__(name, order=order, checks=checks)
            self.rec = rec_box["rec"]
            holder["q"] = self

    model, queue = start_single_queue(spec, _Queue, prepare=prepare, work="none")
    rec = queue.rec
    assert rec is not None
    rec.end_tick = model.end_tick
    started = time.perf_counter()
    while not queue.empty():
        event = queue.pop_next(advance=True)
        if event.is_exit:
            break
        obj = queue.obj_of.get(id(event))
        if obj is None:
            raise ValueError(f"event {event.name} ran without being scheduled through the model")
        k = len(rec.occ_ops)
        rec.occs[obj].append(k)
        rec.occ_tick.append(int(event.when))
        rec.occ_obj.append(obj)
        ops: list[tuple[int, int, int, int, int]] = []
        rec.occ_ops.append(ops)
        queue.current = ops
        queue.epoch = k
        meter.us = 0.0
        calls.clear()
        queue.execute_popped(event)
        rec.occ_touch.append(list(calls))
        rec.occ_work.append(meter.us)
        queue.current = None
        rec.events += 1
    rec.wall_s = time.perf_counter() - started
    return rec
