"""A gem5 run's own host cost per event, from its ``stats.txt`` (issue #44).

gem5 writes its statistics as sections between ``---------- Begin Simulation Statistics ----------``
and ``---------- End Simulation Statistics   ----------``, one per dump (``m5.stats.dump()``, the
end of the run).  :func:`read_stats` reads the global scalars of the **first** dump: ``simTicks``,
``simFreq``, ``simSeconds``, ``hostSeconds`` and ``hostTickRate``.  The first dump is the one of a
run that dumps once, at its end; of a run that dumps several times it covers the ticks from the
start (or the last reset) to the first dump, and the cost carries a warning saying so.

The host time is ``simTicks / hostTickRate``: gem5 prints ``hostTickRate`` with about nine digits and
``hostSeconds`` to two decimals only, too coarse for runs of a fraction of a second.  Only when ``hostTickRate``
is missing or 0 is ``hostSeconds`` used, with a warning.  The cost per event is that host time over
the events the trace replays (:attr:`~tickpar.gem5.importer.ImportedTrace.events` of the *whole*
trace, not of a prefix: the host time covers the whole run).

**Traced or untraced** (:func:`stats_kind`).  Tracing inflates gem5's host time severalfold
(docs/measurements/2026-12-06-code-comments.md), so the stats of an untraced run of the same
configuration are the ones to use.  Neither file says which it is, so the rule goes by the file's
name and place, in this order:

1. a file name that contains ``untraced`` (any case) is an untraced run's;
2. a file that is the trace's own run is a traced run's, and the cost warns that tracing inflates
   it: ``stats.txt`` (or ``stats.txt.gz``) in the trace's directory (gem5's ``-d OUT`` layout writes
   both there), or ``STEM.stats.txt`` (``.gz``) beside a trace named ``STEM.<anything>``;
3. anything else is taken as given: ``unknown (assumed untraced)``, with a warning.

**Weights** (:func:`load_weights`).  A weights file splits the run's mean unevenly over its
components: ``REGEX -> WEIGHT`` per line, ``#`` comments and blank lines skipped, the first regex
that matches the component's name (``re.search``) wins, an unmatched component weighs 1.0 and every
weight is a number > 0.  Component ``c`` with ``n_c`` events and weight ``w_c`` costs
``mean * w_c * N / sum(n_c * w_c)``, so the run's total (and mean) stays the run's.

Bad input is one line, a :class:`StatsError` (a :class:`ValueError`) naming the file (and line) and
what was expected.
"""

from __future__ import annotations

import gzip
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tickpar.gem5.importer import ImportedTrace, import_trace

__all__ = [
    "BEGIN_MARK",
    "EventCost",
    "HostStats",
    "StatsError",
    "WeightRule",
    "component_events",
    "event_cost",
    "load_weights",
    "read_stats",
    "run_event_cost",
    "stats_kind",
]

BEGIN_MARK = "---------- Begin Simulation Statistics ----------"
_END_MARK = "---------- End Simulation Statistics"
_HEADER_LINES = 100  # lines before the first dump's mark (gem5 writes one blank line)
_KEYS = ("simSeconds", "simTicks", "simFreq", "hostSeconds", "hostTickRate")
#: How far the trace's span may differ from the dump's ``simTicks`` before the cost warns that the host time
#: is not the trace's (a ``--debug-start``/``--debug-end`` window, a prefix, stats reset mid-run).
SPAN_TOLERANCE = 0.1
KINDS = {
    "untraced": "untraced run",
    "traced": "traced run: tracing inflates host time",
    "unknown": "unknown (assumed untraced)",
}


class StatsError(ValueError):
    """A stats or weights file that cannot give a cost (the message is one line naming the file)."""


