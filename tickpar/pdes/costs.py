"""Component weights for the partitioner: how many events each component runs (a profiling prefix).

A partition that balances component *counts* can leave one LP with most of the events: on multicore's
``wide`` shape the busiest of two LPs ran 67% of them, which capped conservative windows at ~1.47x
however cheap the synchronisation.  :func:`event_weights` counts the events per component in a
sequential run of the same spec (no synthetic work, the same order mode), stopped after
``PROFILE_EVENTS`` events, as PDES engines profile a prefix of a run before they partition it.

The weights are a pure function of the spec (workload, params, seed, order): every process and MPI
rank would compute the same ones, but only the process that makes the plan needs them (the plan's
``lp_of`` travels to the LPs).  They are cached per spec in this process, so a timing worker profiles
once and every timed run after it pays nothing; the first run pays one short sequential prefix
(``setup_s``, part of the end-to-end time, never of ``loop_s``).
"""

from __future__ import annotations

import json
from functools import lru_cache

from tickpar.kernel.params import Param
from tickpar.kernel.simloop import start_single_queue
from tickpar.plugins import RunSpec

__all__ = ["PARTITION_WEIGHTS", "PARTITION_WEIGHTS_OPTION", "PROFILE_EVENTS", "event_weights", "weights_for"]

#: Events of the profiling prefix: on the default sweep's shapes (about 1,000 events) the whole run;
#: on long runs a prefix of a few tens of milliseconds in pure Python.
PROFILE_EVENTS = 20_000
#: ``partition_weights`` option values: ``events`` (per-component event counts of the profiling prefix)
#: or ``count`` (every component weighs 1: the partition by component count, for comparison).
PARTITION_WEIGHTS = ("events", "count")
#: The option every partitioned strategy (conservative, optimistic, quantum) offers, defined once.
PARTITION_WEIGHTS_OPTION = Param(
    str,
    "events",
    "what partition=auto balances: events (per component, from a profiled prefix of a sequential run) "
    "or count (components)",
    choices=PARTITION_WEIGHTS,
)


@lru_cache(maxsize=16)
def _profile(spec_json: str, events: int) -> tuple[float, ...]:
    spec = RunSpec.from_dict(json.loads(spec_json))
    model, queue = start_single_queue(spec, work="none")
    served = 0
    while served < events and not queue.empty():
        served += 1
        if queue.service_one() is not None:  # the exit event: simulate()'s limit
            break
    # A component that ran nothing in the prefix still weighs a little: it has state and may run later.
    return tuple(float(comp.count) + 0.5 for comp in model.components)


def event_weights(spec: RunSpec, events: int = PROFILE_EVENTS) -> tuple[float, ...]:
    """Per component (in id order), events run in the first ``events`` of a sequential run of ``spec``, + 0.5."""
    data = spec.with_trace(False).to_dict()
    return _profile(json.dumps(data, sort_keys=True, default=str), events)


def weights_for(spec: RunSpec, how: str) -> tuple[float, ...] | None:
    """The partitioner's weights for ``partition_weights=how``: event counts, or ``None`` (unit weights)."""
    if how == "events":
        return event_weights(spec)
    if how == "count":
        return None
    raise ValueError(f"partition_weights {how!r} is not allowed: choose one of {', '.join(PARTITION_WEIGHTS)}")
