"""Shrink a failing cell: the smallest cell that still fails with the same verdict kind.

Delta debugging over what a cell is made of, within a time budget:

* **size** is ``(components, events)`` of the cell's golden sequential run:
  fewer components first, then fewer events;
* **moves** lower one integer workload parameter within its declared range
  (its minimum first, then a bisection between the minimum and the current
  value), flip one boolean parameter, lower the worker count (not below 2
  when the cell has more), and, for a strategy with an ``interleave_seed``
  option, try a few seeds for each candidate (a smaller model may fail under
  another interleaving);
* a candidate is **kept** when it still gets the original verdict kind and is
  strictly smaller; candidates the workload refuses (``check_params``) are
  skipped.  Passes repeat until one keeps nothing or the budget is spent;
  then parameters that differ from their defaults are reset to the default
  where the cell still fails and is no bigger (a shorter command line).

The result prints as a runnable ``tickpar check`` command (:func:`command`).
Every candidate is a complete ``check_cell`` run: a shrink takes
``budget_s`` seconds at most, plus the one candidate running when it ends.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from tickpar.kernel.params import ParamError
from tickpar.pipeline.sweep import format_value
from tickpar.plugins import BASELINE
from tickpar.plugins.registry import PluginError, get_registry
from tickpar.runner import Cell, Outcome, check_cell, execute, resolve_cell
from tickpar.verify.oracle import Verdict

__all__ = ["SEEDS_PER_CANDIDATE", "ShrinkResult", "command", "shrink"]

SEEDS_PER_CANDIDATE = 4
"""Interleave seeds tried for a candidate that does not fail under the current one."""


@dataclass
class ShrinkResult:
    """A shrink's outcome: the smallest failing cell found, its verdict and how the search went."""

    original: Cell
    cell: Cell
    verdict: Verdict
    outcome: Outcome
    size_before: tuple[int, int]
    size: tuple[int, int]
    tries: int
    elapsed_s: float
    exhausted: bool
    """True when no move kept anything (a local minimum); False when the budget ran out first."""
    steps: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "original": self.original.to_dict(),
            "cell": self.cell.to_dict(),
            "command": command(self.cell),
            "verdict": self.verdict.to_dict(),
            "size_before": {"components": self.size_before[0], "events": self.size_before[1]},
            "size": {"components": self.size[0], "events": self.size[1]},
            "tries": self.tries,
            "elapsed_s": self.elapsed_s,
            "exhausted": self.exhausted,
            "steps": list(self.steps),
        }


def command(cell: Cell) -> str:
    """``tickpar check ...`` for ``cell``: parameters and options that differ from their defaults."""
    registry = get_registry()
    wparams = registry.workload(cell.spec.workload).params
    soptions = registry.strategy(cell.strategy).options
    args = ["tickpar", "check", "-w", cell.spec.workload]
    for key, value in cell.spec.params.items():
        if key not in wparams or value != wparams[key].default:
            args += ["-p", f"{key}={format_value(value)}"]
    args += ["-s", cell.strategy]
    for key, value in cell.options.items():
        if key not in soptions or value != soptions[key].default:
            args += ["-o", f"{key}={format_value(value)}"]
    args += ["-n", str(cell.workers), "--seed", str(cell.spec.seed)]
    if cell.spec.order != "gem5":
        args += ["--order", cell.spec.order]
    if cell.spec.work != "none":
        args += ["--work", cell.spec.work]
    return shlex.join(args)


class _Search:
    """The candidates tried so far, the budget, and the current best cell."""

    def __init__(self, cell: Cell, kind: str, budget_s: float, log: Callable[[str], None] | None) -> None:
        self.kind = kind
        self.deadline = time.monotonic() + budget_s
        self.tries = 0
        self.seen: dict[str, tuple[Verdict, Outcome, tuple[int, int]] | None] = {}
        self.log = log
        self.steps: list[str] = []
        self.best = cell
        found = self.run(cell)
        if found is None:
            raise ValueError(f"the cell does not fail with {kind} when run again: nothing to shrink")
        self.verdict, self.outcome, self.size = found

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def run(self, cell: Cell) -> tuple[Verdict, Outcome, tuple[int, int]] | None:
        """Check ``cell``: its verdict, outcome and golden size when it fails with the wanted kind."""
        key = repr(cell.to_dict())
        if key in self.seen:
            return self.seen[key]
        self.tries += 1
        golden_cell = Cell(cell.spec.with_trace(True), BASELINE, {"checks": True}, 1)

        golden = execute(golden_cell).record
        result = None
        if golden.failure is None:
            verdict, outcome = check_cell(cell, golden)
            if verdict.kind == self.kind:
                result = (verdict, outcome, (len(golden.components), golden.events))
        self.seen[key] = result
        return result

    def try_cell(self, cell: Cell, what: str, allow_equal: bool = False) -> bool:
        """Keep ``cell`` (under some interleave seed) if it fails the same way and is smaller."""
        for candidate in _with_seeds(cell):
            if self.out_of_time():
                return False
            found = self.run(candidate)
            if found is None:
                continue
            size = found[2]
            if size < self.size or (allow_equal and size <= self.size):
                self.best, (self.verdict, self.outcome, self.size) = candidate, found
                self.steps.append(f"{what}: {size[0]} components, {size[1]} events")
                if self.log is not None:
                    self.log(self.steps[-1])
                return True
        return False


