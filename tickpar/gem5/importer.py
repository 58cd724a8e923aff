"""Import a gem5 event trace: the event objects, their occurrences and the operations each made.

:func:`import_trace` reads a trace (:mod:`tickpar.gem5.lines`) once, streamed, and rebuilds what
gem5 ran: *instances* (one scheduling of one event object, from its first insertion, through any
reschedules, to its execution or its cancellation), *occurrences* (the instances that ran, in
execution order, each with its tick) and every operation (schedule, reschedule, deschedule) with
the occurrence that made it.  The result (:class:`ImportedTrace`) is what the ``gem5trace``
workload replays and what ``tickpar trace-profile`` measures; :meth:`ImportedTrace.recorded_dag`
gives the native engine's :class:`~tickpar.native.record.RecordedDag`.

What the trace does not print is recovered by these rules (each counted in
:attr:`ImportedTrace.rules`, so a user sees how often each one decided something):

``parent``
    The occurrence that made an insertion is the running event: the parent fields (insert log),
    or the last ``executed`` line (stock trace).  Consecutive insert-log lines with the same
    parent are one occurrence, except that an event which re-inserted itself at the current tick
    starts a new occurrence the next time it is seen as the parent.
``no_parent``
    An insertion made with no event running before the first event ran is gem5's
    ``init``/``startup``: replayed before the loop.  One made later (the simulation script
    between ``simulate()`` calls) is attributed to the last occurrence that ran, with its
    ``when`` as a stored (absolute) tick.
``reschedule``
    An insertion of an object whose instance is still pending is a reschedule (the insert log
    logs ``reschedule()`` as an insertion); stock ``rescheduled`` lines say so themselves.
``ran_silently``
    An event that inserts nothing never appears as a parent in the insert log.  A pending
    instance whose tick has passed ran at its tick, at the end of that tick's known events,
    same-tick ones latest-inserted first (gem5's LIFO); one that is inserted again at its own
    tick ran just before the occurrence that re-inserts it.
``cancelled``
    The insert log never shows a deschedule.  An object that is inserted again under another
    name (its memory reused) while still pending was descheduled and deleted: the deschedule is
    attributed to the occurrence that made the new insertion.  Stock ``descheduled`` lines are
    deschedules.
``pointer_reuse``
    An object is its address (insert log) or instance string (stock) *and* its name: the same
    address under a new name is a new object.
``limit_event``
    An object ever inserted at ``when`` = 2^64-1 (``MaxTick``) is the simulation-limit event
    (``simulate()`` reschedules it there): all its insertions are left out; it never runs.
``untraced``
    An event that runs without an insertion in the trace (scheduled before the trace began) is
    scheduled before the loop at its tick.
``order``
    Priority is printed in neither format.  Within a tick the replay serves the occurrences in
    the order rebuilt above (stock: the ``executed`` order exactly).  Each occurrence gets a
    priority *level*: consecutive occurrences of one tick share a level while gem5's LIFO rule
    for equal priorities serves them in the observed order, and a new level starts where it
    would not, and after an occurrence that reschedules or deschedules an event pending at its
    own tick (so that every order mode serves the two in the observed order).  Instances that
    never run get the last level.
``when``
    ``when`` is relative to the clock (``curTick + delay``) for an occurrence's insertions at
    its own tick, and a stored tick for the rest (before the loop, ``no_parent`` mid-run).
``last_tick``
    The trace may be cut inside its last tick: unless every instance pending at that tick was
    seen running there, the replay ends before it.
``exit_event``
    A stock trace ends where ``simulate()`` returned: its last ``executed`` line is gem5's exit
    event (``exitSimLoop``'s event: no SimObject, named ``Event_<instance>``), at the last tick.
    It is named and counted (:attr:`ImportedTrace.exit_events`), never replayed; the events gem5
    ran at that tick before it are (the replay ends at that tick), and those still pending there
    (``exit_unreached``: other exit events gem5 never reached) are left out with their operations.
``past``
    Not a rule but a refusal: a schedule into the past (``5: ... scheduled @ 3``), which gem5
    itself asserts against (``when >= curTick``), is a :class:`TraceError` naming the line.
``components``
    After the import, :func:`assign_components` gives every event object its component
    (:mod:`tickpar.gem5.names`; :attr:`ImportedTrace.component_rules` counts which rule decided):
    an event whose name does not say its SimObject (Ruby's ``Consumer Event``, ``Event_<N>``) is
    a component of its own, named ``<name>#<instance>``.
"""

