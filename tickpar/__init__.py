"""tickpar: which ways of running a gem5-style event loop in parallel are correct, and how fast.

The package is in layers, each a sub-package (or module) that imports only from the layers below it.
Their one list is the import-linter contract (``[tool.importlinter]`` in pyproject.toml), which
``make test`` checks; the layer map, with what each layer holds (its docstring's first line), is
generated from it: docs/explanation/architecture.md, or ``python tools/layer_map.py`` in a checkout.

Modules moved into the layers in 0.2 (``tickpar.oracle`` is now ``tickpar.verify.oracle``, ...):
importing an old name fails with one line that names the new one.

Glossary (one meaning per word; where a name predates it, the name stays and its help says which):

LP (logical process)
    A share of the model's components with an event queue of its own, run by one worker of a
    partitioned strategy (conservative, optimistic, quantum; :mod:`tickpar.pdes.lp`).  Only that.
    PHOLD's ``lps`` parameter is older than this rule: it counts PHOLD's simulated *objects* (each a
    component), whatever the strategy's LPs are; it keeps its name for compatibility.
partition
    The assignment of every component to an LP (:mod:`tickpar.pdes.partition`; the ``partition``
    option of the partitioned strategies: ``auto``, ``roundrobin`` or ``linear``).
worker
    One thread or process a strategy runs the simulation on; ``workers`` (``P``) is how many.  A
    partitioned strategy runs one LP per worker.
rank
    One MPI process (``backend=mpi``): the worker of one LP.
window
    Conservative's ``sync=window``: a span ``[t, t + lookahead)`` of simulated time that every LP runs
    before a barrier.  Optimistic's ``window`` option is a different thing, a bound on optimism: LPs
    run only events before GVT + ``window`` ticks.
bin
    gem5's unit of ties: the events of one ``(when, priority)``, run in the queue's tie order.
batch
    Tick-barrier's unit of parallel work: one bin popped at once, plus the zero-delay children its
    events schedule into it, run between two barriers.
occurrence
    In an imported gem5 trace (:mod:`tickpar.gem5`): one run of an event object (an *instance*);
    the operations it made (schedules, reschedules, deschedules) belong to it.
engine
    What executes a cell's events: ``python`` (the model's own handlers, :mod:`tickpar.kernel`) or
    ``native`` (the C++ replay of the model's recorded event DAG, :mod:`tickpar.native`).  Only that:
    a strategy is not an engine, and the peer simulators of the engine benchmark are "peers".
model
    The simulated system a workload builds from its params (:class:`tickpar.kernel.model.Model`:
    components, events, links).  The prediction side's "model" is the strategy-time model
    (:mod:`tickpar.perf.predict.strategy_times`); a gem5 trace's replay is built of trace components
    (:mod:`tickpar.gem5.trace_components`).
cell
    One run's coordinates: workload and shape (its params), strategy and options, workers, seed,
    order mode, work model and engine (:class:`tickpar.runner.Cell`); a sweep is a set of cells.
shape
    A named set of a workload's params in a sweep's config (``wide``, ``starved``; a swept value
    adds a suffix: ``wide.work_us10``); a gem5 trace's shape names the trace.
variant
    A named set of a strategy's options in a sweep's config (``conservative/window-threads``): the
    strategy's label on the report's pages.
"""

from __future__ import annotations

import importlib.abc
import os
import sys

# numpy's OpenBLAS starts a thread per core that spins for a while after start-up, beside a timed
# cell's own threads, and slowed a native cell's first values (docs/measurements/2026-12-03-native-timing.md).
# No cell needs a threaded BLAS, so tickpar asks for one BLAS thread before anything imports numpy
# (a value the user set wins).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.2.0"

#: Old module -> where it lives now (the layers of 0.2).
MOVED: dict[str, str] = {
    "tickpar.envinfo": "tickpar.host.envinfo",
    "tickpar.procgroup": "tickpar.host.procgroup",
    "tickpar.orchestrator": "tickpar.host.orchestrator",
    "tickpar.progress": "tickpar.host.progress",
    "tickpar.eventkeys": "tickpar.kernel.eventkeys",
    "tickpar.eventq": "tickpar.kernel.eventq",
    "tickpar.digests": "tickpar.kernel.digests",
    "tickpar.model": "tickpar.kernel.model",
    "tickpar.params": "tickpar.kernel.params",
    "tickpar.work": "tickpar.kernel.work",
    "tickpar.simloop": "tickpar.kernel.simloop",
    "tickpar.oracle": "tickpar.verify.oracle",
    "tickpar.anatomy": "tickpar.verify.anatomy",
    "tickpar.registry": "tickpar.plugins.registry",
    "tickpar.timing": "tickpar.perf.timing",
    "tickpar.bounds": "tickpar.perf.predict.bounds",
    "tickpar.prediction": "tickpar.perf.predict.prediction",
    "tickpar.sweep": "tickpar.pipeline.sweep",
    "tickpar.aggregate": "tickpar.pipeline.aggregate",
    "tickpar.accuracy": "tickpar.pipeline.accuracy",
    "tickpar.shrink": "tickpar.pipeline.shrink",
    "tickpar.report_speed": "tickpar.report.speed",
    "tickpar.report_failures": "tickpar.report.failures",
    "tickpar.report_accuracy": "tickpar.report.accuracy",
}


class _MovedModuleHint(importlib.abc.MetaPathFinder):
    """Turns an import of a module that moved into a one-line error naming its new place."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        new = MOVED.get(fullname)
        if new is not None:
            raise ModuleNotFoundError(f"{fullname} moved to {new} in tickpar 0.2: import it from there", name=fullname)
        return None


if not any(isinstance(f, _MovedModuleHint) for f in sys.meta_path):
    sys.meta_path.append(_MovedModuleHint())