# -- stats.txt --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HostStats:
    """The global scalars of a stats file's first dump (``None``: not in the file)."""

    path: str
    sim_ticks: int
    sim_freq: float
    sim_seconds: float | None
    host_seconds: float | None
    host_tick_rate: float | None
    dumps: int

    def host_time(self) -> tuple[float, str]:
        """``(seconds, how)``: ``simTicks / hostTickRate``, else ``hostSeconds`` (:class:`StatsError` if 0)."""
        if self.host_tick_rate:
            return self.sim_ticks / self.host_tick_rate, "simTicks/hostTickRate"
        if self.host_seconds:
            return self.host_seconds, "hostSeconds"
        raise StatsError(
            f"{self.path}: hostTickRate and hostSeconds are missing or 0: expected a run's host time"
        )


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="strict")
    return path.open(encoding="utf-8", errors="strict")


def _lines(path: Path, expected: str = "a gem5 stats.txt") -> Iterator[str]:
    """The file's lines, streamed; a missing or unreadable file is a :class:`StatsError`."""
    try:
        with _open_text(path) as fh:
            yield from fh
    except FileNotFoundError:
        raise StatsError(f"{path}: no such file: expected {expected}") from None
    except IsADirectoryError:
        raise StatsError(f"{path}: a directory: expected {expected}") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # a corrupt .gz, a binary file, no permission
        raise StatsError(f"{path}: the file cannot be read ({exc}): expected {expected}") from None