def _with_seeds(cell: Cell) -> Iterator[Cell]:
    """``cell``, then the same cell under other interleave seeds (strategies that have them)."""
    yield cell
    if "interleave_seed" not in get_registry().strategy(cell.strategy).options:
        return
    if cell.options.get("executor", "interleave") != "interleave":
        return
    current = cell.options.get("interleave_seed", 0)
    for seed in range(SEEDS_PER_CANDIDATE):
        if seed != current:
            yield replace(cell, options={**cell.options, "interleave_seed": seed})


def _with_param(cell: Cell, key: str, value: Any) -> Cell | None:
    """``cell`` with one workload parameter changed, or ``None`` when the workload refuses it."""
    return _rebuild(cell, {**cell.spec.params, key: value}, cell.workers)


def _rebuild(cell: Cell, params: dict[str, Any], workers: int) -> Cell | None:
    spec = cell.spec
    try:
        return resolve_cell(
            spec.workload, params, cell.strategy, dict(cell.options), workers, spec.seed, spec.order, spec.work
        )
    except (ParamError, PluginError):
        return None


def _lower_int(search: _Search, key: str, minimum: int) -> bool:
    """Lower integer parameter ``key``: its minimum, else bisect between the minimum and the current value."""
    kept = False
    lo = minimum
    while not search.out_of_time():
        current = search.best.spec.params[key]
        if lo >= current:
            break
        mid = lo if lo == minimum and not kept else (lo + current) // 2
        candidate = _with_param(search.best, key, mid)
        if candidate is not None and search.try_cell(candidate, f"{key}={mid}"):
            kept = True
            continue
        if mid == lo and lo == minimum:
            lo = minimum + 1  # the minimum itself did not fail: bisect above it
            continue
        lo = mid + 1
    return kept


def shrink(
    cell: Cell, budget_s: float = 20.0, kind: str | None = None, log: Callable[[str], None] | None = None
) -> ShrinkResult:
    """Shrink ``cell`` (which must fail, with ``kind`` if given) within ``budget_s`` seconds."""
    started = time.monotonic()
    if kind is None:
        verdict, _ = check_cell(cell)
        if verdict.kind == "exact":
            raise ValueError("the cell is exact: nothing to shrink")
        kind = verdict.kind
    search = _Search(cell, kind, budget_s, log)
    size_before = search.size
    params = get_registry().workload(cell.spec.workload).params
    exhausted = False
    while not search.out_of_time():
        kept = False
        if search.best.workers > 2:
            candidate = _rebuild(search.best, dict(search.best.spec.params), 2)
            kept |= candidate is not None and search.try_cell(candidate, "workers=2")
        for key, param in params.items():
            if search.out_of_time():
                break
            value = search.best.spec.params.get(key)
            if param.type is int and param.min is not None and value is not None and value > param.min:
                kept |= _lower_int(search, key, int(param.min))
            elif param.type is bool and value is not None:
                candidate = _with_param(search.best, key, not value)
                kept |= candidate is not None and search.try_cell(candidate, f"{key}={not value}")
        if not kept:
            exhausted = not search.out_of_time()
            break
    for key, param in params.items():  # shorter command: defaults back where they change nothing
        if search.out_of_time():
            break
        if search.best.spec.params.get(key) != param.default:
            candidate = _with_param(search.best, key, param.default)
            if candidate is not None:
                search.try_cell(candidate, f"{key} back to its default", allow_equal=True)
    return ShrinkResult(
        original=cell,
        cell=search.best,
        verdict=search.verdict,
        outcome=search.outcome,
        size_before=size_before,
        size=search.size,
        tries=search.tries,
        elapsed_s=time.monotonic() - started,
        exhausted=exhausted,
        steps=search.steps,
    )
