"""The appendix: timing diagnostics (re-timed rounds, contention, cells that do not count) and the defects
(measured points above their bound). They say how far to trust the figures, not what the figures say.
"""

from __future__ import annotations

import pandas as pd

from tickpar.report.speed import bound_defects, bound_defects_finding, retime_finding, uncounted_finding

__all__ = ["TITLE", "defect_rows", "diagnostics"]

TITLE = "Appendix: timing diagnostics and defects"


def diagnostics(df: pd.DataFrame) -> list[str]:
    """The appendix's sentences: re-timed rounds and why, the cells that do not count, the DEFECT line."""
    lines = [retime_finding(df), uncounted_finding(df), bound_defects_finding(df)]
    slow = _slow_rounds(df)
    return [line for line in (*lines, slow) if line]


def _slow_rounds(df: pd.DataFrame) -> str | None:
    if "slow_rounds" not in df.columns:
        return None
    slow = df[df["slow_rounds"].fillna("").astype(str).str.len() > 0]
    if slow.empty:
        return None
    cells = ", ".join(f"{r.label} on {r.workload}/{r.shape}" for r in slow.head(6).itertuples())
    more = f" and {len(slow) - 6} more" if len(slow) > 6 else ""
    return f"Slow processes left out (every value of a round far above the cell's fastest round): {cells}{more}."


def defect_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Every counted cell measured above its bound, as the appendix's table (empty: none)."""
    bad = bound_defects(df)
    if bad.empty:
        return bad
    return bad.assign(achieved=bad["achieved"].map("{:.2f}x".format), bound=bad["bound"].map("{:.2f}x".format))
