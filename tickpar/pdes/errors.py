"""Errors of a partitioned run, as plain dicts that cross process and rank boundaries.

An LP that fails describes its exception with :func:`describe_error` (a
JSON-ready dict with a ``kind``); the launcher picks the error that explains
the run with :func:`pick_error` (the cause, not the LPs that were only told to
stop) and raises :func:`error_to_exception` of it, which the runner turns into
the cell's verdict: ``lookahead`` and ``scheduling`` are ``causality``,
``deadlock`` is ``deadlock``, ``unsaved-state`` is ``unsaved-state``,
anything else is ``crash``.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from typing import Any

from tickpar.kernel.eventq import Event, SchedulingError
from tickpar.plugins import DeadlockError, LookaheadError, UnsavedStateError

__all__ = ["Aborted", "PromiseError", "describe_error", "error_to_exception", "pick_error"]


class Aborted(Exception):
    """Another LP failed; this one stops (it reports no error of its own)."""


class PromiseError(LookaheadError):
    """A message below its sender's promise, or a promise that went backwards (verdict ``causality``).

    A conservative LP runs events up to what its inputs promised; a message
    below that promise could have been needed by an event already run.
    """


def describe_error(exc: BaseException, lp: int) -> dict[str, Any]:
    """``exc``, raised in LP ``lp``, as a JSON-ready dict: ``{"kind", "message", "lp", ...}``."""
    if isinstance(exc, LookaheadError):
        return {"kind": "lookahead", "message": str(exc), "lp": lp}
    if isinstance(exc, SchedulingError):
        return {
            "kind": "scheduling",
            "message": str(exc),
            "lp": lp,
            "op": exc.op,
            "event": exc.event.name,
            "when": exc.when,
            "cur_tick": exc.cur_tick,
            "reason": exc.reason,
        }
    if isinstance(exc, DeadlockError):
        return {"kind": "deadlock", "message": str(exc), "lp": lp}
    if isinstance(exc, UnsavedStateError):
        return {
            "kind": "unsaved-state",
            "message": str(exc),
            "lp": lp,
            "component": exc.component,
            "event": exc.event,
            "when": exc.when,
            "detail": exc.detail,
        }
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return {"kind": "crash", "message": f"LP {lp}: {type(exc).__name__}: {exc}{where}", "lp": lp}


_ERROR_RANK = {"lookahead": 0, "scheduling": 0, "unsaved-state": 0, "crash": 1, "deadlock": 2, "aborted": 3}


def pick_error(errors: Iterable[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The error that explains a failed run: the cause first (not the LPs that were only told to stop)."""
    found = [e for e in errors if e is not None]
    if not found:
        return None
    return min(found, key=lambda e: (_ERROR_RANK.get(e["kind"], 1), e.get("lp", 0)))


def error_to_exception(err: dict[str, Any]) -> BaseException:
    """The exception the strategy raises for an LP's error (the runner turns it into a verdict)."""
    kind = err["kind"]
    if kind == "lookahead":
        return LookaheadError(err["message"])
    if kind == "scheduling":
        return SchedulingError(err["op"], Event(name=err["event"]), err["when"], err["cur_tick"], err["reason"])
    if kind == "deadlock":
        return DeadlockError(err["message"])
    if kind == "unsaved-state":
        return UnsavedStateError(err["component"], err["event"], err["when"], err["detail"])
    return RuntimeError(err["message"])
