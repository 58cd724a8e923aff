"""``gem5trace``: replay a real gem5 run, imported from its event trace.

``trace`` names a gem5 event trace: the stock ``--debug-flags=Event`` trace or the insert log
(``format``, default ``auto``; plain or ``.gz``).  :mod:`tickpar.gem5.importer` rebuilds the event
objects, occurrences and operations (its docstring lists every rule for what the trace does not
print); :mod:`tickpar.gem5.model` replays them: each occurrence re-issues the operations gem5
made, at the ticks gem5 made them, with ``work_us`` of synthetic work.  Components are gem5's
SimObjects, from the event names (:mod:`tickpar.gem5.names`) or a ``components`` mapping file.
``events`` replays the whole ticks before the (N+1)-th event (0: all).  With no ``trace``, the
workload replays a small example that ships with tickpar: a 2-core ``multicore`` run that tickpar
emitted in gem5's stock format (so the conformance suite covers this workload too).

The footprint of an occurrence (its own component plus the components whose events it moves)
is inferred: a lower bound of the true one.  The traits are the trace's own (zero-delay direct
calls, several named events per component, ...), computed from the imported trace.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from tickpar.gem5 import ReplayPlan, TraceError, import_trace, replay_plan, trace_key, trace_source
from tickpar.gem5.lines import FORMATS
from tickpar.gem5.model import build_replay_model
from tickpar.kernel.model import Model
from tickpar.kernel.params import Param, ParamError
from tickpar.plugins import Workload


@lru_cache(maxsize=4)
def _plan(key: tuple[Any, ...], path: str, fmt: str, components: str | None, events: int) -> ReplayPlan:
    return replay_plan(import_trace(path, fmt, components, events))


def plan_for(params: dict[str, Any]) -> ReplayPlan:
    """The (cached) replay plan of a resolved params dict; bad input is a one-line ParamError."""
    path, components = trace_source(params["trace"], params["components"])
    fmt, events = params["format"], params["events"]
    try:
        key = trace_key(path, fmt, components, events)
        return _plan(key, path, fmt, components, events)
    except FileNotFoundError as exc:
        raise ParamError(f"workload gem5trace: {exc.filename}: no such file") from None
    except (TraceError, ValueError) as exc:
        raise ParamError(f"workload gem5trace: {exc}") from None


class Gem5Trace(Workload):
    name = "gem5trace"
    summary = "replay a gem5 run from its event trace (stock Event trace or insert log)"
    params = {
        "trace": Param(str, "", "path of the gem5 event trace, .txt or .gz (empty: a bundled 2-core example)"),
        "format": Param(str, "auto", "trace format", choices=FORMATS),
        "components": Param(str, "", "mapping file, 'REGEX -> COMPONENT' per line (empty: gem5's names)"),
        "events": Param(int, 0, "replay the whole ticks before the (N+1)-th event (0: all)", min=0, max=10**9),
        "work_us": Param(float, 0.0, "synthetic work per event, microseconds", min=0.0, max=1e6),
    }

    def check_params(self, params: dict[str, Any]) -> None:
        plan_for(params)

    def traits(self, params: dict[str, Any]) -> frozenset[str]:
        """The imported trace's own traits (:meth:`tickpar.gem5.replay.ReplayPlan.traits`)."""
        return plan_for(params).traits()

    def build(self, model: Model, params: dict[str, Any]) -> None:
        build_replay_model(model, plan_for(params), params["work_us"])
