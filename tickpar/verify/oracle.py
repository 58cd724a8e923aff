"""The oracle: what a run computed, and whether it equals the golden sequential run.

A run yields an :class:`OracleRecord`: per-component event counts and digests
(the ordered events the component processed, then its final state), one global
digest, the final tick, the scheduling violations the queues counted
(``checks=False``), the races the model detected, and optionally full traces.

:func:`compare` gives a cell exactly one verdict against the golden record
(same workload, params, seed and order mode):

=================  ==========================================================
``exact``          every component's digest equals the golden one
``diverged``       some digest differs; ``divergence`` names the first one
``causality``      an event was scheduled in the past (raised, counted, or a
                   lookahead violation); the event, its ``when`` and ``cur_tick``
``race``           two workers were inside one component at once
``unsaved-state``  a handler changed state its component's saved state leaves
                   out, found by rolling an event back (``optimistic`` with
                   ``rollback_check``): the component and the event are named
``deadlock``       the strategy stopped with work left and nobody able to run
``timeout``        the cell ran past its time limit
``crash``          the strategy raised anything else
=================  ==========================================================

Precedence when several apply: crash, timeout, deadlock (the run did not
finish), then unsaved-state and a raised causality error (the run stopped
there), then race, then diverged, then counted violations with digests that
happen to match (still ``causality``: the run scheduled in the past), then
exact.

Beside the verdict, :func:`errors` says *how far off* a finished run is: the
relative error against golden of the final tick, of the event count, and of
each statistic the workload declares (``record.statistics``, see
:meth:`tickpar.plugins.Workload.stats`): ``(got - golden) / |golden|``, signed
(the absolute difference when the golden value is 0).  An exact run has 0
everywhere; a ``diverged`` relaxed run keeps its verdict and its errors
measure the divergence.  A run that did not finish has no errors (``None``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tickpar.kernel.eventq import SchedulingError, Violation
from tickpar.kernel.model import Component, Model

__all__ = [
    "FAILED_RUN", "MISSING", "SEVERITY", "VERDICTS", "OracleRecord", "Verdict", "collect", "compare", "errors",
    "failure_record", "merge", "worst_verdict",
]  # fmt: skip

#: Every verdict, from best to worst (the one list: the report, timing and the tests import it).
VERDICTS = ("exact", "diverged", "causality", "race", "unsaved-state", "deadlock", "timeout", "crash")
#: The verdicts of a run that did not finish.
FAILED_RUN = ("crash", "timeout", "deadlock")
#: What tables show for a cell without a record.
MISSING = "missing"
#: Every verdict, then :data:`MISSING`: the ranking of :func:`worst_verdict`.
SEVERITY = (*VERDICTS, MISSING)


def worst_verdict(verdicts: Iterable[str]) -> str:
    """The worst of ``verdicts`` by :data:`SEVERITY` (an unknown name ranks as missing; none: missing)."""
    ranks = [SEVERITY.index(v) if v in SEVERITY else len(SEVERITY) - 1 for v in verdicts]
    return SEVERITY[max(ranks)] if ranks else MISSING


def component_digest(comp: Component, state: Any = None) -> str:
    """The component's event digest and final state (``state``: its ``state()``, if already taken), 16 hex digits."""
    text = repr((comp.count, comp.digest, comp.state() if state is None else state))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class OracleRecord:
    """What one run computed (JSON-ready through :meth:`to_dict`)."""

    events: int
    final_tick: int
    digest: str
    components: dict[str, dict[str, Any]]
    violations: list[dict[str, Any]] = field(default_factory=list)
    races: list[dict[str, Any]] = field(default_factory=list)
    traces: dict[str, list[list[Any]]] | None = None
    failure: dict[str, Any] | None = None
    """Set when the run did not finish: ``{"kind": crash|timeout|deadlock|causality, ...}``."""
    anatomy: list[dict[str, Any]] | None = None
    """How a non-exact verdict came about (:mod:`tickpar.verify.anatomy`): steps ``{worker, step, event, when,
    cur_tick, note}`` ending at the failing operation; ``None`` until explained."""
    statistics: dict[str, float] = field(default_factory=dict)
    """The workload's declared statistics of this run (not part of any digest); set by the runner."""

    def to_dict(self, with_traces: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not with_traces:
            out.pop("traces")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OracleRecord:
        return cls(
            events=data["events"],
            final_tick=data["final_tick"],
            digest=data["digest"],
            components=data["components"],
            violations=data.get("violations", []),
            races=data.get("races", []),
            traces=data.get("traces"),
            failure=data.get("failure"),
            anatomy=data.get("anatomy"),
            statistics=dict(data.get("statistics") or {}),
        )


def global_digest(components: dict[str, dict[str, Any]]) -> str:
    """One digest over every component's (name, count, digest), in name order."""
    h = hashlib.sha256()
    for name in sorted(components):
        entry = components[name]
        h.update(f"{name}:{entry['count']}:{entry['digest']};".encode())
    return h.hexdigest()[:16]


def _violation_dict(v: Violation) -> dict[str, Any]:
    return {"op": v.op, "event": v.event, "when": v.when, "cur_tick": v.cur_tick, "reason": v.reason}


def _plain(value: Any) -> Any:
    """A state value as JSON keeps it (tuples as lists), so a record equals itself after a round trip."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def collect(
    model: Model,
    components: Iterable[Component] | None = None,
    violations: Iterable[Violation] = (),
) -> OracleRecord:
    """The record of ``components`` (default: all) after a run."""
    comps = list(model.components if components is None else components)
    entries: dict[str, dict[str, Any]] = {}
    traces: dict[str, list[list[Any]]] | None = {} if model.trace else None
    final_tick = 0
    events = 0
    for comp in comps:
        state = comp.state()
        entries[comp.name] = {
            "id": comp.id,
            "count": comp.count,
            "digest": component_digest(comp, state),
            "last_tick": comp.when if comp.count else None,
            "state": _plain(state),
        }
        events += comp.count
        if comp.count:
            final_tick = max(final_tick, comp.when)
        if traces is not None and comp.trace is not None:
            traces[comp.name] = [list(t) for t in comp.trace]
    return OracleRecord(
        events=events,
        final_tick=final_tick,
        digest=global_digest(entries),
        components=entries,
        violations=[_violation_dict(v) for v in violations],
        races=[asdict(r) for r in model.races],
        traces=traces,
    )


def merge(records: Sequence[OracleRecord]) -> OracleRecord:
    """Join the records of disjoint partitions (LPs, ranks) into one."""
    entries: dict[str, dict[str, Any]] = {}
    traces: dict[str, list[list[Any]]] | None = {} if all(r.traces is not None for r in records) else None
    violations: list[dict[str, Any]] = []
    races: list[dict[str, Any]] = []
    failure = None
    for rec in records:
        overlap = set(entries) & set(rec.components)
        if overlap:
            raise ValueError(f"component {sorted(overlap)[0]} appears in two partitions")
        entries.update(rec.components)
        if traces is not None and rec.traces is not None:
            traces.update(rec.traces)
        violations.extend(rec.violations)
        races.extend(rec.races)
        failure = failure or rec.failure
    return OracleRecord(
        events=sum(r.events for r in records),
        final_tick=max((r.final_tick for r in records), default=0),
        digest=global_digest(entries),
        components=entries,
        violations=violations,
        races=races,
        traces=traces,
        failure=failure,
    )


def failure_record(kind: str, message: str, **detail: Any) -> OracleRecord:
    """The record of a run that did not finish (crash, timeout, deadlock, raised causality)."""
    return OracleRecord(
        events=0, final_tick=0, digest="", components={}, failure={"kind": kind, "message": message, **detail}
    )


def causality_failure(err: SchedulingError, partial: OracleRecord | None = None) -> OracleRecord:
    """The record of a run stopped by a raised :class:`SchedulingError`.

    ``partial``: what the run processed before it stopped (events, final tick);
    by default the ``partial`` record a strategy attached to the error, if any.
    """
    partial = partial or getattr(err, "partial", None)
    detail = {
        "kind": "causality",
        "message": str(err),
        "op": err.op,
        "event": err.event.name,
        "when": err.when,
        "cur_tick": err.cur_tick,
        "reason": err.reason,
    }
    rec = partial or failure_record("causality", str(err))
    rec.failure = detail
    return rec


@dataclass(frozen=True)
class Verdict:
    """One cell's verdict: ``kind`` is one of :data:`VERDICTS`."""

    kind: str
    reason: str
    divergence: dict[str, Any] | None = None
    errors: dict[str, float | None] | None = None
    """Relative errors against golden (see :func:`errors`); ``None`` when the run did not finish."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "divergence": self.divergence, "errors": self.errors}


def relative_error(got: float, golden: float) -> float:
    """``(got - golden) / |golden|``; the plain difference when golden is 0 (so equal values give 0)."""
    return (got - golden) / abs(golden) if golden else float(got - golden)


def errors(golden: OracleRecord, got: OracleRecord) -> dict[str, float | None] | None:
    """Relative errors of ``got`` against ``golden``: ``final_tick``, ``events``, then each golden statistic.

    ``None`` when ``got`` did not finish; a statistic missing from ``got`` has
    error ``None``.  Keys ``final_tick`` and ``events`` come first, then the
    statistics in the order the workload declares them.
    """
    if got.failure is not None:
        return None
    out: dict[str, float | None] = {
        "final_tick": relative_error(got.final_tick, golden.final_tick),
        "events": relative_error(got.events, golden.events),
    }
    for name, expected in golden.statistics.items():
        value = got.statistics.get(name)
        out[name] = None if value is None else relative_error(value, expected)
    return out


def first_divergence(golden: OracleRecord, got: OracleRecord) -> dict[str, Any] | None:
    """The earliest differing component entry: component, index, expected vs got.

    With traces on both sides, the component whose first differing event has
    the smallest golden tick wins, and the event itself is reported; without
    traces, the first differing component in id order is named.
    """
    differing = [
        name
        for name in sorted(set(golden.components) | set(got.components))
        if golden.components.get(name, {}).get("digest") != got.components.get(name, {}).get("digest")
    ]
    if not differing:
        return None
    if golden.traces is not None and got.traces is not None:
        best: dict[str, Any] | None = None
        for name in differing:
            exp = golden.traces.get(name, [])
            act = got.traces.get(name, [])
            index = next((i for i, (a, b) in enumerate(zip(exp, act, strict=False)) if list(a) != list(b)), None)
            if index is None:
                if len(exp) == len(act):
                    # Same events, different final state (a race or a direct call's effect).
                    index, e, g = len(exp), "final state", "final state differs"
                else:
                    index = min(len(exp), len(act))
                    e = exp[index] if index < len(exp) else "<end: no more events>"
                    g = act[index] if index < len(act) else "<end: no more events>"
            else:
                e, g = exp[index], act[index]
            tick = e[0] if isinstance(e, list) else (exp[-1][0] if exp else 0)
            cand = {"component": name, "index": index, "expected": e, "got": g, "tick": tick}
            if best is None or tick < best["tick"]:
                best = cand
        assert best is not None
        return best
    ids = {name: (golden.components.get(name) or got.components.get(name) or {}).get("id", 0) for name in differing}
    name = min(differing, key=lambda n: ids[n])
    g_entry = golden.components.get(name, {})
    a_entry = got.components.get(name, {})
    return {
        "component": name,
        "index": None,
        "expected": {"count": g_entry.get("count"), "digest": g_entry.get("digest")},
        "got": {"count": a_entry.get("count"), "digest": a_entry.get("digest")},
    }


def _describe_divergence(div: dict[str, Any]) -> str:
    if div.get("index") is None:
        return f"{div['component']}: expected {div['expected']}, got {div['got']}"
    return f"{div['component']} event #{div['index']}: expected {div['expected']}, got {div['got']}"


def compare(golden: OracleRecord, got: OracleRecord) -> Verdict:
    """The verdict of ``got`` against ``golden`` (see the module docstring for precedence)."""
    if golden.failure is not None:
        raise ValueError(f"golden run did not finish: {golden.failure.get('message')}")
    failure = got.failure
    if failure is not None:
        kind = failure.get("kind", "crash")
        if kind not in VERDICTS:
            kind = "crash"
        return Verdict(kind, failure.get("message", kind), None)
    errs = errors(golden, got)
    if got.races:
        race = got.races[0]
        return Verdict(
            "race",
            f"{len(got.races)} race(s); first in {race['component']} at tick {race['when']}: {race['detail']}",
            first_divergence(golden, got),
            errs,
        )
    divergence = first_divergence(golden, got)
    note = ""
    if got.violations:
        v = got.violations[0]
        note = (
            f" ({len(got.violations)} scheduling violation(s) counted; first: "
            f"{v['op']}({v['event']}, when={v['when']}) with cur_tick={v['cur_tick']})"
        )
    if divergence is not None:
        return Verdict("diverged", "first divergence: " + _describe_divergence(divergence) + note, divergence, errs)
    if got.violations:
        return Verdict("causality", "digests match but" + note.replace(" (", " ", 1).rstrip(")"), None, errs)
    reason = f"all {len(golden.components)} component digests match ({golden.events} events)"
    return Verdict("exact", reason, None, errs)
