"""The ``split`` strategy's failure anatomy: the steps that led to a non-exact verdict.

Not a plugin (the registry skips files starting with ``_``): :meth:`Split.anatomy` in
``strategies/split.py`` calls :func:`split_anatomy`.  It replays the interleaved run with a
:class:`~tickpar.builtin.strategies._split_interleaver.Recorder` (never on in a measured run) and
returns the steps that led to the verdict: for ``causality`` the pop that moved ``cur_tick``, the
running handler and where its ``when`` came from (replayed once more with the handler reading its own
event's tick: an unchanged ``when`` is a stored tick, a changed one ``cur_tick + delay``); for ``race``
the two workers and events in one component; for ``diverged`` the schedule that produced the first
divergence.
"""

from __future__ import annotations

from typing import Any

from tickpar.builtin.strategies._split_interleaver import LogRow, ProbeDone, Recorder, set_up_interleaved_run

from tickpar.kernel.eventq import Event, SchedulingError
from tickpar.kernel.model import Component
from tickpar.plugins import RunSpec
from tickpar.verify.oracle import Verdict


def split_anatomy(
    spec: RunSpec, workers: int, options: dict[str, Any], verdict: Verdict
) -> list[dict[str, Any]] | None:
    """The steps that led to ``verdict``, from a recorded replay (interleave executor only)."""
    if options.get("executor", "interleave") != "interleave" or verdict.kind not in {
        "causality",
        "race",
        "diverged",
    }:
        return None
    recorder = Recorder()
    model, queue, _shared, interleaver = set_up_interleaved_run(spec, workers, options, recorder)
    first_race: list[tuple[Component, dict[int, int]]] = []
    note_race = model.note_race

    def noting(component: Component, event: Event | None, detail: str) -> None:
        note_race(component, event, detail)
        if not first_race:
            first_race.append((component, dict(recorder.inside)))
            name = event.name if event is not None else "<direct call>"
            recorder.add(interleaver.current, "race", name, component.when, queue.tick_now(), component.name)

    model.note_race = noting  # type: ignore[method-assign]
    try:
        interleaver.run()
    except SchedulingError:
        pass
    except Exception:  # a crash is explained by its message, not by a replay
        return None
    if verdict.kind == "causality" and recorder.failed is not None:
        return _causality_steps(recorder, replay_when(spec, workers, options, recorder))
    if verdict.kind == "race" and first_race:
        return _race_steps(recorder, *first_race[0])
    if verdict.kind == "diverged" and verdict.divergence is not None:
        return _diverged_steps(recorder, verdict.divergence)
    return None


def replay_when(
    spec: RunSpec, workers: int, options: dict[str, Any], recorder: Recorder
) -> tuple[int, int | None] | None:
    """Replay once more with the failing handler reading its own event's tick as "now".

    Returns ``(handler's tick, when it then asks for)`` (``None``: it no
    longer reaches that operation), or ``None`` when no handler was running.
    """
    failed = recorder.failed
    assert failed is not None
    run = recorder.running.get(failed[1])
    if run is None:
        return None
    probe = Recorder(probe=(run[0], run[2] - 1))
    _model, _queue, _shared, interleaver = set_up_interleaved_run(spec, workers, options, probe)
    try:
        interleaver.run()
    except (ProbeDone, SchedulingError):
        pass
    except Exception:
        return None
    return run[1].when, probe.probe_when


def _step(row: LogRow, note: str) -> dict[str, Any]:
    step, worker, _kind, event, when, cur_tick, _ = row
    return {"worker": worker, "step": step, "event": event, "when": when, "cur_tick": cur_tick, "note": note}


def _handler_context(
    log: list[LogRow], end: int, worker: int, handler: str, limit: int = 4
) -> list[dict[str, Any]]:
    """The pop and start of ``worker``'s handler running at log index ``end``, and the pops and
    stale reads of "now" that happened while it ran (the last ``limit`` pops)."""
    start = next(
        (i for i in range(end, -1, -1) if log[i][1] == worker and log[i][2] == "handler" and log[i][3] == handler),
        None,
    )
    if start is None:
        return []
    out: list[dict[str, Any]] = []
    pop = next(
        (i for i in range(start, -1, -1) if log[i][1] == worker and log[i][2] == "pop" and log[i][3] == handler),
        None,
    )
    if pop is not None:
        row = log[pop]
        out.append(_step(row, f"worker {worker} pops {row[3]}: cur_tick := {row[4]}"))
    row = log[start]
    out.append(_step(row, f"handler {row[3]} starts (its event's tick {row[4]}, cur_tick {row[5]})"))
    pops = [i for i in range(start + 1, end + 1) if log[i][2] == "pop"]
    shown = pops[-limit:]
    if len(pops) > len(shown):
        first = log[pops[0]]
        out.append(
            _step(first, f"{len(pops)} pops by other workers while {handler} runs; the last {len(shown)} follow")
        )
    for i in shown:
        row = log[i]
        who = "another worker" if row[1] != worker else "the same worker (pop-ahead)"
        out.append(_step(row, f"{who} pops {row[3]}: cur_tick := {row[4]} while {handler} runs"))
    reads = [i for i in range(start + 1, end + 1) if log[i][2] == "read" and log[i][1] == worker]
    for i in reads[-2:]:
        row = log[i]
        out.append(_step(row, f"{handler} reads cur_tick = {row[5]}; its event's tick is {row[4]}"))
    return out