from __future__ import annotations

import heapq
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickpar.gem5.lines import MAX_TICK, TraceError, TraceLine, TraceReader, read_trace
from tickpar.gem5.names import ComponentRules, is_exit_event_name, load_mapping
from tickpar.native.record import ABSOLUTE, CLOCK, DESCHEDULE, RESCHEDULE, SCHEDULE

__all__ = ["ABSOLUTE", "ARRAY_COLUMNS", "CLOCK", "ImportedTrace", "TraceError", "assign_components", "import_trace"]
PENDING, RAN, CANCELLED, DROPPED = 0, 1, 2, 3
#: The integer columns of an :class:`ImportedTrace`, per instance, occurrence and operation: what the C++ port
#: returns as int64 buffers (tests/test_gem5_native_import.py checks that it returns exactly these).
INST_COLUMNS = ("inst_obj", "inst_name", "inst_when", "inst_state", "inst_occ", "inst_level")
OCC_COLUMNS = ("occ_inst", "occ_tick")
OP_COLUMNS = ("op_occ", "op_kind", "op_inst", "op_mode", "op_value", "op_delay")
ARRAY_COLUMNS = INST_COLUMNS + OCC_COLUMNS + OP_COLUMNS
FIRST_LEVEL, LAST_LEVEL = -128, 99  # model events take priorities below SIM_EXIT (100)
RULES = (
    "parent", "no_parent", "reschedule", "ran_silently", "cancelled", "pointer_reuse", "limit_event",
    "untraced", "order", "when", "last_tick", "order_levels_exhausted", "exit_event", "exit_unreached",
)  # fmt: skip


@dataclass
class ImportedTrace:
    """One imported trace as flat lists (indices are ids).

    Names: ``names`` (event names), ``components`` and ``name_comp`` (each name's component, given by
    :func:`assign_components`).  Objects: ``obj_ptr`` (each event object's instance string or address).
    Instances: ``inst_obj`` (the event object, an address or instance string made unique per
    name), ``inst_name``, ``inst_when`` (final tick), ``inst_state``, ``inst_occ`` (its
    occurrence, -1 if it never ran) and ``inst_level`` (its priority).  Occurrences, in
    execution order: ``occ_inst`` and ``occ_tick``.  Operations, in the order made:
    ``op_occ`` (-1: before the loop), ``op_kind`` (SCHEDULE, RESCHEDULE, DESCHEDULE of
    :mod:`tickpar.native.record`), ``op_inst``, ``op_mode`` (:data:`CLOCK`: ``cur_tick + delay``, or
    :data:`ABSOLUTE`: a stored tick), ``op_value`` (delay or tick) and ``op_delay`` (``when - curTick`` as printed).
    ``end_tick``: the last tick the replay serves.  ``rules``: how often each rule decided
    something (see the module docstring); ``reader``: what was skipped or warned about.
    ``exit_events``: gem5's exit event(s) left out, ``(name, tick)`` (rule ``exit_event``).
    ``component_rules``: per rule of :mod:`tickpar.gem5.names`, how many event objects it placed.
    """

    path: str
    format: str
    names: list[str] = field(default_factory=list)
    components: list[str] = field(default_factory=list)
    name_comp: list[int] = field(default_factory=list)
    obj_ptr: list[str] = field(default_factory=list)
    inst_obj: list[int] = field(default_factory=list)
    inst_name: list[int] = field(default_factory=list)
    inst_when: list[int] = field(default_factory=list)
    inst_state: list[int] = field(default_factory=list)
    inst_occ: list[int] = field(default_factory=list)
    inst_level: list[int] = field(default_factory=list)
    occ_inst: list[int] = field(default_factory=list)
    occ_tick: list[int] = field(default_factory=list)
    op_occ: list[int] = field(default_factory=list)
    op_kind: list[int] = field(default_factory=list)
    op_inst: list[int] = field(default_factory=list)
    op_mode: list[int] = field(default_factory=list)
    op_value: list[int] = field(default_factory=list)
    op_delay: list[int] = field(default_factory=list)
    end_tick: int = 0
    first_tick: int = 0
    rules: Counter[str] = field(default_factory=Counter)
    reader: TraceReader | None = None
    exit_events: list[tuple[str, int]] = field(default_factory=list)
    component_rules: Counter[str] = field(default_factory=Counter)

    # -- derived views ---------------------------------------------------------------------------
    @property
    def events(self) -> int:
        """Occurrences the replay serves (at ticks up to :attr:`end_tick`)."""
        return sum(1 for t in self.occ_tick if t <= self.end_tick)

    def served(self) -> list[int]:
        """The occurrences the replay serves, in execution order."""
        end = self.end_tick
        return [k for k, t in enumerate(self.occ_tick) if t <= end]

    def inst_comp(self, inst: int) -> int:
        """The component of an instance."""
        return self.name_comp[self.inst_name[inst]]


