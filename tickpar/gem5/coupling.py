"""How an imported trace's components are coupled: messages, link latencies, direct calls, traits.

:func:`coupling` classifies every instance and operation of an
:class:`~tickpar.gem5.importer.ImportedTrace` in two linear passes (plain Python: a replay cell, also
under the free-threaded interpreter, imports nothing outside the cell dependencies):

* a *message* instance: one schedule, by another component's occurrence, ``delay > 0``, never moved
  (replayed through a link; what a partitioned strategy may cut);
* ``latency``: per (source, destination) component pair, the smallest delay of a message between them;
* ``direct``: the pairs where an occurrence moves another component's event other than as a message (a
  direct call into that component, as gem5's port calls are);

and :func:`trace_traits` the workload traits the trace truly has (:data:`tickpar.plugins.traits.TRAITS`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tickpar.gem5.importer import CLOCK, ImportedTrace
from tickpar.native.record import DESCHEDULE, SCHEDULE
from tickpar.plugins.traits import LONG_RUN_EVENTS

__all__ = ["SHARED_BIN_SHARE", "Coupling", "coupling", "trace_traits"]

#: ``many_events_per_tick`` when at least this share of events sits in (tick, priority) bins that
#: several components share.
SHARED_BIN_SHARE = 0.25


@dataclass
class Coupling:
    """What :func:`coupling` computes (indices are the trace's ids)."""

    inst_comp: list[int]  # per instance: its component
    op_src: list[int]  # per operation: the component whose occurrence made it (-1: before the loop)
    op_dst: list[int]  # per operation: its target's component
    message: list[bool]  # per instance: replayed as a message
    latency: dict[tuple[int, int], int]
    direct: set[tuple[int, int]]
    served: list[int]  # the occurrences the replay serves, in execution order


def coupling(trace: ImportedTrace) -> Coupling:
    """Messages, latencies and direct calls of ``trace`` (see the module docstring)."""
    t = trace
    name_comp = t.name_comp
    inst_comp = [name_comp[n] for n in t.inst_name]
    occ_comp = [inst_comp[i] for i in t.occ_inst]
    op_src = [occ_comp[k] if k >= 0 else -1 for k in t.op_occ]
    op_dst = [inst_comp[i] for i in t.op_inst]
    n = len(t.inst_obj)
    count = [0] * n
    first = [-1] * n
    for i, inst in enumerate(t.op_inst):
        if not count[inst]:
            first[inst] = i
        count[inst] += 1
    kind, mode, value, occ = t.op_kind, t.op_mode, t.op_value, t.op_occ
    message = [False] * n
    for inst in range(n):
        i = first[inst]
        if count[inst] == 1 and kind[i] == SCHEDULE and mode[i] == CLOCK and occ[i] >= 0 and value[i] > 0:
            message[inst] = op_src[i] != inst_comp[inst]
    latency: dict[tuple[int, int], int] = {}
    direct: set[tuple[int, int]] = set()
    for i, inst in enumerate(t.op_inst):
        src = op_src[i]
        if src < 0:
            continue
        pair = (src, op_dst[i])
        if message[inst]:
            known = latency.get(pair)
            if known is None or value[i] < known:
                latency[pair] = value[i]
        elif src != pair[1]:
            direct.add(pair)
    end = t.end_tick
    served = [k for k, tick in enumerate(t.occ_tick) if tick <= end]
    return Coupling(inst_comp, op_src, op_dst, message, latency, direct, served)


def trace_traits(trace: ImportedTrace, c: Coupling | None = None) -> frozenset[str]:
    """The workload traits ``trace`` truly has; ``recorded_operations`` always (it is a replay)."""
    t = trace
    c = c if c is not None else coupling(t)
    out: set[str] = {"recorded_operations"}
    if c.direct:
        out.add("direct_calls")
    names: dict[int, set[int]] = {}
    for comp, name in zip(c.inst_comp, t.inst_name, strict=True):
        names.setdefault(comp, set()).add(name)
    if any(len(v) > 1 for v in names.values()):
        out.add("several_named_events")
    if c.served:
        # (tick, level) bins: served events run in (tick, level) order, so a bin is a run of equal keys
        shared = 0
        run: list[int] = []
        key = None
        for k in c.served:
            inst = t.occ_inst[k]
            here = (t.occ_tick[k], t.inst_level[inst])
            if here != key:
                shared += len(run) if len(set(run)) > 1 else 0
                run, key = [], here
            run.append(c.inst_comp[inst])
        shared += len(run) if len(set(run)) > 1 else 0
        if shared / len(c.served) >= SHARED_BIN_SHARE:
            out.add("many_events_per_tick")
        busy = {c.inst_comp[t.occ_inst[k]] for k in c.served}
        if len(c.served) / len(busy) >= LONG_RUN_EVENTS:
            out.add("long_run")
    if any(m != CLOCK and k >= 0 and kd != DESCHEDULE for m, k, kd in zip(t.op_mode, t.op_occ, t.op_kind, strict=True)):
        out.add("stored_ticks")
    if any(lat == 0 for lat in c.latency.values()):
        out.add("zero_latency_links")
    return frozenset(out)
