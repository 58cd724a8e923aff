"""``tickpar trace-fit``: the synthetic workload shape whose parallelism profile is nearest a gem5 run's.

* :mod:`tickpar.gem5.fit.statistics`: the named statistics of a profile and the distance over them;
* :mod:`tickpar.gem5.fit.space`: per workload, the parameters searched and their ladders;
* :mod:`tickpar.gem5.fit.search`: the grid and the coordinate descent (:func:`fit_profile`);
* :mod:`tickpar.gem5.fit.output`: the fitted shape as YAML and the statistics side by side.

:func:`fit_trace` imports and profiles a trace (as ``tickpar trace-profile`` does) and fits it.
The search and the distance are documented in docs/how-to/gem5-traces.md ("Fit a synthetic shape").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tickpar.gem5.fit.output import shape_name, shape_yaml, summary_lines
from tickpar.gem5.fit.search import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_EVENTS, FitError, fit_profile
from tickpar.gem5.fit.space import SPACES
from tickpar.gem5.fit.statistics import STATISTICS, TOLERANCE, compare, distance, statistic_values

__all__ = [
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MAX_EVENTS",
    "SPACES",
    "STATISTICS",
    "TOLERANCE",
    "FitError",
    "compare",
    "distance",
    "fit_profile",
    "fit_trace",
    "shape_name",
    "shape_yaml",
    "statistic_values",
    "summary_lines",
]


def fit_trace(
    trace: str | Path, fmt: str = "auto", components: str | Path | None = None, events: int = 0, **search: Any
) -> dict[str, Any]:
    """Import and profile ``trace`` (``trace-profile``'s arguments), then :func:`fit_profile` it with ``search``."""
    from tickpar.gem5.importer import import_trace
    from tickpar.gem5.profile import trace_profile

    return fit_profile(trace_profile(import_trace(trace, fmt, components, events)), **search)
