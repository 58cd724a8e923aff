"""The answer page: per strategy variant, is it correct, how fast at gem5-like event costs, where it breaks even,
and what the model expects at 16 and 64 workers; then at most eight ranked findings, each naming its page.

:func:`answer_table` is the table (written as ``results/answer.csv``), :func:`answer_findings` the sentences.
Speedups are loop speedups (the strategy's execution alone, as the bound and the model price it) of counted
cells (:func:`tickpar.report.speed.counted`) at 2 workers, with the same cell's end-to-end speedup beside them, at
the work per event of :func:`targets` (for the native engine first the gem5-like cost,
:func:`tickpar.report.gem5_cost.gem5_like_cost`) or the nearest value the sweep ran; each column's header names
its engine, measure, workers, work per event and shapes.  Each model figure carries THE model error
(:func:`tickpar.report.model_error.model_error`) and starts with :data:`NOT_CITABLE` where it is no answer.

Rows are keyed by *scope*. Every synthetic workload pools into the ``synthetic`` scope, a row per strategy
variant; gem5-trace replays (workload :data:`TRACE_WORKLOAD`) get a scope per trace file, from the summary's
``param_trace`` column, else ``trace=...`` in the shape's name (:func:`scope_of`), and a row per *real run*
(each shape of the scope, :func:`run_row`): its events and cost per event, correct? per strategy, the best
measured 2-worker speedups (loop and end to end, each with its interval) and the bound and the model at 16 and
64 workers, all on the run's own shape at its cost (the columns :data:`RUN_COLUMNS`; the synthetic rows'
columns are ``-`` there, and theirs ``-`` in a run's row).  :func:`scope_of` is the extension point: a new
kind of row is a new scope value.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tickpar.plugins import BASELINE
from tickpar.report.data import labels as sweep_labels
from tickpar.report.engines import engine_breakevens
from tickpar.report.gem5_cost import TRACE_WORKLOAD, Gem5Cost, gem5_like_cost
from tickpar.report.model_error import ModelError, citable, model_error, recompute
from tickpar.report.speed import base_label, bound_defects, breakeven_figure, counted, timed

__all__ = [
    "MODEL_WORKERS", "NOT_CITABLE", "PRESET_OF", "REPRESENTATIVE", "RUN_COLUMNS", "SYNTHETIC", "TRACE_WORKLOAD",
    "answer_findings", "answer_table", "best_text", "best_two_worker", "cxx_missing", "figure_sentences", "is_run_row",
    "model_cell", "run_row", "runs_finding", "scope_of", "speed_columns", "targets",
]  # fmt: skip

#: Work per event (µs) the answer quotes per engine besides the gem5-like cost: the native sweep's ends, and where
#: the Python engine's threads can pay off. The native engine's first column is the gem5-like cost (:func:`targets`);
#: the first of each engine's is the one its model column is read at.
REPRESENTATIVE: dict[str, tuple[float, ...]] = {"native": (0.1, 10.0), "python": (1000.0,)}
MODEL_WORKERS = (16, 64)
#: How a model figure that may not be read as an answer starts (:func:`tickpar.report.model_error.citable`): the
#: answer page draws such a cell grey.
NOT_CITABLE = "not citable"
#: The model preset that prices each engine (prediction.csv's ``preset``).
PRESET_OF = {"python": "here", "native": "cxx"}
SYNTHETIC = "synthetic"
BUILD_NATIVE = "`pip install ./native` (or `make native`)"
#: A real run's row (a gem5-trace scope): each column says its measure, on the run's own shape at its own cost per
#: event (the first column names both). Speedups: counted cells (exact, timed runs exact, not contended).
RUN_COLUMNS = (
    "run: shape, events, cost per event",
    "correct? per strategy (checked; timed runs)",
    "measured loop speedup, 2 workers: best [95%] (this shape, this cost)",
    "measured end-to-end speedup, 2 workers: best [95%] (this shape, this cost)",
    "bound at 16, 64 workers (this shape, this cost)",
    "model at 16, 64 workers (this shape, this cost)",
)


def _engine(df: pd.DataFrame) -> pd.Series:
    return df["engine"].fillna("python").astype(str) if "engine" in df.columns else pd.Series("python", df.index)


def _trace_name(param: object, shape: object) -> str:
    if isinstance(param, str) and param:
        return Path(param).name
    found = re.search(r"trace=([^,;\s]+)", str(shape))
    return Path(found.group(1)).name if found else str(shape)


def scope_of(df: pd.DataFrame) -> pd.Series:
    """Each row's answer scope: ``synthetic``, or ``trace <file name>`` for a gem5-trace replay."""
    if df.empty:
        return pd.Series([], dtype=str)
    traces = df["workload"].astype(str) == TRACE_WORKLOAD
    params = df["param_trace"] if "param_trace" in df.columns else pd.Series(None, index=df.index)
    names = [f"trace {_trace_name(p, s)}" for p, s in zip(params[traces], df.loc[traces, "shape"], strict=True)]
    out = pd.Series(SYNTHETIC, index=df.index, dtype=object)
    out[traces] = names
    return out


def _work(df: pd.DataFrame, param: str) -> pd.Series:
    col = f"param_{param}"
    return pd.to_numeric(df[col], errors="coerce") if col in df.columns else pd.Series(math.nan, index=df.index)


