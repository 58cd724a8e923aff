"""The anatomy of a failure: the steps that led a cell to a non-exact verdict.

A step is ``{worker, step, event, when, cur_tick, note}``: which worker (or
logical process) did it, at which scheduler step, on which event, the event's
``when``, the queue's ``cur_tick`` then, and one line saying what happened.
The list is chronological and ends at the failing operation.  For a
partitioned run (logical processes synchronised by windows or promises),
``worker`` names an LP (``"LP 1"``) and ``step`` the lookahead window.

:func:`tickpar.runner.explain` asks the cell's strategy first (:meth:`Strategy.anatomy`:
``split`` replays its deterministic interleaving with a recorder and names the
pop that moved ``cur_tick``, the running handler and where its ``when`` came
from); otherwise the record alone speaks (the failure, the first race, the
first divergence and the first counted violation), with ``worker`` and
``step`` left ``None`` where the record does not know them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tickpar.verify.oracle import OracleRecord, Verdict

__all__ = ["STEP_KEYS", "format_steps", "from_record", "partitioned_steps", "row"]

STEP_KEYS = ("worker", "step", "event", "when", "cur_tick", "note")


def row(event: Any = None, when: Any = None, cur_tick: Any = None, note: str = "", **known: Any) -> dict[str, Any]:
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
            row(
                v["event"],
                v["when"],
                v["cur_tick"],
                f"first of {len(record.violations)} scheduling violation(s), counted with the assertions off:"
                f" {v['op']} {v['reason']}",
            )
        )
    if record.races:
        race = record.races[0]
        steps.append(row(race["event"], race["when"], None, f"{race['component']}: {race['detail']}"))
    div = verdict.divergence
    if div is not None:
        steps.append(
            row(
                div["component"],
                div.get("tick"),
                None,
                f"first divergence: event #{div.get('index')}: expected {div['expected']}, got {div['got']}",
            )
        )
    failure = record.failure
    if failure is not None:
        steps.append(
            row(failure.get("event"), failure.get("when"), failure.get("cur_tick"), str(failure.get("message", "")))
        )
    if not steps:
        steps.append(row(note=verdict.reason))
    return steps


def partitioned_steps(
    verdict: Verdict, lp_of: Sequence[int], names: Sequence[str], lookahead: int | None, sync: str
) -> list[dict[str, Any]]:
    """Where a partitioned run's verdict happened: the LP of the diverging component and its window.

    ``lp_of[i]`` is the LP of component ``i`` (``names[i]``); window ``k``
    spans ticks ``[k * lookahead, (k + 1) * lookahead)``.
    """
    lp = {name: lp_of[i] for i, name in enumerate(names)}
    steps: list[dict[str, Any]] = []
    div = verdict.divergence
    if div is not None and div["component"] in lp:
        tick = div.get("tick")
        window = tick // lookahead if lookahead and isinstance(tick, int) else None
        span = ""
        if window is not None and lookahead:
            span = f" (window [{window * lookahead}, {(window + 1) * lookahead}) of {sync} sync)"
        steps.append(
            row(
                div["component"],
                tick,
                None,
                f"first divergence in LP {lp[div['component']]}{span}: event #{div.get('index')}:"
                f" expected {div['expected']}, got {div['got']}",
                worker=f"LP {lp[div['component']]}",
                step=window,
            )
        )
    if verdict.kind != "diverged" or not steps:
        steps.append(row(note=f"{verdict.kind}: {verdict.reason} ({len(set(lp_of))} LPs, {sync} sync)"))
    return steps


def format_steps(steps: list[dict[str, Any]]) -> str:
    """The steps as aligned text lines (``tickpar check --explain``)."""
    lines = []
    for s in steps:
        lp = isinstance(s["worker"], str)  # a partitioned run: an LP and its window
        who = "" if s["worker"] is None else (s["worker"] if lp else f"worker {s['worker']}")
        at = "" if s["step"] is None else (f"window {s['step']}" if lp else f"step {s['step']}")
        ticks = []
        if s["when"] is not None:
            ticks.append(f"when={s['when']}")
        if s["cur_tick"] is not None:
            ticks.append(f"cur_tick={s['cur_tick']}")
        lines.append(f"  {at:>10}  {who:<9} {s['event'] or '-'}  {' '.join(ticks)}\n      {s['note']}")
    return "\n".join(lines)
