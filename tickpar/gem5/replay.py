"""The replay plan of an imported trace: event objects, messages, links and the traits it has.

An :class:`~tickpar.gem5.importer.ImportedTrace` holds instances (one scheduling each); a replay
needs long-lived event objects, as gem5 has.  :func:`replay_plan` maps every instance to

* a *long-lived object*, one per (gem5 event object, priority level): scheduled, rescheduled
  and descheduled where the trace says, and run once per occurrence, in order; or
* a *message* (:func:`tickpar.gem5.coupling.coupling`): one schedule by another component's
  occurrence with ``delay > 0``, sent through a link whose latency is the smallest such delay
  between the two components (what a partitioned run may cut);

and every operation on another component's long-lived event to a *direct call* into that
component (gem5's port calls), which then makes the operation itself.  The inferred footprint,
own component plus direct calls, is a lower bound of the true one: gem5's handlers also call
into components without scheduling anything there, which no trace format prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tickpar.gem5.coupling import Coupling, coupling, trace_traits
from tickpar.gem5.importer import ImportedTrace

__all__ = ["ReplayPlan", "replay_plan"]

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
    coupling: Coupling | None = None

    def performer(self, op: int) -> int:
        """The component whose occurrence made operation ``op`` (-1: before the loop)."""
        occ = self.trace.op_occ[op]
        return -1 if occ < 0 else self.trace.inst_comp(self.trace.occ_inst[occ])

    def traits(self) -> frozenset[str]:
        """The workload traits this trace truly has (:func:`tickpar.gem5.coupling.trace_traits`)."""
        return trace_traits(self.trace, self.coupling)


def replay_plan(trace: ImportedTrace) -> ReplayPlan:
    """Objects, messages, links and direct calls of ``trace`` (see the module docstring)."""
    t = trace
    c = coupling(t)
    message = c.message
    plan = ReplayPlan(trace=t, message=message, inst_object=[-1] * len(t.inst_obj), coupling=c)
    plan.latency, plan.direct = c.latency, c.direct
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
        if message[inst]:
            links.add((plan.performer(i), t.inst_comp(inst), t.inst_name[inst], t.inst_level[inst]))
    plan.links = sorted(links)
    return plan