class _Importer:
    """The streaming reconstruction (one pass over the lines; see the module docstring)."""

    def __init__(self, path: str, fmt: str, events: int) -> None:
        self.trace = ImportedTrace(path=path, format=fmt)
        self.limit_events = events
        self.name_ids: dict[str, int] = {}
        self.obj_ids: dict[tuple[str, int], int] = {}
        self.by_ptr: dict[str, dict[int, int]] = {}  # address -> {name id: object}
        self.inserter: list[int] = []  # per instance: the occurrence that made its last insertion (-1: none)
        self.last_pos: list[float] = []  # per occurrence: the position of its last line
        self.tick_start = 0.0  # the position of the current tick's first line
        self.live: dict[int, int] = {}  # object -> its latest instance
        self.heap: list[tuple[int, float, int]] = []  # pending (when, -insert position, instance)
        self.ins_pos: list[float] = []  # per instance: position of its last insertion
        self.served_pos: list[float] = []  # per occurrence: when it started
        self.force_up: list[bool] = []  # per occurrence: it moved an event pending at its own tick
        self.moved_due: list[tuple[int, int]] = []  # (occurrence, instance) of each such move
        self.limit_objs: set[str] = set()
        self.pos = 0.0
        self.cur_tick = -1
        self.running = -1  # the running occurrence (insert log: the parent's; stock: the last executed)
        self.current_parent: tuple[str, str] | None = None
        self.self_reinserted = False
        self.cutoff: int | None = None
        self.last_executed = -1  # the occurrence of the last `executed` line (stock): gem5's exit event?

    # -- ids ----------------------------------------------------------------------------------------
    def name_id(self, name: str) -> int:
        found = self.name_ids.get(name)
        if found is None:
            t = self.trace
            found = self.name_ids[name] = len(t.names)
            t.names.append(name)
        return found

    def obj_id(self, ptr: str, name: int) -> int:
        key = (ptr, name)
        found = self.obj_ids.get(key)
        if found is None:
            found = self.obj_ids[key] = len(self.obj_ids)
            self.by_ptr.setdefault(ptr, {})[name] = found
            self.trace.obj_ptr.append(ptr)
        return found

    # -- instances, occurrences, operations --------------------------------------------------------
    def new_instance(self, obj: int, name: int, when: int) -> int:
        t = self.trace
        inst = len(t.inst_obj)
        t.inst_obj.append(obj)
        t.inst_name.append(name)
        t.inst_when.append(when)
        t.inst_state.append(PENDING)
        t.inst_occ.append(-1)
        t.inst_level.append(LAST_LEVEL)
        self.ins_pos.append(self.pos)
        self.inserter.append(self.running)
        self.live[obj] = inst
        heapq.heappush(self.heap, (when, -self.pos, inst))
        return inst

    def run_instance(self, inst: int, tick: int, served: float) -> int:
        t = self.trace
        occ = len(t.occ_inst)
        t.occ_inst.append(inst)
        t.occ_tick.append(tick)
        t.inst_state[inst] = RAN
        t.inst_occ[inst] = occ
        self.served_pos.append(served)
        self.last_pos.append(served)
        self.force_up.append(False)
        if self.limit_events and self.cutoff is None and occ >= self.limit_events:
            self.cutoff = max(tick, self.cur_tick)
        return occ

    def add_op(self, kind: int, inst: int, tick: int, when: int, parented: bool) -> None:
        t = self.trace
        occ = self.running
        if occ < 0:
            ctx, mode, value = -1, ABSOLUTE, when
        elif parented and t.occ_tick[occ] == tick:
            ctx, mode, value = occ, CLOCK, when - tick
        else:
            ctx, mode, value = occ, ABSOLUTE, when
            self.trace.rules["no_parent"] += 1
        if kind != SCHEDULE and ctx >= 0 and t.inst_when[inst] == t.occ_tick[ctx] and t.inst_state[inst] == PENDING:
            self.force_up[ctx] = True
            self.moved_due.append((ctx, inst))
        if ctx >= 0:
            self.last_pos[ctx] = self.pos
        t.op_occ.append(ctx)
        t.op_kind.append(kind)
        t.op_inst.append(inst)
        t.op_mode.append(mode if kind != DESCHEDULE else ABSOLUTE)
        t.op_value.append(value if kind != DESCHEDULE else 0)
        t.op_delay.append(when - tick if kind != DESCHEDULE else 0)

    def pending(self, obj: int) -> int:
        inst = self.live.get(obj, -1)
        return inst if inst >= 0 and self.trace.inst_state[inst] == PENDING else -1

    # -- the clock ------------------------------------------------------------------------------------
    def advance(self, tick: int, line: TraceLine) -> None:
        if tick < self.cur_tick:
            raise TraceError(
                f"{self.trace.path}:{line.lineno}: curTick goes back from {self.cur_tick} to {tick}: lines of"
                " several event queues interleave (a multi-queue run) and cannot be attributed; tickpar imports one"
                " queue's trace"
            )
        if tick > self.cur_tick:
            self.flush(tick)
            self.cur_tick = tick
            self.tick_start = self.pos
            self.current_parent = None
            self.self_reinserted = False

    def flush(self, tick: int) -> None:
        """Every instance still pending before ``tick`` ran at its own tick (rule ``ran_silently``)."""
        t = self.trace
        heap = self.heap
        while heap and heap[0][0] < tick:
            when, neg_pos, inst = heapq.heappop(heap)
            if t.inst_state[inst] != PENDING or t.inst_when[inst] != when or self.ins_pos[inst] != -neg_pos:
                continue  # moved or done since: a stale heap entry
            self.run_instance(inst, when, self.silent_served(inst, when))
            t.rules["ran_silently"] += 1

    def silent_served(self, inst: int, when: int) -> float:
        """Where a silent instance ran in its tick: first if pending when the tick began (latest-inserted
        first, by the sort), else right after the occurrence that inserted it."""
        if when != self.cur_tick:
            return self.pos  # a tick with no line: only silent events, in LIFO order
        ins = self.ins_pos[inst]
        if ins < self.tick_start:
            return self.tick_start - 0.5
        by = self.inserter[inst]
        return (self.last_pos[by] if by >= 0 else ins) + 0.5

    # -- lines ------------------------------------------------------------------------------------------
    def start(self, ptr: str, name: str, tick: int) -> None:
        """The event ``(ptr, name)`` runs now (an ``executed`` line, or a new parent)."""
        t = self.trace
        nid = self.name_id(name)
        obj = self.obj_id(ptr, nid)
        inst = self.pending(obj)
        if inst < 0 or t.inst_when[inst] != tick:
            t.rules["untraced"] += 1
            saved, self.running = self.running, -1
            inst = self.new_instance(obj, nid, tick)
            self.add_op(SCHEDULE, inst, tick, tick, parented=False)
            self.running = saved
        self.running = self.run_instance(inst, tick, self.pos)
        t.rules["parent"] += 1

    def insert(self, line: TraceLine, kind: str, parented: bool) -> None:
        t = self.trace
        ptr, tick, when = line.ptr, line.tick, line.when
        if when == MAX_TICK or ptr in self.limit_objs:
            if ptr not in self.limit_objs:
                self.limit_objs.add(ptr)
                for obj in self.by_ptr.get(ptr, {}).values():
                    inst = self.pending(obj)
                    if inst >= 0:
                        t.inst_state[inst] = DROPPED
            t.rules["limit_event"] += 1
            return
        nid = self.name_id(line.name)
        obj = self.obj_id(ptr, nid)
        self.reuse(ptr, nid, tick, parented)
        inst = self.pending(obj)
        if kind == "descheduled":
            if inst >= 0:
                self.add_op(DESCHEDULE, inst, tick, t.inst_when[inst], parented)
                t.inst_state[inst] = CANCELLED
                t.rules["cancelled"] += 1
            return
        if inst >= 0 and t.inst_when[inst] == tick and self.running >= 0 and kind == "inserted":
            # pending at this very tick and inserted again: it ran, just before the current occurrence
            t.rules["ran_silently"] += 1
            self.run_instance(inst, tick, self.served_pos[self.running] - 0.5)
            inst = -1
        if inst >= 0:
            self.add_op(RESCHEDULE, inst, tick, when, parented)
            t.inst_when[inst] = when
            self.ins_pos[inst] = self.pos
            self.inserter[inst] = self.running
            heapq.heappush(self.heap, (when, -self.pos, inst))
            t.rules["reschedule"] += 1
        else:
            inst = self.new_instance(obj, nid, when)
            self.add_op(SCHEDULE, inst, tick, when, parented)
        if parented and self.running >= 0 and t.occ_inst[self.running] >= 0 and when == tick:
            running = t.occ_inst[self.running]
            if t.inst_obj[running] == obj:
                self.self_reinserted = True

    def reuse(self, ptr: str, nid: int, tick: int, parented: bool) -> None:
        """The address holds a pending event of another name: that one was descheduled and deleted."""
        t = self.trace
        for other, obj in self.by_ptr.get(ptr, {}).items():
            if other == nid:
                continue
            inst = self.pending(obj)
            if inst < 0:
                continue
            t.rules["pointer_reuse"] += 1
            if t.inst_when[inst] > tick or self.running < 0:
                self.add_op(DESCHEDULE, inst, tick, t.inst_when[inst], parented)
                t.inst_state[inst] = CANCELLED
                t.rules["cancelled"] += 1
            else:
                t.rules["ran_silently"] += 1
                served = self.served_pos[self.running] - 0.5 if self.running >= 0 else self.pos - 0.5
                self.run_instance(inst, tick, served)

    def line(self, line: TraceLine) -> None:
        self.pos += 1.0
        if line.when < line.tick and line.action != "descheduled":
            raise TraceError(
                f"{self.trace.path}:{line.lineno}: {line.name} {line.action} @ {line.when} at tick {line.tick}: a"
                " schedule into the past (gem5 asserts when >= curTick)"
            )
        self.advance(line.tick, line)
        if line.action == "inserted":
            parented = line.parent is not None
            if parented:
                parent = (line.parent, line.parent_name)
                if parent != self.current_parent or self.self_reinserted:
                    self.self_reinserted = False
                    self.current_parent = parent  # type: ignore[assignment]
                    self.start(parent[0], parent[1], line.tick)  # type: ignore[arg-type]
            self.insert(line, "inserted", parented)
        elif line.action == "executed":
            self.start(line.ptr, line.name, line.tick)
            self.last_executed = self.running
        else:
            self.insert(line, line.action, parented=True)

    def finish(self, reader: TraceReader) -> ImportedTrace:
        t = self.trace
        t.format = reader.format
        t.reader = reader
        last = self.cur_tick
        if self.cutoff is not None:
            last = min(last, self.cutoff)
        self.flush(last)
        exited = self.exit_event(last)
        unseen = any(
            when == last and t.inst_state[inst] == PENDING and self.ins_pos[inst] == -neg
            for when, neg, inst in self.heap
        )
        t.end_tick = last - 1 if (unseen or self.cutoff is not None) and not exited else last
        if t.end_tick != last:
            t.rules["last_tick"] += 1
        t.first_tick = min(t.occ_tick) if t.occ_tick else 0
        ins, served = self.ins_pos, self.served_pos
        occs = sorted(
            (k for k, tick in enumerate(t.occ_tick) if tick <= t.end_tick and t.inst_state[t.occ_inst[k]] != DROPPED),
            key=lambda k: (t.occ_tick[k], served[k], -ins[t.occ_inst[k]]),
        )
        self.renumber(occs)
        self.assign_levels()
        return t

    def exit_event(self, last: int) -> bool:
        """Rule ``exit_event``: leave out gem5's exit event, and what it left pending at its tick."""
        t = self.trace
        occ = self.last_executed
        if self.cutoff is not None or occ < 0 or t.occ_tick[occ] != last:
            return False
        inst = t.occ_inst[occ]
        name = t.names[t.inst_name[inst]]
        if not is_exit_event_name(name):
            return False
        t.inst_state[inst] = DROPPED
        t.exit_events.append((name, last))
        t.rules["exit_event"] += 1
        for when, neg, other in self.heap:
            if when == last and t.inst_state[other] == PENDING and self.ins_pos[other] == -neg:
                t.inst_state[other] = DROPPED
                t.rules["exit_unreached"] += 1
        return True

    def renumber(self, order: list[int]) -> None:
        """Occurrences in execution order (ids = positions); those after the end are dropped."""
        t = self.trace
        new_id = {old: new for new, old in enumerate(order)}
        t.occ_inst = [t.occ_inst[k] for k in order]
        t.occ_tick = [t.occ_tick[k] for k in order]
        self.served_pos = [self.served_pos[k] for k in order]
        self.force_up = [self.force_up[k] for k in order]
        self.moved_due = [(new_id[k], inst) for k, inst in self.moved_due if k in new_id]
        for inst, occ in enumerate(t.inst_occ):
            if occ >= 0:
                t.inst_occ[inst] = new_id.get(occ, -1)
                if t.inst_occ[inst] < 0 and t.inst_state[inst] == RAN:
                    t.inst_state[inst] = PENDING  # it runs after the end: never in the replay
        keep = [i for i, k in enumerate(t.op_occ) if k < 0 or k in new_id]
        for name in OP_COLUMNS[1:]:  # op_occ last: renumbered below
            col = getattr(t, name)
            setattr(t, name, [col[i] for i in keep])
        t.op_occ = [t.op_occ[i] if t.op_occ[i] < 0 else new_id[t.op_occ[i]] for i in keep]
        dropped = {inst for inst, s in enumerate(t.inst_state) if s == DROPPED}
        if dropped:
            keep = [i for i, inst in enumerate(t.op_inst) if inst not in dropped]
            for name in OP_COLUMNS:
                col = getattr(t, name)
                setattr(t, name, [col[i] for i in keep])

    def assign_levels(self) -> None:
        """Priority levels within each tick (rule ``order``).

        Besides gem5's LIFO order, a level ends before an occurrence that operates on an event
        object which an earlier occurrence of the level ran or operated on: the two must run in the
        observed order in every order mode (canonical order reorders a level by source).  And an
        instance that an occurrence moved away from that occurrence's own tick (gem5 ran the mover
        first) gets a level above the mover's, wherever it runs, so that no order mode serves it first.
        """
        t = self.trace
        ins, served = self.ins_pos, self.served_pos
        targets: list[list[int]] = [[] for _ in t.occ_inst]
        for occ, inst in zip(t.op_occ, t.op_inst, strict=True):
            if occ >= 0:
                targets[occ].append(t.inst_obj[inst])
        moved: dict[int, list[int]] = {}
        for occ, inst in self.moved_due:
            moved.setdefault(occ, []).append(inst)
        above: dict[int, int] = {}  # instance -> the lowest level it may take (above its movers')
        tick = None
        level = FIRST_LEVEL
        group: list[int] = []
        touched: set[int] = set()  # objects the level's occurrences ran or operated on
        up = False
        for k, inst in enumerate(t.occ_inst):
            if t.occ_tick[k] != tick:
                tick, level, group, up = t.occ_tick[k], FIRST_LEVEL, [], False
                touched = set()
            mine = ins[inst]
            floor = above.get(inst, FIRST_LEVEL)
            if (
                up
                or floor > level
                or any(ins[j] < mine < served[t.inst_occ[j]] for j in group)
                or any(obj in touched for obj in targets[k])
            ):
                if max(level + 1, floor) <= LAST_LEVEL - 1:
                    level = max(level + 1, floor)
                else:
                    t.rules["order_levels_exhausted"] += 1
                group = []
                touched = set()
                t.rules["order"] += 1
            t.inst_level[inst] = level
            group.append(inst)
            touched.add(t.inst_obj[inst])
            touched.update(targets[k])
            up = self.force_up[k]
            for other in moved.get(k, ()):
                above[other] = max(above.get(other, FIRST_LEVEL), level + 1)


