"""Test factories: rows of ``summary.csv`` and sweep configs, built in one place.

``summary.csv`` has one row per cell (``tickpar.pipeline.aggregate``); a test that feeds the report, the
prediction or the accuracy tables a small synthetic sweep builds its rows with :func:`summary_row` (a timed,
exact, uncontended cell, every column a keyword away) and its frame with :func:`make_summary`.  A sweep
config starts from ``config/test.yaml`` (:func:`sweep_config`).

Nothing here imports pandas or yaml at module level: tests/conftest.py's free-threaded environment has
neither, and only the tests that use a factory need them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

REPO_ROOT = Path(__file__).resolve().parent.parent
#: The sweep every pipeline test starts from.
TEST_CONFIG = REPO_ROOT / "config" / "test.yaml"


def summary_row(
    label: str = "sequential",
    workers: int = 1,
    speedup: float | None = 1.0,
    *,
    tags: Iterable[str] = (),
    **columns: Any,
) -> dict[str, Any]:
    """One row of ``summary.csv``: cell ``label`` (``strategy`` or ``strategy/variant``) at ``workers``, timed,
    exact and uncontended, with ``speedup`` and a +-10% interval around it (none without a speedup).

    The cell's identity defaults to PHOLD's ``wide`` shape, seed 1, gem5 order, ``gil-release`` work, the
    Python engine and the default interpreter; ``family`` is the shape's name up to its first dot.  ``tags``
    are the sweep's tags of the cell (``native``, ``ft``, ...): its ``label`` carries them as the sweep's
    does (``tick-barrier [native]``, :attr:`tickpar.pipeline.cells.Cell.label`), ``base_label`` is the bare
    one.  Any column can be given or overridden by keyword (``loop_speedup``, ``param_work_us``,
    ``bound_speedup``, ``stat_*``, ``error_*``, ...); a column given as ``None`` is left out.
    """
    strategy, _, variant = label.partition("/")
    engine = columns.get("engine") or "python"
    shape = str(columns.get("shape", "wide"))
    tags = tuple(tags)
    row: dict[str, Any] = {
        "workload": "phold",
        "shape": shape,
        "family": shape.split(".")[0],
        "strategy": strategy,
        "variant": variant or "default",
        "label": f"{label} [{', '.join(tags)}]" if tags else label,
        "base_label": label,
        "workers": workers,
        "seed": 1,
        "order": "gem5",
        "work": "gil-release",
        "engine": engine,
        "interpreter": "default",
        "verdict": "exact",
        "timing_status": "ok",
        "speedup": speedup,
        "speedup_lo": None if speedup is None else speedup * 0.9,
        "speedup_hi": None if speedup is None else speedup * 1.1,
        "timed_exact": True,
        "contended": False,
    }
    row.update(columns)
    given = {*columns, "speedup"}
    return {key: value for key, value in row.items() if value is not None or key not in given}


def make_summary(rows: Iterable[dict[str, Any]], *, prepare: bool = False) -> pd.DataFrame:
    """``summary.csv``'s frame of ``rows`` (from :func:`summary_row`); ``prepare``: as the report reads it
    (:func:`tickpar.report.data.prepare`)."""
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    if prepare:
        from tickpar.report.data import prepare as prepared

        return prepared(frame)
    return frame


def sweep_config(**top_level: Any) -> dict[str, Any]:
    """``config/test.yaml`` (the test sweep) as a dict, with ``top_level`` keys replaced."""
    import yaml

    config = yaml.safe_load(TEST_CONFIG.read_text())
    config.update(top_level)
    return config