def _nearest(values: Sequence[float], target: float) -> float | None:
    values = [v for v in values if v > 0]
    return min(values, key=lambda v: (abs(math.log(v / target)), v)) if values else None


def targets(engine: str, cost: Gem5Cost | None = None) -> tuple[float, ...]:
    """The work per event (µs) ``engine``'s columns stand for, in order: for the native engine the gem5-like cost
    (:func:`tickpar.report.gem5_cost.gem5_like_cost`; the default without ``cost``) first."""
    if engine != "native":
        return REPRESENTATIVE[engine]
    return ((cost or gem5_like_cost(pd.DataFrame())).us, *REPRESENTATIVE[engine])


def speed_columns(df: pd.DataFrame, param: str = "work_us", cost: Gem5Cost | None = None
                  ) -> list[tuple[str, float, float]]:  # fmt: skip
    """``(engine, target, nearest)`` per speedup column: the nearest work per event the sweep timed at 2 workers
    to each of :func:`targets` (``cost``: the gem5-like cost, the default's without it)."""
    t = timed(df)
    out: list[tuple[str, float, float]] = []
    for engine in REPRESENTATIVE:
        sub = t[(_engine(t) == engine) & (t["workers"] == 2)]
        for target in targets(engine, cost):
            near = _nearest(sorted(set(_work(sub, param).dropna())), target)
            if near is not None and all((e, n) != (engine, near) for e, _, n in out):
                out.append((engine, target, near))
    return out


def _shapes_at(df: pd.DataFrame, engine: str, work: float, param: str) -> str:
    """``phold/wide, multicore/wide``: the synthetic shapes timed on ``engine`` at 2 workers at ``work`` µs."""
    t = timed(df)
    t = t[(_engine(t) == engine) & (t["workers"] == 2) & (_work(t, param) == work)]
    return ", ".join(dict.fromkeys(f"{w}/{s}" for w, s in zip(t["workload"], t["shape"], strict=True))) or "-"


def _column(engine: str, target: float, near: float, shapes: str = "", cost: Gem5Cost | None = None) -> str:
    """A speedup column's header: its engine, measure, workers, work per event and the shapes its cells come from."""
    gem5 = engine == "native" and cost is not None and target == cost.us
    where = f"{near:g} µs per event"
    if gem5 and cost is not None:
        where += " (the gem5-like cost)" if near == target else f" (nearest to the gem5-like cost, {cost.us:.2g} µs)"
    elif near != target:
        where += f" (nearest to {target:g} µs)"
    of = f"; shapes {shapes}" if shapes else ""
    return f"{engine} engine, 2 workers, {where}: best loop speedup [95%], its workload, e2e{of}"


