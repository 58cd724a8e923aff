"""Layer ``gem5``: gem5 event traces: read them, rebuild the run they record, replay it, profile it.

* :mod:`tickpar.gem5.lines`: the two trace formats, streamed (the stock ``Event`` trace, the insert log);
* :mod:`tickpar.gem5.names`: which component (SimObject) an event belongs to;
* :mod:`tickpar.gem5.importer`: instances, occurrences and operations, and the rules for what the
  trace does not print;
* :mod:`tickpar.gem5.replay` and :mod:`tickpar.gem5.trace_components`: the replay plan and model of the
  ``gem5trace`` workload;
* :mod:`tickpar.gem5.profile`: ``tickpar trace-profile``;
* :mod:`tickpar.gem5.stats`: a run's own host cost per event, from its gem5 ``stats.txt``;
* :mod:`tickpar.gem5.emit`: write a run of the Python engine as a gem5 trace (ground truth for the importer).

May import: ``tickpar.perf`` (the bounds) and every layer below it.
"""

from pathlib import Path

from tickpar.gem5.importer import ImportedTrace, import_trace, trace_key
from tickpar.gem5.lines import FORMATS, TraceError
from tickpar.gem5.replay import ReplayPlan, replay_plan

#: A small example trace that ships with tickpar: a 2-core ``multicore`` run that tickpar emitted in
#: gem5's stock format, and its components mapping (the ``gem5trace`` workload's default).
EXAMPLE_TRACE = Path(__file__).parent / "data" / "multicore-2core.event.txt.gz"
EXAMPLE_COMPONENTS = EXAMPLE_TRACE.with_name(EXAMPLE_TRACE.name + ".components")



def trace_source(trace: str, components: str = "") -> tuple[str, str | None]:
    """``(trace, components)`` as given, or the bundled example and its mapping when ``trace`` is empty."""
    if not trace:
        return str(EXAMPLE_TRACE), components or str(EXAMPLE_COMPONENTS)
    return trace, components or None


__all__ = [
    "EXAMPLE_COMPONENTS",
    "EXAMPLE_TRACE",
    "FORMATS",
    "ImportedTrace",
    "ReplayPlan",
    "TraceError",
    "import_trace",
    "replay_plan",
    "trace_key",
    "trace_source",
]
