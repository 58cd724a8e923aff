"""The findings page's sentences, the environment rows and the verdict table, computed from the tables."""

from __future__ import annotations

import pandas as pd

from tickpar.plugins import BASELINE
from tickpar.report.answer import answer_table, figure_sentences, runs_finding
from tickpar.report.data import labels as _labels
from tickpar.report.engines import engine_findings
from tickpar.report.environment import environment_rows
from tickpar.report.interpreters import interpreter_findings
from tickpar.report.model_error import findings as model_error_findings
from tickpar.report.speed import speed_findings, speed_table
from tickpar.verify.oracle import SEVERITY

__all__ = ["findings", "verdict_table"]


def _apart(low: float, high: float) -> tuple[str, str]:
    """``low`` and ``high`` signed, with the fewest decimals (1 to 3) that tell them apart."""
    for digits in (1, 2, 3):
        texts = f"{low:+.{digits}f}", f"{high:+.{digits}f}"
        if texts[0] != texts[1]:
            break
    return texts


def _cell_where(row: pd.Series) -> str:
    return f"{row['workload']}/{row['shape']} at {int(row['workers'])} workers (seed {int(row['seed'])})"


def findings(df: pd.DataFrame, param: str = "work_us", prediction: pd.DataFrame | None = None) -> list[str]:
    """Sentences computed from the summary table (and the predictions, for the model's error); with real gem5 runs in
    the sweep, what they show comes first (page 1's runs finding, from the same rows)."""
    if df.empty:
        return ["The sweep has no cells."]
    pred = prediction if prediction is not None else pd.DataFrame()
    out = [text for text, _page in runs_finding(answer_table(df, pred, param))]
    n_cells = len(df)
    labels = _labels(df)
    out.append(
        f"{n_cells} cells: {df['workload'].nunique()} workload(s) at {df['where'].nunique()} shape(s), "
        f"{len(labels)} strategy variant(s), workers {', '.join(str(w) for w in sorted(df['workers'].unique()))}, "
        f"seeds {', '.join(str(s) for s in sorted(df['seed'].unique()))}."
    )
    exact, not_exact = [], []
    for label in labels:
        sub = df[df["label"] == label]
        counts = sub["verdict"].value_counts()
        if counts.get("exact", 0) == len(sub):
            exact.append(f"{label} ({len(sub)})")
        else:
            parts = ", ".join(f"{v} in {int(n)}" for v, n in counts.items() if v != "exact")
            not_exact.append(f"{label}: {parts} of {len(sub)} cells")
    if exact:
        out.append("Exact in every checked cell (cells in brackets): " + ", ".join(exact) + ".")
    if not_exact:
        out.append("Not always exact: " + "; ".join(not_exact) + ".")
    if "as_expected" in df.columns:
        bad = df[df["as_expected"].astype(str).str.lower() == "false"]
        if not bad.empty:
            by = bad.groupby("label")["verdict"].agg(lambda v: ", ".join(sorted(set(v))))
            first = bad.iloc[0]
            out.append(
                f"{len(bad)} cell(s) broke their strategy's own promise ("
                + "; ".join(f"{lab}: got {v}" for lab, v in by.items())
                + f"); the first is {first['label']} on {_cell_where(first)}: {first.get('verdict_reason', '')}."
            )
        else:
            promised = df["expected_verdict"].notna().sum() if "expected_verdict" in df.columns else 0
            basis = ""
            if "promise_trait" in df.columns and promised:
                by = df[df["expected_verdict"].notna()].groupby(["expected_verdict", "promise_trait"]).size()
                basis = "; " + ", ".join(f"{v} from {t} in {int(n)}" for (v, t), n in by.items())
            out.append(
                f"Every verdict matched what its strategy promises ({int(promised)} cells with a promise{basis})."
            )
    out += speed_findings(df, pred, param)
    out += figure_sentences(df, param)
    out += interpreter_findings(df, param)
    out += engine_findings(df, param)
    if not pred.empty:
        out += model_error_findings(df, pred, param)  # the model error page 1 gives beside each model figure
    tp = speed_table(df)
    tp = tp[~tp["label"].str.startswith(BASELINE)]
    one = tp[(tp["workers"] == 1) & tp["overhead"].notna()]
    if not one.empty:
        per_label = one.groupby("label")["overhead"].mean().sort_values()
        lo_lab, lo_val = per_label.index[0], per_label.iloc[0]
        hi_lab, hi_val = per_label.index[-1], per_label.iloc[-1]
        if len(per_label) == 1:
            out.append(
                f"Synchronisation overhead at one worker (mean over shapes): {lo_lab} {lo_val:+.1f} µs/event "
                "over sequential."
            )
        else:
            lo_txt, hi_txt = _apart(lo_val, hi_val)
            if lo_txt == hi_txt:  # the same to a thousandth: say so once rather than twice
                out.append(
                    f"Synchronisation overhead at one worker (mean over shapes): {lo_txt} µs/event over sequential"
                    f" for each of {', '.join(map(str, per_label.index))}."
                )
            else:
                out.append(
                    f"Synchronisation overhead at one worker (mean over shapes): lowest {lo_lab} ({lo_txt} "
                    f"µs/event over sequential), highest {hi_lab} ({hi_txt} µs/event)."
                )
    env = environment_rows(df)
    env_d = dict(env)
    out.append(
        f"Measured on {env_d.get('CPU', '?')} ({env_d.get('cores (usable)', '?')} cores), "
        f"Python {env_d.get('Python', '?')}, GIL {env_d.get('GIL', '?')}, work model {env_d.get('work model', '?')}."
    )
    return out


def verdict_table(df: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per strategy/variant (rows) and verdict (columns)."""
    if df.empty:
        return pd.DataFrame()
    t = pd.crosstab(df["label"], df["verdict"])
    cols = [v for v in SEVERITY if v in t.columns]
    t = t[cols].reindex([lab for lab in _labels(df) if lab in t.index])
    t["cells"] = t.sum(axis=1)
    return t
