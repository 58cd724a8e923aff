"""The event DAG of a sequential run: recording it, its parent links, its table (docs/explanation/design.md §9).

:func:`record_dag` runs a spec sequentially and returns a :class:`Dag`, one row per processed event;
:mod:`tickpar.perf.predict.bounds` describes the columns and the bounds computed from it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tickpar.kernel.eventkeys import SRC_BITS
from tickpar.kernel.simloop import start_single_queue
from tickpar.plugins import RunSpec

if TYPE_CHECKING:
    from tickpar.kernel.model import Model

__all__ = [
    "DAG_FORMAT",
    "Dag",
    "find_parents",
    "record_dag",
]

_SEQ_MASK = (1 << SRC_BITS) - 1  # source key = component << SRC_BITS | seq

DAG_FORMAT = "tickpar.dag/1"


COLUMNS = ("component", "when", "priority", "source", "first", "last", "cost_s", "parent", "work_us", "work_calls")
_FLOAT_COLUMNS = ("cost_s", "work_us")


# -- the DAG -------------------------------------------------------------------------------
def find_parents(component: np.ndarray, source: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Parent index of every event (``-1``: root); ``source`` is ``-1`` where the event had none.

    The parent of source ``(c, s)`` is the event of ``c`` with ``first < s <= last``.
    A component's non-empty ranges are disjoint and increase with processing
    order, so one sorted search over ``(component, last)`` finds it.
    """
    component = np.asarray(component, dtype=np.int64)
    source = np.asarray(source, dtype=np.int64)
    first = np.asarray(first, dtype=np.int64)
    last = np.asarray(last, dtype=np.int64)
    n = len(component)
    parents = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return parents
    shift = SRC_BITS + 1
    issuing = np.flatnonzero(last > first)
    keys_last = (component[issuing] << shift) | last[issuing]
    order = np.argsort(keys_last, kind="stable")
    keys_last = keys_last[order]
    issuing = issuing[order]
    has_source = source >= 0
    src_comp = np.where(has_source, source >> SRC_BITS, 0)
    src_seq = np.where(has_source, source & _SEQ_MASK, 0)
    want = (src_comp << shift) | src_seq
    pos = np.searchsorted(keys_last, want, side="left")
    found = has_source & (pos < len(keys_last))
    cand = issuing[np.minimum(pos, max(len(issuing) - 1, 0))] if len(issuing) else np.zeros(n, dtype=np.int64)
    ok = found & (component[cand] == src_comp) & (first[cand] < src_seq) & (src_seq <= last[cand])
    parents[ok] = cand[ok]
    return parents


