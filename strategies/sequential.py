"""``sequential``: gem5's ``doSimLoop``/``serviceOne`` on one queue, the reference for every result.

Sync: none: one worker, one :class:`~tickpar.kernel.eventq.EventQueue` holding every
component (:func:`~tickpar.kernel.simloop.start_single_queue`), events served
strictly one at a time in (when, priority, tie) order; ``cur_tick`` moves
only inside ``service_one``, right before ``process()``.  A workload's
``end_tick`` becomes gem5's ``simulate()`` limit: an exit event at
``(end_tick, SIM_EXIT)``.

Lookahead: not used: nothing runs beside anything else.

Ownership: the one worker is inside every component; the model is built
without race guards.

Determinism: deterministic in both order modes: it *defines* the golden
digests.  ``checks=false`` runs gem5 with its assertions compiled out
(violations recorded; a double schedule runs twice; a deschedule of an event
not in the queue panics, verdict ``crash``).

Promise: ``exact``, by definition.
"""
from __future__ import annotations

import time
from typing import Any

from tickpar.host.progress import track
from tickpar.kernel.params import Param
from tickpar.kernel.simloop import start_single_queue
from tickpar.plugins import RunSpec, Strategy, StrategyResult, base_stats
from tickpar.verify.oracle import collect


class Sequential(Strategy):
    name = "sequential"
    summary = "gem5's serviceOne loop on one queue, one event at a time: the reference"
    engines = ("python", "native")  # the native engine has it built in (native/src)
    options = {
        "checks": Param(bool, True, "keep gem5's schedule/reschedule assertions (false: count violations)"),
    }
    max_workers = 1

    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        model, queue = start_single_queue(spec, checks=options.get("checks", True))
        started = time.perf_counter()
        if model.end_tick is None:
            queue.run()  # gem5 doSimLoop: serve until the exit event comes back (or nothing is left)
        else:
            # A progress bar on a terminal only (sampled by a thread; the event loop is untouched).
            with track(model.end_tick, lambda: queue.cur_tick):
                queue.run()
        elapsed = time.perf_counter() - started
        record = collect(model, violations=queue.violations)
        stats = base_stats(1)
        stats.update(events=record.events, batches=record.events, mean_events_per_batch=1.0, loop_s=elapsed)
        return StrategyResult(record, stats)
