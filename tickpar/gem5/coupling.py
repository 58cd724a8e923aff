"""How an imported trace's components are coupled: messages, link latencies, direct calls, traits (vectorised).

:func:`coupling` classifies every instance and operation of an
:class:`~tickpar.gem5.importer.ImportedTrace` with numpy, in time linear in the trace (the profile of a
million-event trace needs it):

* a *message* instance: one schedule, by another component's occurrence, ``delay > 0``, never moved
  (replayed through a link; what a partitioned strategy may cut);
* ``latency``: per (source, destination) component pair, the smallest delay of a message between them;
* ``direct``: the pairs where an occurrence moves another component's event other than as a message (a
  direct call into that component, as gem5's port calls are);

and :func:`trace_traits` the workload traits the trace truly has (:data:`tickpar.plugins.traits.TRAITS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tickpar.gem5.importer import CLOCK, ImportedTrace
from tickpar.native.record import DESCHEDULE, SCHEDULE
from tickpar.plugins.traits import LONG_RUN_EVENTS

__all__ = ["SHARED_BIN_SHARE", "Coupling", "coupling", "trace_traits"]

#: ``many_events_per_tick`` when at least this share of events sits in (tick, priority) bins that
#: several components share.
SHARED_BIN_SHARE = 0.25


@dataclass
class Coupling:
    """The arrays :func:`coupling` computes (indices are the trace's ids)."""

    inst_comp: np.ndarray  # per instance: its component
    op_src: np.ndarray  # per operation: the component whose occurrence made it (-1: before the loop)
    op_dst: np.ndarray  # per operation: its target's component
    message: np.ndarray  # per instance: replayed as a message (bool)
    latency: dict[tuple[int, int], int]
    direct: set[tuple[int, int]]
    served: np.ndarray  # the occurrences the replay serves, in execution order


def _np(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def coupling(trace: ImportedTrace) -> Coupling:
    """Messages, latencies and direct calls of ``trace`` (see the module docstring)."""
    t = trace
    name_comp = _np(t.name_comp)
    inst_comp = name_comp[_np(t.inst_name)] if t.inst_name else np.zeros(0, dtype=np.int64)
    occ_comp = inst_comp[_np(t.occ_inst)] if t.occ_inst else np.zeros(0, dtype=np.int64)
    op_occ, op_inst = _np(t.op_occ), _np(t.op_inst)
    op_kind, op_mode, op_value = _np(t.op_kind), _np(t.op_mode), _np(t.op_value)
    op_src = np.where(op_occ >= 0, occ_comp[np.maximum(op_occ, 0)] if len(occ_comp) else -1, -1)
    op_dst = inst_comp[op_inst] if len(op_inst) else np.zeros(0, dtype=np.int64)
    n = len(t.inst_obj)
    count = np.bincount(op_inst, minlength=n) if len(op_inst) else np.zeros(n, dtype=np.int64)
    first = np.full(n, -1, dtype=np.int64)
    first[op_inst[::-1]] = np.arange(len(op_inst) - 1, -1, -1)  # the last write wins: each instance's first op
    ok = (count == 1) & (first >= 0)
    f = np.maximum(first, 0)
    message = np.zeros(n, dtype=bool)
    if len(op_inst):
        message = ok & (op_kind[f] == SCHEDULE) & (op_mode[f] == CLOCK) & (op_occ[f] >= 0) & (op_value[f] > 0)
        message &= op_src[f] != inst_comp
    by_message = message[op_inst] if len(op_inst) else np.zeros(0, dtype=bool)
    made = op_occ >= 0
    latency: dict[tuple[int, int], int] = {}
    sel = made & by_message
    if sel.any():
        pairs = op_src[sel] * (1 << 32) + op_dst[sel]
        order = np.lexsort((op_value[sel], pairs))
        keys, starts = np.unique(pairs[order], return_index=True)
        mins = op_value[sel][order][starts]
        latency = {(int(k >> 32), int(k & 0xFFFFFFFF)): int(v) for k, v in zip(keys, mins, strict=True)}
    sel = made & ~by_message & (op_src != op_dst)
    direct = {(int(k >> 32), int(k & 0xFFFFFFFF)) for k in np.unique(op_src[sel] * (1 << 32) + op_dst[sel])}
    occ_tick = _np(t.occ_tick)
    served = np.nonzero(occ_tick <= t.end_tick)[0] if len(occ_tick) else np.zeros(0, dtype=np.int64)
    return Coupling(inst_comp, op_src, op_dst, message, latency, direct, served)


def trace_traits(trace: ImportedTrace, c: Coupling | None = None) -> frozenset[str]:
    """The workload traits ``trace`` truly has; ``recorded_operations`` always (it is a replay)."""
    t = trace
    c = c if c is not None else coupling(t)
    out: set[str] = {"recorded_operations"}
    if c.direct:
        out.add("direct_calls")
    if t.inst_name:
        names = np.unique(c.inst_comp * (1 << 32) + _np(t.inst_name))  # distinct (component, name) pairs
        if np.bincount(names >> 32).max() > 1:
            out.add("several_named_events")
    served = c.served
    if len(served):
        inst = _np(t.occ_inst)[served]
        tick = _np(t.occ_tick)[served]
        level = _np(t.inst_level)[inst]
        comp = c.inst_comp[inst]
        # (tick, level) bins: served events run in (tick, level) order, so a bin is a run of equal keys
        key = tick * 256 + (level + 128)
        bins = np.concatenate(([0], np.cumsum(key[1:] != key[:-1])))
        per_bin = np.unique(bins * (1 << 32) + comp) >> 32  # one entry per (bin, component)
        comps_in_bin = np.bincount(per_bin, minlength=int(bins.max()) + 1)
        if (comps_in_bin[bins] > 1).mean() >= SHARED_BIN_SHARE:
            out.add("many_events_per_tick")
        if len(served) / len(np.unique(comp)) >= LONG_RUN_EVENTS:
            out.add("long_run")
    op_occ = _np(t.op_occ)
    if ((_np(t.op_mode) != CLOCK) & (op_occ >= 0) & (_np(t.op_kind) != DESCHEDULE)).any():
        out.add("stored_ticks")
    if any(lat == 0 for lat in c.latency.values()):
        out.add("zero_latency_links")
    return frozenset(out)