@dataclass
class Dag:
    """The event DAG of one sequential run: a table plus the model's static shape.

    ``events``: one row per processed event in processing order, columns
    :data:`COLUMNS` (``source``/``parent`` are ``-1`` for none).
    ``components``: names by id.  ``lookahead``: ``(src id, dst id, min
    latency)`` per coupled pair (direct calls: 0).  ``meta``: the spec, the
    end tick and the recording run's wall time.
    """

    events: pd.DataFrame
    components: list[str]
    lookahead: list[tuple[int, int, int]]
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_records(
        cls,
        records: Iterable[tuple[Any, ...]],
        components: Sequence[str] | int,
        lookahead: Iterable[tuple[int, int, int]] = (),
        meta: dict[str, Any] | None = None,
    ) -> Dag:
        """Build from ``model.dag`` tuples ``(component, when, priority, source, first, last, cost_s)``.

        A tuple may carry two more fields, ``(..., work_us, work_calls)``: the
        synthetic work the event asked for (see :func:`record_dag`); else 0.
        ``components`` is the list of names, or a count (names ``c0, c1, ...``).
        Parents are reconstructed with :func:`find_parents`.
        """
        rows = list(records)
        names = [f"c{i}" for i in range(components)] if isinstance(components, int) else list(components)
        comp = np.array([r[0] for r in rows], dtype=np.int64)
        when = np.array([r[1] for r in rows], dtype=np.int64)
        prio = np.array([r[2] for r in rows], dtype=np.int64)
        source = np.array([-1 if r[3] is None else r[3] for r in rows], dtype=np.int64)
        first = np.array([r[4] for r in rows], dtype=np.int64)
        last = np.array([r[5] for r in rows], dtype=np.int64)
        cost = np.array([r[6] for r in rows], dtype=np.float64)
        work_us = np.array([r[7] if len(r) > 7 else 0.0 for r in rows], dtype=np.float64)
        work_calls = np.array([r[8] if len(r) > 8 else 0 for r in rows], dtype=np.int64)
        if len(rows) and (comp.min() < 0 or comp.max() >= len(names)):
            raise ValueError(f"component ids must be in [0, {len(names)})")
        if np.any(np.diff(when) < 0):
            raise ValueError("events must be in processing order: 'when' decreases")
        parent = find_parents(comp, source, first, last)
        events = pd.DataFrame(
            {
                "component": comp,
                "when": when,
                "priority": prio,
                "source": source,
                "first": first,
                "last": last,
                "cost_s": cost,
                "parent": parent,
                "work_us": work_us,
                "work_calls": work_calls,
            }
        )
        return cls(events, names, [(int(s), int(d), int(lat)) for s, d, lat in lookahead], dict(meta or {}))

    # -- figures ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.events)

    @property
    def t1_s(self) -> float:
        """Sequential work: the sum of the recorded event costs."""
        return float(self.events["cost_s"].sum())

    def with_work(self, per_call_s: float, per_us_s: float) -> Dag:
        """This DAG with each event's requested synthetic work added to ``cost_s``.

        A DAG recorded with ``work=none`` holds the engine's and the handlers'
        cost alone; ``per_call_s + per_us_s * work_us`` per call is what the
        work model charges (calibrated once, :mod:`tickpar.perf.predict.prediction`), so one
        recording serves every ``work_us`` of a shape family.
        """
        events = self.events.copy()
        events["cost_s"] = events["cost_s"] + events["work_calls"] * per_call_s + events["work_us"] * per_us_s
        return Dag(events, list(self.components), list(self.lookahead), dict(self.meta))

    def roots(self) -> int:
        """Events with no parent (scheduled by ``init()`` or inside a direct call)."""
        return int((self.events["parent"] < 0).sum())

    # -- serialisation ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": DAG_FORMAT,
            "meta": self.meta,
            "components": list(self.components),
            "lookahead": [list(t) for t in self.lookahead],
            "events": {c: self.events[c].tolist() for c in COLUMNS},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Dag:
        if data.get("format") != DAG_FORMAT:
            raise ValueError(f"not a {DAG_FORMAT} record (format {data.get('format')!r})")
        cols = data["events"]
        events = pd.DataFrame(
            {c: np.asarray(cols[c], dtype=np.float64 if c in _FLOAT_COLUMNS else np.int64) for c in COLUMNS}
        )
        return cls(events, list(data["components"]), [tuple(t) for t in data["lookahead"]], dict(data["meta"]))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict()))

    @classmethod
    def load(cls, path: str | Path) -> Dag:
        return cls.from_dict(json.loads(Path(path).read_text()))


class _WorkMeter:
    """Stands in for every component's ``work(us)``: counts what each event asks for, spends nothing."""

    def __init__(self) -> None:
        self.us = 0.0
        self.calls = 0

    def __call__(self, us: float) -> None:
        self.us += us
        self.calls += 1

    def take(self) -> tuple[float, int]:
        taken = (self.us, self.calls)
        self.us, self.calls = 0.0, 0
        return taken


class _MeteredRows(list):  # type: ignore[type-arg]
    """``model.dag`` that appends the work the event asked for to each row (read when the row lands)."""

    def __init__(self, meter: _WorkMeter) -> None:
        super().__init__()
        self.meter = meter

    def append(self, row: tuple[Any, ...]) -> None:
        super().append((*row, *self.meter.take()))


def record_dag(spec: RunSpec, meter_work: bool = False) -> Dag:
    """Run ``spec`` sequentially with DAG recording and return its :class:`Dag`.

    ``meter_work``: spend no synthetic work; record instead, per event, the
    ``work_us`` it asked for and how many ``work()`` calls (columns
    ``work_us``, ``work_calls``; ``cost_s`` is then the engine and handler cost
    alone, see :meth:`Dag.with_work`).  Without it the spec's work mode runs
    and is part of ``cost_s``.
    """
    def meter(model: Model) -> None:
        work_meter = _WorkMeter()
        for comp in model.components:
            comp.work = work_meter
        model.dag = _MeteredRows(work_meter)

    model, queue = start_single_queue(
        spec, record_dag=True, work="none" if meter_work else None, prepare=meter if meter_work else None
    )
    started = time.perf_counter()
    queue.run()
    wall = time.perf_counter() - started
    assert model.dag is not None
    meta = {"spec": spec.to_dict(), "end_tick": model.end_tick, "wall_s": wall, "work_metered": meter_work}
    return Dag.from_records(model.dag, [c.name for c in model.components], model.lookahead_graph(), meta)
