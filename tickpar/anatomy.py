"""The anatomy of a failure: the steps that led a cell to a non-exact verdict.

A step is ``{worker, step, event, when, cur_tick, note}``: which worker (or
logical process) did it, at which scheduler step, on which event, the event's
``when``, the queue's ``cur_tick`` then, and one line saying what happened.
The list is chronological and ends at the failing operation.

:func:`explain` asks the cell's strategy first (:meth:`Strategy.anatomy`:
``split`` replays its deterministic interleaving with a recorder and names the
pop that moved ``cur_tick``, the running handler and where its ``when`` came
from); otherwise the record alone speaks (the failure, the first race, the
first divergence and the first counted violation), with ``worker`` and
``step`` left ``None`` where the record does not know them.
"""

from __future__ import annotations

from typing import Any

from tickpar.oracle import OracleRecord, Verdict
from tickpar.registry import get_registry
from tickpar.runner import Cell

__all__ = ["STEP_KEYS", "explain", "format_steps", "from_record"]

STEP_KEYS = ("worker", "step", "event", "when", "cur_tick", "note")


def _row(event: Any = None, when: Any = None, cur_tick: Any = None, note: str = "", **known: Any) -> dict[str, Any]:
    return {
        "worker": known.get("worker"),
        "step": known.get("step"),
        "event": event,
        "when": when,
        "cur_tick": cur_tick,
        "note": note,
    }


def from_record(verdict: Verdict, record: OracleRecord) -> list[dict[str, Any]]:
    """What the record alone says about ``verdict``: the facts it holds, in the order they happened."""
    steps: list[dict[str, Any]] = []
    if record.violations:
        v = record.violations[0]
        steps.append(
            _row(
                v["event"],
                v["when"],
                v["cur_tick"],
                f"first of {len(record.violations)} scheduling violation(s), counted with the assertions off:"
                f" {v['op']} {v['reason']}",
            )
        )
    if record.races:
        race = record.races[0]
        steps.append(_row(race["event"], race["when"], None, f"{race['component']}: {race['detail']}"))
    div = verdict.divergence
    if div is not None:
        steps.append(
            _row(
                div["component"],
                div.get("tick"),
                None,
                f"first divergence: event #{div.get('index')}: expected {div['expected']}, got {div['got']}",
            )
        )
    failure = record.failure
    if failure is not None:
        steps.append(
            _row(failure.get("event"), failure.get("when"), failure.get("cur_tick"), str(failure.get("message", "")))
        )
    if not steps:
        steps.append(_row(note=verdict.reason))
    return steps


def explain(cell: Cell, verdict: Verdict, record: OracleRecord) -> list[dict[str, Any]]:
    """The anatomy of ``cell``'s ``verdict`` (``[]`` for ``exact``)."""
    if verdict.kind == "exact":
        return []
    strategy = get_registry().strategy(cell.strategy)()
    try:
        steps = strategy.anatomy(cell.spec, cell.workers, dict(cell.options), verdict)
    except Exception as exc:  # an explanation must never cost the verdict
        return [*from_record(verdict, record), _row(note=f"no replay: {type(exc).__name__}: {exc}")]
    return steps if steps else from_record(verdict, record)


def format_steps(steps: list[dict[str, Any]]) -> str:
    """The steps as aligned text lines (``tickpar check --explain``)."""
    lines = []
    for s in steps:
        who = "" if s["worker"] is None else f"worker {s['worker']}"
        at = "" if s["step"] is None else f"step {s['step']}"
        ticks = []
        if s["when"] is not None:
            ticks.append(f"when={s['when']}")
        if s["cur_tick"] is not None:
            ticks.append(f"cur_tick={s['cur_tick']}")
        lines.append(f"  {at:>10}  {who:<9} {s['event'] or '-'}  {' '.join(ticks)}\n      {s['note']}")
    return "\n".join(lines)