def _loop(t: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    def num(col: str, fallback: str) -> pd.Series:
        own = pd.to_numeric(t[col], errors="coerce") if col in t.columns else pd.Series(math.nan, index=t.index)
        return own.fillna(pd.to_numeric(t[fallback], errors="coerce"))

    return num("loop_speedup", "speedup"), num("loop_speedup_lo", "speedup_lo"), num("loop_speedup_hi", "speedup_hi")


@dataclass(frozen=True)
class BestSpeedup:
    """The best counted 2-worker cell of one strategy variant on one engine at one work per event."""

    loop: float  # its loop speedup (the strategy's execution alone), with its 95% interval
    loop_lo: float
    loop_hi: float
    end_to_end: float  # its end-to-end speedup (what a user waits for); NaN where not measured
    workload: str
    above: str  # "" or " ABOVE ITS BOUND" / " ABOVE 2X"


def best_two_worker(c: pd.DataFrame, engine: str, work: float, param: str = "work_us") -> BestSpeedup | None:
    """THE best 2-worker speedup of the answer: the counted (:func:`tickpar.report.speed.counted`) 2-worker cell of
    ``engine`` with the largest loop speedup among those run at exactly ``work`` µs per event (None: none was).
    Page 1's speedup columns, answer.csv and the findings page all quote this one."""
    rows = c[(_engine(c) == engine) & (c["workers"] == 2)]
    sub = rows[_work(rows, param) == work]
    if sub.empty:
        return None
    y, lo, hi = _loop(sub)
    if y.dropna().empty:
        return None
    i = y.idxmax()
    bound = pd.to_numeric(sub["bound_speedup"], errors="coerce").get(i) if "bound_speedup" in sub else None
    has_bound = bound is not None and not math.isnan(bound)
    limit = bound if has_bound else 2.0  # no bound: the 2 workers themselves
    above = f" ABOVE {'ITS BOUND' if has_bound else '2X'}" if y[i] > limit * (1 + 1e-9) else ""
    e2e = pd.to_numeric(sub["speedup"], errors="coerce").get(i) if "speedup" in sub else math.nan
    return BestSpeedup(float(y[i]), float(lo[i]), float(hi[i]), float(e2e), str(sub.loc[i, "workload"]), above)


def best_text(best: BestSpeedup | None, work: float) -> str:
    """A speedup cell: ``1.91 [1.89, 1.93] phold; e2e 1.88``, or ``-`` saying that nothing ran at ``work``."""
    if best is None:
        return f"- (no counted 2-worker cell at {work:g} µs)"
    e2e = f"; e2e {best.end_to_end:.2f}" if not math.isnan(best.end_to_end) else ""
    return f"{best.loop:.2f} [{best.loop_lo:.2f}, {best.loop_hi:.2f}] {best.workload}{e2e}{best.above}"


def _best(c: pd.DataFrame, engine: str, column: tuple[float, float], param: str) -> str:
    """The column's cell: the best counted 2-worker cell at exactly the column's work per event (never another)."""
    _target, near = column
    return best_text(best_two_worker(c, engine, near, param), near)


def _correct(sub: pd.DataFrame) -> tuple[str, str]:
    """(``yes``/``no`` with the verdict counts, the one-line why: the promise's reason, else the first verdict's)."""
    counts = sub["verdict"].value_counts()
    n, exact = len(sub), int(counts.get("exact", 0))
    text = f"yes: exact in {n}/{n}" if exact == n else f"no: exact in {exact}/{n}; " + ", ".join(
        f"{v} {k}" for v, k in counts.items() if v != "exact"
    )
    broken = sub["as_expected"].astype(str).str.lower().eq("false").sum() if "as_expected" in sub else 0
    if broken:
        text += f"; PROMISE BROKEN in {broken}"
    bad = sub[sub["verdict"] != "exact"]
    pick = bad if not bad.empty else sub
    pick = pick[pick["workers"] == pick["workers"].max()]  # one worker's promise is the trivial one
    why = ""
    for col in ("promise_because", "verdict_reason"):
        vals = pick[col].dropna().astype(str) if col in pick.columns else pd.Series([], dtype=str)
        vals = vals[vals.str.len() > 0]
        if not vals.empty:
            why = textwrap.shorten(vals.value_counts().index[0], 120, placeholder="...")
            break
    return text, why


def _short_breakeven(kind: str, x: float | None) -> str:
    if x is None or kind == "never":
        return "-"
    return {"at": f"≈{breakeven_figure(x)}", "below": f"<{x:g}", "above": f">{x:g}"}.get(kind, "-")


def _num(x: float) -> str:
    """Two significant digits, without an exponent."""
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def _breakevens(be: pd.DataFrame, label: str, engine: str) -> str:
    sub = be[(be["base_label"] == label) & (be["engine"] == engine)]
    if sub.empty:
        return "-"
    parts = list(dict.fromkeys(f"{r.workload} {_short_breakeven(r.kind, r.x)}" for r in sub.itertuples()))
    return "; ".join(parts) + " µs"


def _model(pred: pd.DataFrame, shapes: pd.DataFrame, strategy: str, variant: str, engine: str,
           cost: Gem5Cost) -> str:  # fmt: skip
    """The model at :data:`MODEL_WORKERS` on each workload's shape nearest the engine's first work per event
    (:func:`targets`): ``16 workers 13x, 64 workers 23x``, a range where the shapes differ."""
    p = pred[(pred["strategy"] == strategy) & (pred["variant"] == variant) & (pred["preset"] == PRESET_OF[engine])]
    if p.empty:
        return "-"
    p = _representative(p, shapes, engine, cost)
    parts = []
    for workers in MODEL_WORKERS:
        vals = pd.to_numeric(p.loc[p["workers"] == workers, "model_value"], errors="coerce").dropna()
        if not vals.empty:
            lo, hi = vals.min(), vals.max()
            same = f"{lo:.2g}" == f"{hi:.2g}"
            parts.append(f"{workers} workers {lo:.2g}x" if same else f"{workers} workers {lo:.2g}-{hi:.2g}x")
    return ", ".join(parts) or "-"


def model_cell(values: str, error: ModelError | None, engine: str, workers: Sequence[int] = MODEL_WORKERS) -> str:
    """A model figure with THE model error beside it (:func:`tickpar.report.model_error.model_error`), starting
    with :data:`NOT_CITABLE` and the reasons where it may not be read as an answer at every one of ``workers``
    (:func:`tickpar.report.model_error.citable`)."""
    return _grey(*_model_parts(values, error, engine, workers))


def _model_parts(values: str, error: ModelError | None, engine: str, workers: Sequence[int] = MODEL_WORKERS
                 ) -> tuple[list[str], str]:  # fmt: skip
    """(why the figures are not citable, none where they are; the figures with THE model error beside them)."""
    checked = error.text() if error is not None else "not validated"
    return list(dict.fromkeys(r for w in workers if (r := citable(error, w, engine)))), f"{values}; {checked}"


def _grey(reasons: Sequence[str], text: str) -> str:
    return f"{NOT_CITABLE} ({'; '.join(reasons)}): model {text}" if reasons else text


def _representative(p: pd.DataFrame, shapes: pd.DataFrame, engine: str, cost: Gem5Cost) -> pd.DataFrame:
    """Prediction rows on each workload's shape nearest the engine's first work per event (:func:`targets`)."""
    if p.empty:
        return p
    p = p.merge(shapes, on=["workload", "shape"], how="left")
    picks = []
    for _, grp in p.groupby("workload", sort=False):
        near = _nearest(sorted(set(grp["work_per_event"].dropna())), targets(engine, cost)[0])
        picks.append(grp[grp["work_per_event"] == near] if near is not None else grp)
    return pd.concat(picks)


def _model_column(pred: pd.DataFrame, shapes: pd.DataFrame, engine: str, cost: Gem5Cost) -> str:
    """A model column's header: its engine, preset, measure, worker counts, shapes and their work per event."""
    p = _representative(pred[pred["preset"] == PRESET_OF[engine]], shapes, engine, cost)
    on = ", ".join(dict.fromkeys(f"{w}/{s}" for w, s in zip(p["workload"], p["shape"], strict=True)))
    works = sorted(set(p["work_per_event"].dropna())) if "work_per_event" in p.columns else []
    at = f" ({', '.join(f'{w:g}' for w in works)} µs per event)" if works else ""
    return (f"{engine} engine model (preset {PRESET_OF[engine]}): predicted loop speedup at "
            f"{' and '.join(map(str, MODEL_WORKERS))} workers" + (f" on {on}{at}" if on else "") + "; its error")


def _breakeven_column(engine: str) -> str:
    return f"{engine} engine break-even: µs per event where the 2-worker loop speedup crosses 1, per workload"


def cxx_missing(prediction: pd.DataFrame) -> bool:
    """True when prediction.csv has no ``cxx`` (native engine) rows: the preset could not be priced."""
    return prediction.empty or "preset" not in prediction.columns or not (prediction["preset"] == "cxx").any()


def _shapes(df: pd.DataFrame, param: str) -> pd.DataFrame:
    s = df[["workload", "shape"]].assign(work_per_event=_work(df, param))
    return s.drop_duplicates(["workload", "shape"])


def _prediction(prediction: pd.DataFrame) -> pd.DataFrame:
    if prediction.empty or "preset" not in prediction.columns:
        return pd.DataFrame(columns=["workload", "shape", "strategy", "variant", "preset", "workers", "model_value"])
    model = prediction["model"] if "model" in prediction.columns else prediction["predicted_speedup"]
    return prediction.assign(model_value=model)


@dataclass(frozen=True)
class _Scope:
    """What every row of one scope is computed from."""

    cells: pd.DataFrame  # the scope's summary rows
    counted: pd.DataFrame  # its counted timed rows, default interpreter
    breakevens: pd.DataFrame  # engine_breakevens of its cells
    prediction: pd.DataFrame  # prediction.csv's rows on its shapes
    points: pd.DataFrame  # the model's measured points (recompute)
    shapes: pd.DataFrame  # (workload, shape) -> work per event
    columns: list[tuple[str, float, float]]  # speed_columns
    headers: dict[tuple[str, float, float], str]  # each speed column's header (_column)
    engines: list[str]
    cxx_missing: bool
    cost: Gem5Cost  # the sweep's gem5-like cost (gem5_like_cost, of every cell: the real runs' own)
    param: str


def _scope(sdf: pd.DataFrame, pred: pd.DataFrame, points: pd.DataFrame, cost: Gem5Cost, cxx: bool,
           param: str) -> _Scope:  # fmt: skip
    """One scope's inputs; ``points`` (the model's measured points) and ``cost`` are the whole sweep's."""
    c = counted(sdf)
    c = c[c["interpreter"].fillna("default") == "default"] if "interpreter" in c.columns else c
    on = pred["shape"].isin(set(sdf["shape"])) & pred["workload"].isin(set(sdf["workload"]))
    columns = speed_columns(sdf, param, cost)
    headers = {(e, t, n): _column(e, t, n, _shapes_at(sdf, e, n, param), cost) for e, t, n in columns}
    return _Scope(sdf, c, engine_breakevens(sdf, param), pred[on], points, _shapes(sdf, param), columns, headers,
                  [e for e in REPRESENTATIVE if e in set(_engine(sdf))], cxx, cost, param)  # fmt: skip


def _row(sc: _Scope, scope: str, label: str) -> dict[str, str]:
    sub = sc.cells[sc.cells["base_label"] == label]
    strategy, variant = str(sub["strategy"].iloc[0]), str(sub["variant"].iloc[0])
    base = strategy == BASELINE
    row = {"scope": scope, "strategy variant": label}
    row["correct?"], row["why"] = _correct(sub)
    mine = sc.counted[sc.counted["base_label"] == label]
    for engine, target, near in sc.columns:
        row[sc.headers[(engine, target, near)]] = ("baseline" if base else
                                                   _best(mine, engine, (target, near), sc.param))  # fmt: skip
    for engine in sc.engines:
        row[_breakeven_column(engine)] = "-" if base else _breakevens(sc.breakevens, label, engine)
    ran = set(_engine(sub))
    for engine in sc.engines:
        model = "-" if base or engine not in ran else _model(sc.prediction, sc.shapes, strategy, variant, engine,
                                                                 sc.cost)  # fmt: skip
        if engine == "native" and sc.cxx_missing:
            model = "cxx preset missing"
        elif model != "-":
            model = model_cell(model, model_error(sc.points, engine, strategy, variant, sc.param), engine)
        row[_model_column(sc.prediction, sc.shapes, engine, sc.cost)] = model
    return row


def answer_table(df: pd.DataFrame, prediction: pd.DataFrame, param: str = "work_us") -> pd.DataFrame:
    """One row per synthetic strategy variant (correct?, why, speedups, break-evens, the model), then one per
    real run (:func:`run_row`), in the sweep's order."""
    if df.empty:
        return pd.DataFrame(columns=["scope", "strategy variant", "correct?", "why"])
    df = df.assign(scope=scope_of(df), base_label=base_label(df))
    pred = _prediction(prediction)
    points = _points(df, prediction, param)  # the whole sweep's: the findings' model error is of the same points
    cost = gem5_like_cost(df)
    rows, runs = [], []
    for scope in dict.fromkeys(df["scope"]):
        sdf = df[df["scope"] == scope]
        if scope != SYNTHETIC:  # a gem5 trace: a row per real run (shape)
            runs += [run_row(sdf[sdf["shape"] == shape], pred, scope, points, param)
                     for shape in dict.fromkeys(sdf["shape"])]  # fmt: skip
            continue
        sc = _scope(sdf, pred, points, cost, cxx_missing(prediction), param)
        rows += [_row(sc, scope, label) for label in dict.fromkeys(sc.cells.loc[_order(sc.cells), "base_label"])]
    table = pd.DataFrame(rows + runs)
    return table[[c for c in table.columns if c not in RUN_COLUMNS] + [c for c in RUN_COLUMNS if c in table]
                 ].fillna("-")  # fmt: skip


def figure_sentences(df: pd.DataFrame, param: str = "work_us") -> list[str]:
    """The findings page's quote of page 1: per synthetic strategy variant, its best 2-worker speedups
    (:func:`best_two_worker`) and its break-evens (:func:`tickpar.report.engines.engine_breakevens`), in the
    same words as page 1's cells and answer.csv (one computation, three places)."""
    if df.empty:
        return []
    df = df.assign(scope=scope_of(df), base_label=base_label(df))
    sdf = df[df["scope"] == SYNTHETIC]
    if sdf.empty:
        return []
    sc = _scope(sdf, _prediction(pd.DataFrame()), pd.DataFrame(), gem5_like_cost(df), False, param)
    out = []
    for label in dict.fromkeys(sc.cells.loc[_order(sc.cells), "base_label"]):
        if label.split("/")[0] == BASELINE:
            continue
        mine = sc.counted[sc.counted["base_label"] == label]
        speeds = [(sc.headers[(e, t, n)], best_two_worker(mine, e, n, param)) for e, t, n in sc.columns]
        parts = [f"{col}: {best_text(best, 0.0)}" for col, best in speeds if best is not None]
        evens = [(e, _breakevens(sc.breakevens, label, e)) for e in sc.engines]
        parts += [f"{_breakeven_column(e)}: {text}" for e, text in evens if text != "-"]
        if parts:
            out.append(f"Page 1's figures for {label} (best counted 2-worker loop speedup [95%], e2e = end to end; "
                       f"break-even = work per event where the loop speedup crosses 1): " + "; ".join(parts) + ".")
    return out


def is_run_row(table: pd.DataFrame) -> pd.Series:
    """Which rows of an answer table are real runs (:func:`run_row`), not synthetic strategy variants."""
    if table.empty or RUN_COLUMNS[0] not in table.columns:
        return pd.Series(False, index=table.index)
    return table[RUN_COLUMNS[0]].astype(str) != "-"


# ---------------------------------------------------------------- a real run's row


def _int(x: object) -> int | None:
    v = pd.to_numeric(pd.Series([x]), errors="coerce").iloc[0]
    return None if pd.isna(v) else int(v)


def _run_cost(cells: pd.DataFrame) -> str:
    """The run's cost per event and where it comes from: its stats (``event_cost``), else ``work_us``."""
    if "event_cost_us" in cells.columns:
        us = pd.to_numeric(cells["event_cost_us"], errors="coerce").dropna()
        if not us.empty:
            what = cells["event_cost"].dropna().astype(str) if "event_cost" in cells.columns else pd.Series([])
            kind = "its untraced stats" if what.str.contains("untraced run").any() else "its stats"
            return f"{us.iloc[0]:.3g} µs: the run's own ({kind})"
    work = _work(cells, "work_us").dropna()
    if not work.empty and work.iloc[0] > 0:
        return f"{work.iloc[0]:g} µs: work_us, not the run's own"
    return "none (work_us 0)"


def _timed_not_exact(rows: pd.DataFrame) -> str:
    """``race x6``: what the timed runs of ``rows`` gave where they were not all exact (their records' reasons)."""
    if "timed_exact" not in rows.columns:
        return ""
    bad = rows[rows["timed_exact"].astype(str).str.lower() == "false"]
    reasons = bad["timing_reason"].dropna().astype(str) if "timing_reason" in bad.columns else pd.Series([])
    found = [r.split(": ", 1)[1].split(";")[0] for r in reasons if r.startswith("timed runs not exact: ")]
    return ", ".join(dict.fromkeys(found)) or ("not exact" if len(bad) else "")


def _per_strategy(cells: pd.DataFrame) -> str:
    """``sequential yes 2/2; tick-barrier no 1/2 (race 1; timed: race x6)``: each strategy's checked verdicts and,
    where they were not all exact, its timed runs'."""
    parts = []
    for strategy, sub in cells.groupby("strategy", sort=False):
        counts = sub["verdict"].value_counts()
        n, exact = len(sub), int(counts.get("exact", 0))
        text = f"{strategy} {'yes' if exact == n else 'no'} {exact}/{n}"
        notes = [", ".join(f"{v} {k}" for v, k in counts.items() if v != "exact")]
        timed = _timed_not_exact(sub)
        notes.append(f"timed: {timed}" if timed else "")
        broken = sub["as_expected"].astype(str).str.lower().eq("false").sum() if "as_expected" in sub else 0
        notes.append(f"PROMISE BROKEN in {broken}" if broken else "")
        notes = [x for x in notes if x]
        parts.append(text + (f" ({'; '.join(notes)})" if notes else ""))
    return "; ".join(parts) or "-"


def _best_run(cells: pd.DataFrame, column: str) -> str:
    """The best counted 2-worker ``column`` (``loop_speedup`` or ``speedup``) with its interval and its strategy."""
    c = counted(cells)
    c = c[(c["workers"] == 2) & (c["strategy"] != BASELINE)]
    if column == "loop_speedup":
        y, lo, hi = _loop(c)
    else:
        y, lo, hi = (pd.to_numeric(c[k], errors="coerce") if k in c else pd.Series(math.nan, index=c.index)
                     for k in ("speedup", "speedup_lo", "speedup_hi"))  # fmt: skip
    if c.empty or y.dropna().empty:
        return f"- ({_why_no_speedup(cells)})"
    i = y.idxmax()
    engine = str(_engine(c).get(i, "python"))
    strategy = cells[cells["strategy"] == c.loc[i, "strategy"]]
    caveat = ("" if (strategy["verdict"] == "exact").all() else
              f" (this cell was exact; {c.loc[i, 'strategy']} is 'no' on this run: not every checked cell exact)")
    return f"{y[i]:.2f} [{lo[i]:.2f}, {hi[i]:.2f}] {c.loc[i, 'base_label']} [{engine}]{caveat}"


def _flag(df: pd.DataFrame, column: str) -> pd.Series:
    """A boolean column read from CSV text (``True``/``true``), False where it or the value is missing."""
    if column not in df.columns:
        return pd.Series(False, index=df.index)
    return df[column].astype(str).str.lower() == "true"


def _why_no_speedup(cells: pd.DataFrame) -> str:
    """Why a run has no counted 2-worker speedup: what its timed 2-worker cells and their baselines' records say."""
    status = cells["timing_status"] if "timing_status" in cells.columns else pd.Series("", index=cells.index)
    ok = cells[status.astype(str) == "ok"]
    mine = ok[(ok["workers"] == 2) & (ok["strategy"] != BASELINE)]
    if mine.empty:
        return "no 2-worker cell timed"
    if _flag(ok, "contended").any():
        return "contended: another load on the machine in every round, re-times included"
    not_exact = (mine["verdict"] != "exact") | (mine["timed_exact"].astype(str).str.lower() == "false"
                                                if "timed_exact" in mine.columns else False)  # fmt: skip
    return "no 2-worker cell whose timed runs were all exact" if not_exact.all() else "no counted 2-worker cell"


def _at_workers(pred: pd.DataFrame, cells: pd.DataFrame, value: str, points: pd.DataFrame | None = None,
                param: str = "work_us") -> str:  # fmt: skip
    """Per timed strategy variant of the run: ``value`` (``bound`` or ``model_value``) at :data:`MODEL_WORKERS`,
    priced with the preset of the engine its cells ran on (``cxx`` for the native engine).  With ``points`` (the
    model's measured points), each model figure carries THE model error, and the cell says where it is not
    citable (:func:`model_cell`)."""
    if pred.empty or value not in pred.columns:
        return "-"
    p = pred[(pred["workload"] == TRACE_WORKLOAD) & pred["shape"].isin(set(cells["shape"]))
             & (pred["strategy"] != BASELINE)]  # fmt: skip
    parts: list[str] = []
    reasons: list[str] = []
    for (strategy, variant), sub in p.groupby(["strategy", "variant"], sort=False):
        ran = cells[(cells["strategy"] == strategy) & (cells["variant"] == variant)]
        engines = set(_engine(ran)) if not ran.empty else set()
        preset = PRESET_OF["native"] if "native" in engines else PRESET_OF["python"]
        sub = sub[sub["preset"] == preset]
        vals = [pd.to_numeric(sub.loc[sub["workers"] == w, value], errors="coerce").dropna() for w in MODEL_WORKERS]
        if any(v.empty for v in vals):
            continue
        label = strategy + ("" if variant == "default" else f"/{variant}")
        text = f"{label} " + ", ".join(f"{v.max():.2g}x" for v in vals) + f" ({preset})"
        if points is not None:  # one strategy not citable: the whole cell is (it is read as one answer)
            engine = "native" if preset == PRESET_OF["native"] else "python"
            why, text = _model_parts(text, model_error(points, engine, strategy, variant, param), engine)
            reasons += [r for r in why if r not in reasons]
        parts.append(text)
    return _grey(reasons, "; ".join(parts)) if parts else "-"


def run_row(cells: pd.DataFrame, pred: pd.DataFrame, scope: str, points: pd.DataFrame | None = None,
            param: str = "work_us") -> dict[str, str]:  # fmt: skip
    """The row of one real run: every cell of one gem5-trace shape (:data:`RUN_COLUMNS`); ``points``: the
    model's measured points of the whole sweep (the model's error beside its figures)."""
    shape = str(cells["shape"].iloc[0])
    base = cells[cells["strategy"] == BASELINE]
    base = base if not base.empty else cells
    events = _int(pd.to_numeric(base["events"], errors="coerce").max()) if "events" in base.columns else None
    counts = f"{events:,} events" if events is not None else "events unknown"
    run = f"{shape}: {counts}; {_run_cost(cells)}"
    return {
        "scope": scope, "strategy variant": "every strategy (a real run)",
        RUN_COLUMNS[0]: run, RUN_COLUMNS[1]: _per_strategy(cells),
        RUN_COLUMNS[2]: _best_run(cells, "loop_speedup"), RUN_COLUMNS[3]: _best_run(cells, "speedup"),
        RUN_COLUMNS[4]: _at_workers(pred, cells, "bound"),
        RUN_COLUMNS[5]: _at_workers(pred, cells, "model_value", points, param),
    }  # fmt: skip


def _points(df: pd.DataFrame, prediction: pd.DataFrame, param: str) -> pd.DataFrame:
    """The model's measured points (:func:`tickpar.report.model_error.recompute`); none from partial tables."""
    try:
        return recompute(df, prediction, param) if not prediction.empty else pd.DataFrame()
    except KeyError:  # a summary or prediction without the join's columns: nothing validated
        return pd.DataFrame()


def _order(sdf: pd.DataFrame) -> list[int]:
    """Row positions of ``sdf`` in report order (the baseline first, then the sweep's order)."""
    order = {lab: i for i, lab in enumerate(sweep_labels(sdf))}
    return sorted(sdf.index, key=lambda i: order[sdf.at[i, "label"]])


# ---------------------------------------------------------------- findings


def _by_strategy(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    strategy = rows["strategy variant"].str.split("/").str[0]
    return {name: rows[strategy == name] for name in dict.fromkeys(strategy)}


def _exactness(table: pd.DataFrame) -> list[tuple[str, str]]:
    """Which strategies were exact everywhere on the synthetic workloads, and which were not, with how often and why
    (one line each; none where the synthetic workloads ran only the baseline: the real runs' finding says it)."""
    if table.empty or "correct?" not in table.columns:
        return []
    syn = table[table["scope"] == SYNTHETIC] if SYNTHETIC in set(table["scope"]) else table
    if (syn["strategy variant"].astype(str).str.split("/").str[0] == BASELINE).all():
        return []
    exact = syn["correct?"].astype(str).str.startswith("yes")
    out = []
    ok = [f"{name} ({len(g)} variant{'s' if len(g) > 1 else ''})" if len(g) > 1 else g["strategy variant"].iloc[0]
          for name, g in _by_strategy(syn[exact]).items()]  # fmt: skip
    if ok:
        out.append((f"On the synthetic workloads, exact in every checked cell: {', '.join(ok)}.", "correctness"))
    parts = []
    for name, g in _by_strategy(syn[~exact]).items():
        counts = g["correct?"].astype(str).str.extract(r"exact in (\d+)/(\d+)").astype(float)
        bad, total = int((counts[1] - counts[0]).sum()), int(counts[1].sum())
        why = textwrap.shorten(str(g["why"].iloc[0]), 90, placeholder="...") if g["why"].iloc[0] else ""
        parts.append(f"{name} ({len(g)} variant{'s' if len(g) > 1 else ''}, {bad} of {total} cells)"
                     + (f": {why}" if why else ""))  # fmt: skip
    if parts:
        out.append(("On the synthetic workloads, not always exact: " + "; ".join(parts) + ".",
                    "correctness, failures"))  # fmt: skip
    return out


def _speed_header(table: pd.DataFrame, engine: str, near: float) -> str | None:
    """The speed column of ``engine`` at ``near`` µs per event (:func:`_column`), None where the table has none."""
    prefix = f"{engine} engine, 2 workers, {near:g} µs per event"
    return next((c for c in table.columns if str(c).startswith(prefix)), None)


def _best_sentence(table: pd.DataFrame, column: str | None, what: str, page: str) -> tuple[str, str] | None:
    if column is None or column not in table.columns:
        return None
    cells = table[column].astype(str)
    values = cells.str.extract(r"^([0-9.]+) \[")[0].astype(float)
    if values.dropna().empty:
        return None
    i = values.idxmax()
    return (f"Best {what}: {table.at[i, 'strategy variant']} at {table.at[i, column]} (page 1's column "
            f"'{column}').", page)  # fmt: skip


def _breakeven_finding(df: pd.DataFrame, param: str) -> list[tuple[str, str]]:
    """Per engine, the strategy that breaks even at the least work per event."""
    be = engine_breakevens(df, param)
    be = be[be["kind"].isin(["at", "below"]) & be["x"].notna()]
    parts = []
    for engine in [e for e in REPRESENTATIVE if e in set(be["engine"])]:
        best = be[be["engine"] == engine].sort_values("x").iloc[0]
        parts.append(f"{engine} engine from {_short_breakeven(best['kind'], best['x'])} µs "
                     f"({best['base_label']} on {best['workload']})")  # fmt: skip
    if not parts:
        return []
    return [("Cheapest break-even work per event (where the 2-worker loop speedup crosses 1): " + "; ".join(parts)
             + ".", "engines")]  # fmt: skip


def _model_finding(table: pd.DataFrame) -> list[tuple[str, str]]:
    """What page 1's model columns allow: the largest citable model figure per engine, else why none is (from the
    same cells, so that the finding cannot cite what the table greys out)."""
    parts, greyed = [], []
    for column in [c for c in table.columns if " engine model (preset " in str(c)]:
        engine = str(column).split(" ", 1)[0]
        cells = table[column].astype(str)
        cells = cells[cells.str.contains(" workers ")]
        ok = cells[~cells.str.startswith(NOT_CITABLE)]
        if not ok.empty:
            top = ok.str.extract(rf"{max(MODEL_WORKERS)} workers (?:[0-9.]+-)?([0-9.]+)x")[0].astype(float)
            if top.notna().any():
                i = top.idxmax()
                parts.append(f"{engine} engine {_num(float(top[i]))}x ({table.at[i, 'strategy variant']})")
        reasons = cells[cells.str.startswith(NOT_CITABLE)].str.extract(rf"^{NOT_CITABLE} \((.*?)\): model")[0]
        if reasons.notna().any():
            why = "; ".join(dict.fromkeys("; ".join(reasons.dropna()).split("; ")))
            greyed.append(f"{engine} engine, {int(reasons.notna().sum())} of {len(cells)} ({why})")
    if not parts and not greyed:
        return []
    said = (f"At {max(MODEL_WORKERS)} workers the model predicts at most " + " and ".join(parts)) if parts else (
        f"No model figure at {' or '.join(map(str, MODEL_WORKERS))} workers is citable")
    grey = f"; greyed out on page 1 (not an answer): {'; '.join(greyed)}" if greyed else ""
    return [(said + grey + ".", "scaling")]


def _run_costs(runs: pd.DataFrame, own: bool = True) -> list[float]:
    """The runs' cost per event (µs) as their rows give it: their own (``own``), else work_us where it is not."""
    what = "the run's own" if own else "work_us, not the run's own"
    found = runs[RUN_COLUMNS[0]].astype(str).str.extract(rf"; ([0-9.]+) µs: {what}")[0]
    return [float(x) for x in found.dropna()]


def _span(values: Sequence[float]) -> str:
    return f"{min(values):.2g}-{max(values):.2g} µs" if len(set(values)) > 1 else f"{values[0]:.2g} µs"


def runs_finding(table: pd.DataFrame) -> list[tuple[str, str]]:
    """One sentence on the real runs, from their rows of ``table``: how many, at what cost (their own, of which
    the gem5-like cost is the median); each run's best measured 2-worker loop speedup; which strategies were exact
    on every run (and where the others were not); the largest bound at 64 workers."""
    runs = table[is_run_row(table)]
    if runs.empty:
        return []
    names = runs[RUN_COLUMNS[0]].astype(str).str.split(":").str[0]
    exact: dict[str, bool] = {}
    failed: dict[str, list[str]] = {}
    for name, text in zip(names, runs[RUN_COLUMNS[1]].astype(str), strict=True):
        for strategy, ok in re.findall(r"(?:^|; )(\S+) (yes|no) \d+/\d+", text):
            exact[strategy] = exact.get(strategy, True) and ok == "yes"
            if ok == "no":
                failed.setdefault(strategy, []).append(name)
    correct = ""
    if exact:
        good = [k for k, v in exact.items() if v]
        bad = [f"{k} (on {', '.join(failed[k]) if len(failed[k]) < len(runs) else 'every run'})"
               for k, v in exact.items() if not v]  # fmt: skip
        correct = "; exact in every checked cell: " + (", ".join(good) or "no strategy")
        correct += f"; not always: {', '.join(bad)}" if bad else ""
    speeds = "; ".join(f"{cell} on {name}" for name, cell in zip(names, runs[RUN_COLUMNS[2]].astype(str), strict=True))
    bounds = runs[RUN_COLUMNS[4]].astype(str).str.findall(r", ([0-9.]+)x").map(lambda v: [float(x) for x in v])
    top = max((max(v) for v in bounds if v), default=None)
    bound = f"; no strategy's bound at {max(MODEL_WORKERS)} workers exceeds {top:.2g}x" if top is not None else ""
    own, given = _run_costs(runs), _run_costs(runs, own=False)
    costs = [f"at its own measured cost per event ({_span(own)})"] if own else []
    costs += [f"at work_us ({_span(given)}: not the run's own, no gem5 stats given)"] if given else []
    how = f"replayed {' or '.join(costs)}" if costs else "replayed"
    return [(f"Real gem5 runs ({len(runs)}), each {how}: best measured 2-worker loop speedup {speeds}{correct}"
             f"{bound}.", "traces")]  # fmt: skip


def answer_findings(
    df: pd.DataFrame, prediction: pd.DataFrame, table: pd.DataFrame, param: str = "work_us"
) -> list[tuple[str, str]]:
    """At most eight (sentence, page) pairs, most important first: the real runs (where the sweep has them),
    correctness, speed, break-even, model, defects."""
    if table.empty:
        return [("The sweep has no cells.", "findings")]
    out = runs_finding(table)
    out += _exactness(table[~is_run_row(table)])
    synthetic = df[scope_of(df) == SYNTHETIC] if not df.empty else df
    cost = gem5_like_cost(df)
    for engine, target, near in speed_columns(synthetic, param, cost):
        if target == targets(engine, cost)[0]:
            what = f"at the gem5-like cost, {cost.text()}" if engine == "native" else "with heavy events"
            found = _best_sentence(table, _speed_header(table, engine, near), f"{what}, {engine} engine",
                                   "engines" if engine == "native" else "breakeven")  # fmt: skip
            out += [found] if found else []
    if not synthetic.empty:  # the real runs have one work per event each (no break-even), their model in their rows
        out += _breakeven_finding(synthetic, param)
        out += _model_finding(table[~is_run_row(table)])
    defects = bound_defects(df)
    out.append((f"{len(defects)} measured point(s) above their bound (defects, listed in the appendix).",
                "appendix"))  # fmt: skip
    if cxx_missing(prediction):
        out.append((f"The cxx preset is missing (no native model): build the native engine with {BUILD_NATIVE} "
                    "and rerun.", "scaling"))  # fmt: skip
    return out[:8]