def _number(path: Path, key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise StatsError(f"{path}: {key} {text!r} is not a number: expected gem5's '{key} VALUE # ...'") from None
    if not math.isfinite(value) or value < 0:
        raise StatsError(f"{path}: {key} {text!r} is not allowed: a finite number >= 0")
    return value


def read_stats(path: str | Path) -> HostStats:
    """The first dump's global scalars of gem5 stats file ``path`` (plain or ``.gz``; see the module docstring)."""
    p = Path(path)
    found: dict[str, float] = {}
    dumps = 0
    inside = False
    for number, line in enumerate(_lines(p), start=1):
        if not dumps and number > _HEADER_LINES:  # gem5 opens the file with it: this is something else
            break
        if line.startswith(BEGIN_MARK):
            dumps += 1
            inside = dumps == 1
            continue
        if inside:
            if line.startswith(_END_MARK):
                inside = False
                continue
            parts = line.split(None, 2)
            if len(parts) >= 2 and parts[0] in _KEYS and parts[0] not in found:
                found[parts[0]] = _number(p, parts[0], parts[1])
    if not dumps:
        raise StatsError(f"{p}: no '{BEGIN_MARK}' line at its start: expected a gem5 stats.txt")
    missing = [k for k in ("simTicks", "simFreq") if k not in found]
    if "hostTickRate" not in found and "hostSeconds" not in found:
        missing.append("hostTickRate (or hostSeconds)")
    if missing:
        raise StatsError(f"{p}: the first dump has no {', '.join(missing)}: expected gem5's global statistics")
    return HostStats(
        path=str(p),
        sim_ticks=int(found["simTicks"]),
        sim_freq=found["simFreq"],
        sim_seconds=found.get("simSeconds"),
        host_seconds=found.get("hostSeconds"),
        host_tick_rate=found.get("hostTickRate"),
        dumps=dumps,
    )


# -- traced or untraced -------------------------------------------------------------------------------
def _stats_stem(name: str) -> str | None:
    """``STEM`` of ``STEM.stats.txt`` / ``STEM.stats.txt.gz`` (``""`` for gem5's own ``stats.txt``), else ``None``."""
    base = name[:-3] if name.endswith(".gz") else name
    if base == "stats.txt":
        return ""
    if base.endswith(".stats.txt"):
        return base[: -len(".stats.txt")]
    return None


def stats_kind(stats_path: str | Path, trace_path: str | Path) -> tuple[str, str]:
    """``(kind, why)``: whether ``stats_path`` is of an ``untraced`` or the ``traced`` run of ``trace_path``,
    or ``unknown``; the rule is the module docstring's (names and places only, never the contents)."""
    stats, trace = Path(stats_path), Path(trace_path)
    if "untraced" in stats.name.lower():
        return "untraced", f"its name {stats.name!r} says untraced"
    stem = _stats_stem(stats.name)
    if stem is not None and stats.resolve().parent == trace.resolve().parent:
        if stem == "":
            return "traced", f"{stats.name} beside the trace is the traced run's own (gem5's -d OUT layout)"
        if trace.name.startswith(stem + "."):
            return "traced", f"{stats.name} beside {trace.name} is the traced run's own"
    return "unknown", f"{stats.name}: neither named untraced nor the trace's own stats"


# -- weights ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WeightRule:
    """One ``REGEX -> WEIGHT`` line of a weights file."""

    pattern: re.Pattern[str]
    weight: float
    line: int


def load_weights(path: str | Path) -> list[WeightRule]:
    """The rules of weights file ``path`` in file order; a bad line is a :class:`StatsError` ``FILE:LINE: ...``."""
    p = Path(path)
    rules: list[WeightRule] = []
    for number, raw in enumerate(_lines(p, "a weights file, 'REGEX -> WEIGHT' per line"), start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        regex, arrow, value = text.rpartition("->")
        regex, value = regex.strip(), value.strip()
        if not arrow or not regex or not value:
            raise StatsError(f"{p}:{number}: expected 'REGEX -> WEIGHT'")
        try:
            weight = float(value)
        except ValueError:
            weight = math.nan
        if not (math.isfinite(weight) and weight > 0):
            raise StatsError(f"{p}:{number}: weight {value!r} is not allowed: a number > 0")
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise StatsError(f"{p}:{number}: bad regex {regex!r}: {exc}") from None
        rules.append(WeightRule(pattern, weight, number))
    return rules


def _weight(rules: list[WeightRule], component: str) -> tuple[float, WeightRule | None]:
    for rule in rules:
        if rule.pattern.search(component):
            return rule.weight, rule
    return 1.0, None


# -- the cost -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EventCost:
    """The host cost per event that a replay spends and a profile weights its events by.

    ``mean_us``: the run's host time over its events; ``per_component_us``: each component's share
    under the weights (``None`` without weights: every event costs ``mean_us``); ``source``: the stats
    file; ``kind``: ``untraced``, ``traced`` or ``unknown`` (:func:`stats_kind`); ``host_s`` and
    ``host_time_from`` (``simTicks/hostTickRate`` or ``hostSeconds``); ``events``: the trace's replayed
    events the host time is spread over; ``weights``: the weights file, if any.
    """

    mean_us: float
    per_component_us: dict[str, float] | None
    source: str
    kind: str
    host_s: float
    host_time_from: str
    events: int
    sim_ticks: int
    weights: str | None = None
    kind_reason: str = ""
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def cost_us(self, component: str) -> float:
        """The cost of one event of ``component``, microseconds."""
        if self.per_component_us is None:
            return self.mean_us
        return self.per_component_us.get(component, self.mean_us)

    def describe(self) -> str:
        """One line: which cost, from where, and whether the run was traced."""
        line = (
            f"{self.mean_us:.3g} us/event: host time {self.host_s:.3g} s ({self.host_time_from}) of "
            f"{Path(self.source).name} over {self.events:,} events ({KINDS[self.kind]})"
        )
        if self.per_component_us:
            lo, hi = min(self.per_component_us.values()), max(self.per_component_us.values())
            line += f"; per component {lo:.3g}..{hi:.3g} us by the weights in {Path(self.weights or '').name}"
        return line

    def to_json(self) -> dict[str, Any]:
        """The record that a page or JSON showing a result on the trace carries (which cost, from where)."""
        return {
            "description": self.describe(),
            "mean_us": self.mean_us,
            "per_component_us": self.per_component_us,
            "source": self.source,
            "kind": self.kind,
            "kind_reason": self.kind_reason,
            "host_s": self.host_s,
            "host_time_from": self.host_time_from,
            "events": self.events,
            "sim_ticks": self.sim_ticks,
            "weights": self.weights,
            "warnings": list(self.warnings),
        }


def component_events(trace: ImportedTrace) -> dict[str, int]:
    """Replayed events per component name (only components with events)."""
    counts: dict[str, int] = {}
    names = trace.components
    for k in trace.served():
        name = names[trace.inst_comp(trace.occ_inst[k])]
        counts[name] = counts.get(name, 0) + 1
    return counts


def _spread(mean_us: float, counts: Mapping[str, int], weight: Mapping[str, float]) -> dict[str, float]:
    """Each component's cost: ``mean * w_c * N / sum(n_c * w_c)`` (the total stays ``mean * N``)."""
    total = sum(counts.values())
    weighted = sum(n * weight[c] for c, n in counts.items())
    scale = mean_us * total / weighted
    return {c: weight[c] * scale for c in weight}


def event_cost(
    stats_path: str | Path, trace: ImportedTrace, weights_path: str | Path | None = None
) -> EventCost:
    """The cost per event of the run that ``stats_path`` describes, spread over the *whole* trace ``trace``.

    ``weights_path``: the weights file (module docstring) that splits the mean over the components.
    """
    stats = read_stats(stats_path)
    host_s, how = stats.host_time()
    counts = component_events(trace)
    events = sum(counts.values())
    if not events:
        raise StatsError(f"{trace.path}: the trace replays no events: no cost per event from {stats.path}")
    warnings: list[str] = []
    kind, why = stats_kind(stats_path, trace.path)
    if kind == "traced":
        warnings.append(
            f"{stats.path} is the traced run's own stats: tracing inflates host time, so this cost per event is "
            "too high; give an untraced run's stats of the same configuration (a file name with 'untraced')"
        )
    elif kind == "unknown":
        warnings.append(f"{stats.path}: cannot tell whether the run was traced ({why}): assumed untraced")
    if how == "hostSeconds":
        warnings.append(f"{stats.path}: hostTickRate is missing or 0: host time from hostSeconds (2 decimals)")
    if stats.dumps > 1:
        warnings.append(f"{stats.path}: {stats.dumps} dumps: the first one's host time is used")
    span = trace.end_tick - trace.first_tick
    if stats.sim_ticks and abs(span - stats.sim_ticks) > SPAN_TOLERANCE * stats.sim_ticks:
        warnings.append(
            f"the trace spans {span:,} ticks, {stats.path}'s first dump {stats.sim_ticks:,} (simTicks): "
            "the host time is not the traced events' own"
        )
    mean_us = host_s * 1e6 / events
    per_component: dict[str, float] | None = None
    if weights_path:
        rules = load_weights(weights_path)
        weight: dict[str, float] = {}
        used: set[int] = set()
        for name in trace.components:
            w, rule = _weight(rules, name)
            weight[name] = w
            if rule is not None and name in counts:
                used.add(rule.line)
        warnings.extend(
            f"{weights_path}:{r.line}: {r.pattern.pattern!r} matches no component with events"
            for r in rules
            if r.line not in used
        )
        per_component = _spread(mean_us, counts, weight)
    return EventCost(
        mean_us=mean_us,
        per_component_us=per_component,
        source=stats.path,
        kind=kind,
        host_s=host_s,
        host_time_from=how,
        events=events,
        sim_ticks=stats.sim_ticks,
        weights=str(weights_path) if weights_path else None,
        kind_reason=why,
        warnings=tuple(warnings),
    )


def run_event_cost(
    stats_path: str | Path,
    trace: ImportedTrace,
    weights_path: str | Path | None = None,
    *,
    fmt: str = "auto",
    components: str | Path | None = None,
    events: int = 0,
) -> EventCost:
    """:func:`event_cost` for ``trace`` imported with ``events`` (> 0: a prefix): a prefix is imported again
    whole (``fmt``, ``components``), since the stats' host time is the whole run's."""
    whole = trace if not events else import_trace(trace.path, fmt, components)
    return event_cost(stats_path, whole, weights_path)