def import_trace(
    path: str | Path,
    fmt: str = "auto",
    components: str | Path | None = None,
    events: int = 0,
) -> ImportedTrace:
    """Import ``path`` (see the module docstring); ``events`` > 0 keeps whole ticks up to that many events.

    The C++ port (``tickpar_native._gem5``, :func:`import_native`) runs when it is built, this module's
    :class:`_Importer` (the reference) otherwise; ``TICKPAR_GEM5_IMPORTER=python|native`` forces one.
    """
    rules = ComponentRules(load_mapping(components) if components else ())
    choice = os.environ.get("TICKPAR_GEM5_IMPORTER", "")
    if choice not in ("", "python", "native"):
        raise TraceError(f"TICKPAR_GEM5_IMPORTER={choice!r} is not allowed: one of python, native (or unset)")
    trace = None
    if choice != "python":
        trace = import_native(path, fmt, int(events), required=choice == "native")
    if trace is None:
        trace = _import_python(path, fmt, int(events))
    assign_components(trace, rules)
    return trace


def _import_python(path: str | Path, fmt: str, events: int) -> ImportedTrace:
    """The reference importer (:class:`_Importer`), components not yet assigned."""
    reader = TraceReader(str(path))
    imp = _Importer(str(path), fmt, events)
    for line in read_trace(path, fmt, reader):
        if imp.cutoff is not None and line.tick > imp.cutoff:
            break
        imp.line(line)
    return imp.finish(reader)


