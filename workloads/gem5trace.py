"""``gem5trace``: replay a real gem5 run, imported from its event trace.

``trace`` names a gem5 event trace: the stock ``--debug-flags=Event`` trace or the insert log
(``format``, default ``auto``; plain or ``.gz``).  :mod:`tickpar.gem5.importer` rebuilds the event
objects, occurrences and operations (its docstring lists every rule for what the trace does not
print); :mod:`tickpar.gem5.trace_components` replays them: each occurrence re-issues the operations gem5
made, at the ticks gem5 made them, with ``work_us`` of synthetic work, or, with ``gem5_stats``,
the run's own host cost per event.  Components are gem5's
SimObjects, from the event names (:mod:`tickpar.gem5.names`) or a ``components`` mapping file.
``events`` replays the whole ticks before the (N+1)-th event (0: all).  With no ``trace``, the
workload replays a small example that ships with tickpar: a 2-core ``multicore`` run that tickpar
emitted in gem5's stock format (so the conformance suite covers this workload too).

**The run's own event cost** (:mod:`tickpar.gem5.stats`).  ``gem5_stats`` names the run's gem5
``stats.txt`` (best an untraced run of the same configuration; the traced run's own is warned about):
every event then spends that run's host time over the whole trace's events (``simTicks /
hostTickRate`` over :attr:`~tickpar.gem5.importer.ImportedTrace.events`), also when ``events``
replays a prefix.  It replaces ``work_us``, which must stay 0 beside it (both is a ParamError).
``cost_weights`` (only with ``gem5_stats``) names a ``REGEX -> WEIGHT`` file that splits that cost
over the components, keeping the run's mean.  :meth:`Gem5Trace.describe` says which cost a run used.

The footprint of an occurrence (its own component plus the components whose events it moves)
is inferred: a lower bound of the true one.  The traits are the trace's own (zero-delay direct
calls, several named events per component, ...), computed from the imported trace.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from tickpar.gem5 import ReplayPlan, TraceError, import_trace, replay_plan, trace_key, trace_source
from tickpar.gem5.lines import FORMATS
from tickpar.gem5.stats import EventCost, event_cost
from tickpar.gem5.trace_components import build_replay_model
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


def _file_key(path: str) -> tuple[Any, ...]:
    """What identifies a file's contents for the caches (a missing file: its name; reading it then fails)."""
    try:
        st = Path(path).stat()
    except OSError:
        return (path,)
    return (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=4)
def _cost(key: tuple[Any, ...], stats: str, weights: str, path: str, fmt: str, components: str | None) -> EventCost:
    # The host time is the whole run's: spread it over the whole trace's events, whatever prefix is replayed.
    whole = _plan(trace_key(path, fmt, components, 0), path, fmt, components, 0).trace
    return event_cost(stats, whole, weights or None)


def cost_for(params: dict[str, Any]) -> EventCost | None:
    """The run's own event cost of a resolved params dict (``None`` without ``gem5_stats``); one-line ParamError."""
    stats, weights = params["gem5_stats"], params["cost_weights"]
    if weights and not stats:
        raise ParamError(
            f"workload gem5trace: cost_weights={weights} needs gem5_stats: the weights split that run's cost per "
            "event over the components"
        )
    if not stats:
        return None
    if params["work_us"]:
        raise ParamError(
            f"workload gem5trace: work_us={params['work_us']} and gem5_stats={stats}: give one (gem5_stats sets each "
            "event's work to the run's own host cost; leave work_us at 0)"
        )
    path, components = trace_source(params["trace"], params["components"])
    fmt = params["format"]
    try:
        key = (trace_key(path, fmt, components, 0), _file_key(stats), _file_key(weights) if weights else None)
        return _cost(key, stats, weights, path, fmt, components)
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
        "work_us": Param(float, 0.0, "synthetic work per event, microseconds (0 with gem5_stats)", min=0.0, max=1e6),
        "gem5_stats": Param(
            str, "", "the run's gem5 stats.txt (best an untraced run's): each event spends the run's own host cost "
            "per event, simTicks/hostTickRate over the trace's events, instead of work_us"
        ),
        "cost_weights": Param(
            str, "", "with gem5_stats: 'REGEX -> WEIGHT' per line, splits the run's cost over the components, "
            "keeping its mean"
        ),
    }

    def check_params(self, params: dict[str, Any]) -> None:
        plan_for(params)
        cost_for(params)

    def describe(self, params: dict[str, Any]) -> dict[str, Any]:
        """Which event cost a run of resolved ``params`` spends, for its record: ``event_cost`` is
        :meth:`~tickpar.gem5.stats.EventCost.to_json`, or ``None`` where every event spends ``work_us``."""
        cost = cost_for(params)
        return {"event_cost": cost.to_json() if cost is not None else None, "work_us": params["work_us"]}

    def traits(self, params: dict[str, Any]) -> frozenset[str]:
        """The imported trace's own traits (:meth:`tickpar.gem5.replay.ReplayPlan.traits`)."""
        return plan_for(params).traits()

    def build(self, model: Model, params: dict[str, Any]) -> None:
        cost = cost_for(params)
        if cost is None:
            build_replay_model(model, plan_for(params), params["work_us"])
        else:
            build_replay_model(model, plan_for(params), cost.mean_us, cost.per_component_us)