def _causality_steps(recorder: Recorder, replay: tuple[int, int | None] | None) -> list[dict[str, Any]]:
    log = recorder.log
    failed = recorder.failed
    assert failed is not None
    end = len(log) - 1
    _step_no, worker, _kind, _target, when, cur_tick, message = failed
    run = recorder.running.get(worker)
    steps: list[dict[str, Any]] = []
    if run is not None:
        handler = run[1].name
        steps = _handler_context(log, end, worker, handler)
        movers = [i for i in range(end) if log[i][2] == "pop" and log[i][4] == cur_tick]
        if movers:
            row = log[movers[-1]]
            steps.append(
                _step(row, f"the pop that set cur_tick = {cur_tick}: worker {row[1]} pops {row[3]}")
            )
        if replay is not None:
            own, replayed = replay
            if replayed == when:
                origin = (
                    f"when={when} is a stored tick: replayed with now = its event's own tick {own}, the handler"
                    " asks for the same tick, so it was not computed from cur_tick"
                )
            elif replayed is None:
                origin = f"when={when} depends on cur_tick: with now = {own} the handler no longer makes this call"
            else:
                origin = (
                    f"when={when} is cur_tick + delay: with now = its event's tick {own} the handler asks for"
                    f" {replayed} (delay {replayed - own})"
                )
            steps.append(_step(failed, origin))
    steps.sort(key=lambda s: s["step"])
    steps.append(_step(failed, f"{message} (gem5's assert(when >= curTick()) fails)"))
    return _unique(steps)


def _race_steps(recorder: Recorder, component: Component, inside: dict[int, int]) -> list[dict[str, Any]]:
    log = recorder.log
    end = next(i for i in range(len(log) - 1, -1, -1) if log[i][2] == "race")
    race = log[end]
    worker = race[1]
    steps: list[dict[str, Any]] = []
    for other, start in sorted(inside.items()):
        row = log[start]
        if other == worker:
            steps.append(_step(row, f"worker {worker} starts {row[3]}"))
        elif start < end:
            steps.append(
                _step(row, f"worker {other} starts {row[3]}: inside its component until its release step")
            )
    how = "a direct call enters" if race[3] == "<direct call>" else f"{race[3]} enters"
    steps.append(
        _step(race, f"{how} {component.name} on worker {worker} while another worker is inside: the race guard fires")
    )
    steps.sort(key=lambda s: s["step"])
    return _unique(steps)


def _diverged_steps(recorder: Recorder, divergence: dict[str, Any]) -> list[dict[str, Any]]:
    log = recorder.log
    got, expected = divergence.get("got"), divergence.get("expected")
    what = (
        f"first divergence: {divergence['component']} event #{divergence.get('index')}:"
        f" expected {expected}, got {got}"
    )
    last = {
        "worker": None,
        "step": None,
        "event": divergence["component"],
        "when": divergence.get("tick"),
        "cur_tick": None,
        "note": what,
    }
    if not isinstance(got, list) or len(got) < 3:
        return [last]
    found = next(
        (i for i, r in enumerate(log) if r[2] in {"schedule", "reschedule"} and r[3] == got[2] and r[4] == got[0]),
        None,
    )
    if found is None:
        return [last]
    row = log[found]
    steps = _handler_context(log, found, row[1], row[6])
    exp_when = expected[0] if isinstance(expected, list) else None
    steps.append(
        _step(row, f"{row[6]} {row[2]}s {row[3]} at {row[4]} (cur_tick {row[5]}); sequentially at {exp_when}")
    )
    steps.sort(key=lambda s: s["step"])
    last.update(step=row[0], when=got[0])
    steps.append(last)
    return _unique(steps)


def _unique(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen, out = set(), []
    for s in steps:
        key = (s["worker"], s["step"], s["note"])
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out