def _worded_by_python(path: str | Path, fmt: str, events: int, refused: str) -> ImportedTrace:
    """Bad input the C++ port refused (``refused``: its own short reason): the Python importer reads it again and
    raises its one-line :class:`TraceError`, so that there is one wording of every import error.  Input the port
    refused and the Python importer accepts is a bug of the port, said as such."""
    _import_python(path, fmt, events)
    raise TraceError(
        f"{path}: the native importer refused it ({refused}) where the Python importer reads it: a bug in "
        "native/src/gem5_import.hpp (TICKPAR_GEM5_IMPORTER=python reads it meanwhile)"
    )


def assign_components(t: ImportedTrace, rules: ComponentRules) -> None:
    """Give every event object its component (:mod:`tickpar.gem5.names`), in place; both importers end here.

    An object placed by the name alone keeps its name.  One whose name does not say its SimObject is
    placed per object and named ``<name>#<instance>`` (``Event_<N>`` keeps its name), so that every
    name still has one component.  Names and components are numbered in the order their objects were
    first seen.
    """
    obj_name = [-1] * len(t.obj_ptr)
    for obj, name in zip(t.inst_obj, t.inst_name, strict=True):
        obj_name[obj] = name
    names: list[str] = []
    name_ids: dict[str, int] = {}
    name_comp: list[int] = []
    comp_ids: dict[str, int] = {}
    components: list[str] = []
    obj_new = [-1] * len(obj_name)
    counted: Counter[str] = Counter()
    for obj, nid in enumerate(obj_name):
        if nid < 0:
            continue  # an object with no instance (only descheduled while not pending): nothing refers to it
        name, ptr = t.names[nid], t.obj_ptr[obj]
        comp, rule = rules.place(name, ptr)
        counted[rule] += 1
        if rule == "object" and not is_exit_event_name(name):
            name = f"{name}#{ptr}"
        found = name_ids.get(name)
        if found is None:
            found = name_ids[name] = len(names)
            names.append(name)
            cid = comp_ids.get(comp)
            if cid is None:
                cid = comp_ids[comp] = len(components)
                components.append(comp)
            name_comp.append(cid)
        obj_new[obj] = found
    t.names, t.name_comp, t.components = names, name_comp, components
    t.inst_name = [obj_new[obj] for obj in t.inst_obj]
    t.component_rules = counted


