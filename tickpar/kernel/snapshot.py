"""A component's snapshot, for strategies that roll back: :meth:`Component.save`, ``restore`` and ``fingerprint``.

Kept beside :mod:`tickpar.kernel.model` so that the model API reads as the event path; nothing on that
path calls these.  What each field is and why: :meth:`tickpar.kernel.model.Component.save`; how a
value is saved: :mod:`tickpar.kernel.statesave`.
"""

from __future__ import annotations

from typing import Any

from tickpar.kernel import statesave

__all__ = ["fingerprint", "restore", "save"]


def save(component: Any) -> tuple[Any, ...]:
    """``component``'s kernel fields and its own state (:meth:`~tickpar.kernel.model.Component.save_state`)."""
    events = component.events
    return (
        component.when,
        component.count,
        component.digest,
        component._seq,
        statesave.save_rng(component.rng),
        -1 if component.trace is None else len(component.trace),
        [e.payload for e in events.values()] if events else None,
        component.save_state(),
    )


def restore(component: Any, saved: tuple[Any, ...]) -> None:
    """Put back a :func:`save` of ``component``."""
    when, count, digest, seq, rng, trace_len, payloads, own = saved
    component.when = when
    component.count = count
    component.digest = digest
    component._seq = seq
    statesave.restore_rng(component.rng, rng)
    if trace_len >= 0:
        del component.trace[trace_len:]
    if payloads is not None:
        for event, payload in zip(component.events.values(), payloads, strict=True):
            event.payload = payload
    component.restore_state(own)


def fingerprint(component: Any) -> dict[str, Any]:
    """Every attribute of ``component`` as comparable data (see :meth:`~tickpar.kernel.model.Component.fingerprint`)."""
    out: dict[str, Any] = {}
    for name, value in vars(component).items():
        if name == "trace":
            out[name] = -1 if value is None else len(value)
        elif name == "events":
            out[name] = tuple(
                (ev.name, statesave.fingerprint(ev.payload), ev.scheduled, ev.when if ev.scheduled else None)
                for ev in value.values()
            )
        elif name in ("model", "queue", "work", "_occupant"):
            continue
        else:
            out[name] = statesave.fingerprint(value)
    return out
