"""The replay plan of an imported trace: event objects, messages, links and the traits it has.

An :class:`~tickpar.gem5.importer.ImportedTrace` holds instances (one scheduling each); a replay
needs long-lived event objects, as gem5 has.  :func:`replay_plan` maps every instance to

* a *long-lived object*, one per (gem5 event object, priority level): scheduled, rescheduled
  and descheduled where the trace says, and run once per occurrence, in order; or
* a *message* (:meth:`ImportedTrace.is_message`): one schedule by another component's
  occurrence with ``delay > 0``, sent through a link whose latency is the smallest such delay
  between the two components (what a partitioned run may cut);

and every operation on another component's long-lived event to a *direct call* into that
component (gem5's port calls), which then makes the operation itself.  The inferred footprint,
own component plus direct calls, is a lower bound of the true one: gem5's handlers also call
into components without scheduling anything there, which no trace format prints.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tickpar.gem5.importer import CLOCK, ImportedTrace
from tickpar.native.record import SCHEDULE
from tickpar.plugins.traits import LONG_RUN_EVENTS

__all__ = ["ReplayPlan", "replay_plan"]

#: ``many_events_per_tick`` when at least this share of events sits in (tick, priority) bins that
#: several components share.
SHARED_BIN_SHARE = 0.25


@dataclass
class ReplayPlan:
    """What the ``gem5trace`` model is built from (ids index :attr:`trace`'s lists)."""

    trace: ImportedTrace
    message: list[bool]
    inst_object: list[int]  # per instance: its long-lived object (-1: a message)
    obj_comp: list[int] = field(default_factory=list)
    obj_name: list[int] = field(default_factory=list)
    obj_level: list[int] = field(default_factory=list)
    obj_occs: list[list[int]] = field(default_factory=list)
    init_ops: list[int] = field(default_factory=list)
    occ_ops: list[list[int]] = field(default_factory=list)
    #: (src component, dst component) -> the smallest delay of a message between them
    latency: dict[tuple[int, int], int] = field(default_factory=dict)
    #: (src, dst, name, level) of every message link
    links: list[tuple[int, int, int, int]] = field(default_factory=list)
    #: (caller, callee) component pairs with direct calls
    direct: set[tuple[int, int]] = field(default_factory=set)

    def performer(self, op: int) -> int:
        """The component whose occurrence made operation ``op`` (-1: before the loop)."""
        occ = self.trace.op_occ[op]
        return -1 if occ < 0 else self.trace.inst_comp(self.trace.occ_inst[occ])

    def traits(self) -> frozenset[str]:
        """The workload traits this trace truly has (see :data:`tickpar.plugins.traits.TRAITS`)."""
        t = self.trace
        out: set[str] = {"recorded_operations"}
        if self.direct:
            out.add("direct_calls")
        names_of: dict[int, set[int]] = {}
        for inst in range(len(t.inst_obj)):
            names_of.setdefault(t.inst_comp(inst), set()).add(t.inst_name[inst])
        if any(len(n) > 1 for n in names_of.values()):
            out.add("several_named_events")
        served = t.served()
        bins: dict[tuple[int, int], set[int]] = {}
        for k in served:
            inst = t.occ_inst[k]
            bins.setdefault((t.occ_tick[k], t.inst_level[inst]), set()).add(t.inst_comp(inst))
        counts = Counter((t.occ_tick[k], t.inst_level[t.occ_inst[k]]) for k in served)
        shared = sum(n for key, n in counts.items() if len(bins[key]) > 1)
        if served and shared / len(served) >= SHARED_BIN_SHARE:
            out.add("many_events_per_tick")
        if any(t.op_mode[i] != CLOCK and t.op_occ[i] >= 0 for i in range(len(t.op_kind))):
            out.add("stored_ticks")
        if any(lat == 0 for lat in self.latency.values()):
            out.add("zero_latency_links")
        busy = {t.inst_comp(t.occ_inst[k]) for k in served}
        if busy and len(served) / len(busy) >= LONG_RUN_EVENTS:
            out.add("long_run")
        return frozenset(out)


def replay_plan(trace: ImportedTrace) -> ReplayPlan:
    """Objects, messages, links and direct calls of ``trace`` (see the module docstring)."""
    t = trace
    message = t.is_message()
    plan = ReplayPlan(trace=t, message=message, inst_object=[-1] * len(t.inst_obj))
    objects: dict[tuple[int, int], int] = {}
    for inst, obj in enumerate(t.inst_obj):
        if message[inst]:
            continue
        key = (obj, t.inst_level[inst])
        found = objects.get(key)
        if found is None:
            found = objects[key] = len(plan.obj_comp)
            plan.obj_comp.append(t.inst_comp(inst))
            plan.obj_name.append(t.inst_name[inst])
            plan.obj_level.append(t.inst_level[inst])
            plan.obj_occs.append([])
        plan.inst_object[inst] = found
    end = t.end_tick
    for k, inst in enumerate(t.occ_inst):
        if t.occ_tick[k] <= end and not message[inst]:
            plan.obj_occs[plan.inst_object[inst]].append(k)
    plan.occ_ops = [[] for _ in t.occ_inst]
    links: set[tuple[int, int, int, int]] = set()
    for i, occ in enumerate(t.op_occ):
        if occ < 0:
            plan.init_ops.append(i)
            continue
        plan.occ_ops[occ].append(i)
        inst = t.op_inst[i]
        src, dst = plan.performer(i), t.inst_comp(inst)
        if message[inst]:
            assert t.op_kind[i] == SCHEDULE
            pair = (src, dst)
            delay = t.op_value[i]
            plan.latency[pair] = min(plan.latency.get(pair, delay), delay)
            links.add((src, dst, t.inst_name[inst], t.inst_level[inst]))
        elif src != dst:
            plan.direct.add((src, dst))
    plan.links = sorted(links)
    return plan
