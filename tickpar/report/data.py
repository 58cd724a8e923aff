"""The report's inputs: ``summary.csv`` with the types the pages need, ``prediction.csv``, labels and colours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import seaborn as sns

from tickpar.plugins import BASELINE

__all__ = ["col_wrap", "labels", "load_prediction", "load_summary", "palette", "prepare"]


def load_summary(path: str | Path) -> pd.DataFrame:
    """summary.csv with the types the figures need."""
    df = pd.read_csv(path)
    return prepare(df)


def prepare(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    if df.empty:
        return df
    df["where"] = df["workload"].astype(str) + "/" + df["shape"].astype(str)
    df["workers"] = df["workers"].astype(int)
    df["label"] = df["label"].astype(str)
    df["verdict"] = df["verdict"].fillna("missing").astype(str)
    for col in ("timed",):
        if col in df.columns:
            df[col] = df[col].map(lambda v: str(v).lower() == "true" if not isinstance(v, bool) else v)
    for col in ("speedup", "speedup_lo", "speedup_hi", "efficiency", "us_per_event", "overhead_us_per_event"):
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


def load_prediction(path: str | Path | None) -> pd.DataFrame:
    """results/prediction.csv, or an empty table when there is none."""
    if not path or not Path(path).exists():
        return pd.DataFrame()
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return pd.DataFrame()


def labels(df: pd.DataFrame) -> list[str]:
    """Strategy/variant labels in sweep order, the baseline first."""
    seen = list(dict.fromkeys(df["label"].tolist())) if not df.empty else []
    return sorted(seen, key=lambda lab: (not lab.startswith(BASELINE), seen.index(lab)))


def palette(df: pd.DataFrame) -> dict[str, Any]:
    names = labels(df)
    colours = sns.color_palette("tab10" if len(names) <= 10 else "tab20", max(len(names), 1))
    return dict(zip(names, colours, strict=False))


def col_wrap(n: int) -> int:
    return max(1, min(3, n))
