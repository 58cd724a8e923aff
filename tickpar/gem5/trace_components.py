"""The replay model of an imported trace: components whose handlers re-issue the recorded operations.

Each component of the trace is a :class:`TraceComponent`.  Its long-lived events (one per gem5
event object and priority level, :mod:`tickpar.gem5.replay`) run the object's next recorded
occurrence; a message runs the occurrence it carries.  An occurrence spends its component's
``work_us`` (the workload's ``work_us``, or the run's own cost per event of that component:
:mod:`tickpar.gem5.stats`) and makes its operations in the order gem5 made them: on its own
events directly, on another component's events through a direct call into that component (:meth:`Component.call`, which
makes the operation there, as gem5's port calls do), and messages through their links.  ``when``
is ``cur_tick + delay`` for operations the trace made relative to the clock, so a strategy that
moves the clock early moves them exactly as gem5 would.  An occurrence that the trace does not
have (an object run more often than it ran in gem5) is an error: the run ends as a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tickpar.gem5.importer import CLOCK
from tickpar.gem5.replay import ReplayPlan
from tickpar.kernel import statesave
from tickpar.kernel.model import Component, Link, Model, ModelEvent
from tickpar.native.record import DESCHEDULE, RESCHEDULE, SCHEDULE

__all__ = ["TraceComponent", "build_replay_model"]


class TraceComponent(Component):
    """One gem5 SimObject of the trace; its state is how often each of its objects ran."""

    state_attrs = ("runs",)

    def __init__(self, model: Model, name: str, plan: ReplayPlan, cid: int, work_us: float) -> None:
        super().__init__(model, name)
        self.plan = plan
        self.cid = cid
        self.work_us = work_us
        self.runs: dict[int, int] = {}
        self.objects: dict[int, ModelEvent] = {}
        self.links: dict[tuple[int, int, int], Link] = {}  # (dst, name, level) -> link
        self.peers: dict[int, TraceComponent] = {}

    def add_object(self, obj: int) -> None:
        plan = self.plan
        name = plan.trace.names[plan.obj_name[obj]]
        handler = lambda _payload, o=obj: self.run_object(o)  # noqa: E731
        self.objects[obj] = self.model.event_class(self, name, handler, plan.obj_level[obj])

    # -- running ---------------------------------------------------------------------------------------
    def init(self) -> None:
        plan = self.plan
        for i in plan.init_ops:
            if plan.trace.inst_comp(plan.trace.op_inst[i]) == self.cid:
                self.operate(i)

    def run_object(self, obj: int) -> None:
        k = self.runs.get(obj, 0)
        self.runs[obj] = k + 1
        occs = self.plan.obj_occs[obj]
        if k >= len(occs):
            name = self.objects[obj].name
            raise RuntimeError(f"event {name} ran {k + 1} times at tick {self.cur_tick}: the trace ran it {len(occs)}")
        self.perform(occs[k])

    def on_message(self, occ: int) -> None:
        if occ < 0:
            raise RuntimeError(f"{self.name}: a message ran at tick {self.cur_tick} that never ran in the trace")
        self.perform(occ)

    def perform(self, occ: int) -> None:
        if self.work_us:
            self.work(self.work_us)
        plan = self.plan
        t = plan.trace
        for i in plan.occ_ops[occ]:
            inst = t.op_inst[i]
            if plan.message[inst]:
                dst = t.inst_comp(inst)
                link = self.links[(dst, t.inst_name[inst], t.inst_level[inst])]
                self.send(link, t.inst_occ[inst], t.op_value[i] - link.latency)
                continue
            target = plan.obj_comp[plan.inst_object[inst]]
            if target == self.cid:
                self.operate(i)
            else:
                self.call(self.peers[target], "operate", i)

    def operate(self, i: int) -> None:
        """Make recorded operation ``i`` on one of this component's own events (also a direct call's body)."""
        plan = self.plan
        t = plan.trace
        event = self.objects[plan.inst_object[t.op_inst[i]]]
        kind = t.op_kind[i]
        if kind == DESCHEDULE:
            self.deschedule(event)
            return
        when = self.cur_tick + t.op_value[i] if t.op_mode[i] == CLOCK else t.op_value[i]
        if kind == SCHEDULE:
            self.schedule(event, when)
        elif kind == RESCHEDULE:
            self.reschedule(event, when)
        else:
            raise ValueError(f"operation kind {kind}: expected schedule, reschedule or deschedule")

    def state(self) -> tuple[Any, ...]:
        return tuple(sorted(self.runs.items()))


def build_replay_model(
    model: Model, plan: ReplayPlan, work_us: float, per_component_us: Mapping[str, float] | None = None
) -> list[TraceComponent]:
    """Create the components, their events, links and direct-call declarations of ``plan`` in ``model``.

    Every event spends ``work_us``, or its component's entry of ``per_component_us`` where it has one
    (fixed per component here, so the per-event path reads one attribute as before)."""
    t = plan.trace
    costs = per_component_us or {}
    comps = [
        TraceComponent(model, name, plan, cid, costs.get(name, work_us)) for cid, name in enumerate(t.components)
    ]
    for comp in comps:
        comp.peers = {c.cid: c for c in comps}
    for obj, cid in enumerate(plan.obj_comp):
        comps[cid].add_object(obj)
    for src, dst, name, level in plan.links:
        link = model.link(
            comps[src], comps[dst], "on_message", plan.latency[(src, dst)], priority=level, event_name=t.names[name]
        )
        comps[src].links[(dst, name, level)] = link
    for a, b in sorted(plan.direct):
        model.connect_direct(comps[a], comps[b])
    model.end_tick = t.end_tick
    return comps


# The plan is the replay's program, never its state: strategies that roll back keep it by reference (their
# saves and the rollback check's fingerprints would otherwise copy the whole trace at every event).
statesave.register_reference(ReplayPlan)