def import_native(path: str | Path, fmt: str, events: int, required: bool = False) -> ImportedTrace | None:
    """:func:`import_trace` by the C++ port (``tickpar_native._gem5``): the same :class:`ImportedTrace`.

    ``None`` where the Python importer must run instead: the module is not built (``required``: a
    :class:`TraceError`), an unknown format or a missing file (the Python importer's errors), a ``.gz``
    without zlib compiled in, or input the port does not promise to read the same (a non-ASCII byte,
    a number beyond int64, a ``.gz`` that cannot be read).  Components are assigned by the caller
    (:func:`assign_components`), as for the Python importer.  On bad input the port stops and the Python
    importer reads the file again to raise its :class:`TraceError` (:func:`_worded_by_python`): one text per error.
    """
    from array import array

    from tickpar.gem5.lines import FORMATS

    try:
        from tickpar_native import _gem5
    except ImportError:
        _gem5 = None
    if _gem5 is None:
        if required:
            raise TraceError("TICKPAR_GEM5_IMPORTER=native: the native importer is not built (pip install ./native)")
        return None
    p = Path(path)
    if fmt not in FORMATS or not p.is_file():
        return None
    try:
        out = _gem5.import_trace(str(p), str(p), str(path), fmt, min(max(events, -1), 1 << 62))
    except ValueError as exc:  # bad input: the Python importer words it (one text for both)
        return _worded_by_python(path, fmt, events, str(exc))
    if isinstance(out, str):
        return None
    names: list[str] = out["names"]
    reader = TraceReader(
        str(path), out["format"], out["lines"], out["events"], out["skipped_banner"], out["skipped_other"],
        list(out["warnings"]),
    )  # fmt: skip
    t = ImportedTrace(
        path=str(path), format=out["format"], names=names, obj_ptr=list(out["obj_ptr"]),
        end_tick=out["end_tick"], first_tick=out["first_tick"], rules=Counter(dict(out["rules"])), reader=reader,
        exit_events=[(str(n), int(k)) for n, k in out["exit_events"]],
    )  # fmt: skip
    for column in ARRAY_COLUMNS:
        values = array("q")  # int64; the standard library's, as a gem5trace cell may run where numpy is not
        values.frombytes(out.pop(column))  # each buffer freed in turn
        setattr(t, column, values.tolist())
    return t


def trace_key(path: str | Path, fmt: str, components: str | Path | None, events: int) -> tuple[Any, ...]:
    """A cache key for one import: the file's identity (path, size, mtime) and the options."""
    p = Path(path)
    st = os.stat(p)
    comp = None
    if components:
        cst = os.stat(components)
        comp = (str(Path(components).resolve()), cst.st_size, cst.st_mtime_ns)
    return (str(p.resolve()), st.st_size, st.st_mtime_ns, fmt, comp, int(events))
