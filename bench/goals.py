"""The project's own speed goals for its kernel, judged from an engine benchmark record (bench/engine.py).

These are tickpar's internal targets (the pure kernel at SimPy's callback loop, the compiled one past it),
so they live here with the benchmark and not in the report. A goal is *met* when the whole 95% interval
of the ratio is at or above it, *not met* when all of it is below, *undecided* when the interval spans it.

    python bench/goals.py results/engine/engine.json
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tickpar.report.engine_bench import KERNEL_IMPLS, load

__all__ = ["GOALS", "Goal", "GoalResult", "goal_lines", "judge", "main"]


@dataclass(frozen=True)
class Goal:
    """tickpar with kernel ``kernel`` runs at least ``at_least`` x ``peer``'s events/s."""

    kernel: str
    peer: str
    at_least: float

    def describe(self) -> str:
        return f"{self.kernel} tickpar >= {self.at_least:g}x {self.peer}"


#: Issue #19 ("Kernel speed"): the pure kernel at SimPy's callback loop; the compiled one well past it
#: and at half a bare heapq loop.
GOALS: tuple[Goal, ...] = (
    Goal("pure", "simpy_callbacks", 1.0),
    Goal("compiled", "simpy_callbacks", 1.5),
    Goal("compiled", "heapq_bare", 0.5),
)


@dataclass(frozen=True)
class GoalResult:
    goal: Goal
    verdict: str
    """``met``, ``not met``, ``undecided`` (the interval spans the goal) or ``not judged``."""
    impl: str | None = None
    ratio: Mapping[str, float] | None = None
    why: str = ""

    def line(self) -> str:
        head = f"goal {self.goal.describe()}: "
        if self.ratio is None:
            return head + f"not judged ({self.why})"
        r = self.ratio
        return head + f"{self.verdict} ({self.impl}: {r['median']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}])"


def judge(record: Mapping[str, Any]) -> list[GoalResult]:
    """Each of :data:`GOALS`, judged from the record's ratios and their intervals."""
    impls = record.get("implementations") or {}
    out = []
    for goal in GOALS:
        impl = next(
            (n for n in KERNEL_IMPLS[goal.kernel] if n in impls and impls[n].get("kernel") == goal.kernel), None
        )
        if impl is None:
            ran = ", ".join(f"{n} ({impls[n].get('kernel')})" for n in impls if impls[n].get("kernel")) or "none"
            why = f"no {goal.kernel} kernel ran; tickpar implementations that ran: {ran}"
            if goal.kernel == "compiled" and "tickpar_compiled" in (record.get("skipped") or {}):
                why = f"tickpar_compiled: {record['skipped']['tickpar_compiled']}"
            out.append(GoalResult(goal, "not judged", why=why))
            continue
        ratio = (impls[impl].get("ratios") or {}).get(goal.peer)
        if not ratio or ratio.get("median") is None:
            why = f"{goal.peer} did not run"
            reason = (record.get("skipped") or {}).get(goal.peer) or (record.get("failed") or {}).get(goal.peer)
            out.append(GoalResult(goal, "not judged", impl, why=f"{why}: {reason}" if reason else why))
            continue
        lo, hi = float(ratio["lo"]), float(ratio["hi"])
        verdict = "met" if lo >= goal.at_least else "not met" if hi < goal.at_least else "undecided"
        out.append(GoalResult(goal, verdict, impl, {k: float(ratio[k]) for k in ("median", "lo", "hi")}))
    return out


def goal_lines(record: Mapping[str, Any]) -> list[str]:
    """One line per goal, then the rule the verdicts follow."""
    rule = "met: the whole interval is at or above the goal; not met: all of it below; undecided: it spans it"
    return [*(r.line() for r in judge(record)), f"({rule})"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python bench/goals.py RECORD``: the goals judged from a record (exit 2 when there is none)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python bench/goals.py results/engine/engine.json", file=sys.stderr)
        return 2
    record = load(args[0])
    if record is None:
        print(f"bench/goals.py: {args[0]}: no such file", file=sys.stderr)
        return 2
    print("\n".join(goal_lines(record)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
