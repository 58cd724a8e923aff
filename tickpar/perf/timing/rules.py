"""The timing driver's rules: which rounds are contended, unstable or slow, and the statistics of a cell.

Pure functions of a record's rounds (no processes started), so each rule is tested on its own; the
driver (:mod:`tickpar.perf.timing.driver`) applies them.  :mod:`tickpar.perf.timing` explains why each rule.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

__all__ = [
    "BASELINE_MAX_SPREAD",
    "MAX_ROUND_SHIFT",
    "MIN_CPU_AVAILABLE",
    "RETIMES",
    "RETIME_WAIT_S",
    "judged_for_slow_processes",
    "slow_rounds",
    "summarize",
]
#: A round is contended when the CPU-availability probe before or after it gives less than this.
MIN_CPU_AVAILABLE = 0.9
#: A contended round is timed again, up to this many times per cell, before its values are lost.
RETIMES = 2
#: Seconds to wait before re-timing a contended round (a short burst of other load has passed).
RETIME_WAIT_S = 1.0
#: A sequential round whose loop values spread more than this (max / min - 1) is contended (module docstring).
BASELINE_MAX_SPREAD = 0.2
#: A round all of whose loop values exceed every loop value of the cell's fastest round by more than this share
#: was a slow process: it is left out (module docstring, :func:`slow_rounds`).
MAX_ROUND_SHIFT = 0.15


# ---------------------------------------------------------------- the driver


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """Mean, stdev (None below 2 values), median, min and max of pyperf values (seconds)."""
    vals = [float(v) for v in values]
    if not vals:
        return {"n_values": 0, "mean_s": None, "stdev_s": None, "median_s": None, "min_s": None, "max_s": None}
    return {
        "n_values": len(vals),
        "mean_s": statistics.fmean(vals),
        "stdev_s": statistics.stdev(vals) if len(vals) >= 2 else None,
        "median_s": statistics.median(vals),
        "min_s": min(vals),
        "max_s": max(vals),
    }


def judged_for_slow_processes(cell: Any) -> bool:
    """Whether the slow-process rule (:func:`slow_rounds`) applies to ``cell``: where each process runs one
    thread of simulation (one worker, or Python LPs in processes or MPI ranks), so that its speed is the
    machine's.  Threads are not judged: under the GIL two threads' hand-offs settle into a pattern per
    process, which is the strategy's own behaviour, and the rule would keep only the lucky processes."""
    if int(cell.workers) <= 1:
        return True
    return cell.engine == "python" and str(dict(cell.options).get("backend")) in ("processes", "mpi")


def _fastest_round(rounds: Sequence[dict[str, Any]]) -> tuple[int, list[float]] | None:
    """The round with the least mean loop value, contended ones included (contention only adds time), slow
    processes already found left out; ``None`` when no round has values."""
    timed = [(i, r["loop_values"]) for i, r in enumerate(rounds) if r["loop_values"] and not r.get("slow")]
    return min(timed, key=lambda item: statistics.fmean(item[1])) if timed else None


def slow_rounds(rounds: Sequence[dict[str, Any]], max_shift: float = MAX_ROUND_SHIFT) -> list[int]:
    """Indices of the uncontended rounds that were slow processes: every loop value above every loop value of
    the fastest round (the least mean) by more than ``max_shift`` (0: none).

    The fastest round may be a contended one: contention only adds time, so a contended round that still
    ran faster than every value of a clean one shows that the clean one's process was slow (the case that
    made a 1-worker run look faster than its baseline: docs/measurements/2026-12-04-timing-rules.md)."""
    fastest = _fastest_round(rounds)
    if max_shift <= 0 or fastest is None:
        return []
    ceiling = max(fastest[1]) * (1.0 + max_shift)
    return [
        i for i, r in enumerate(rounds)
        if i != fastest[0] and not r["contended"] and r["loop_values"] and min(r["loop_values"]) > ceiling
    ]  # fmt: skip


def leave_out_slow_rounds(record: dict[str, Any], max_shift: float) -> list[int]:
    """Mark the slow processes :func:`slow_rounds` finds (contended, ``slow``) and say why in ``slow_rounds``.

    Returns the rounds newly marked; the ones found before (and re-timed) keep their lines."""
    rounds = record["rounds"]
    slow = slow_rounds(rounds, max_shift)
    found = _fastest_round(rounds)
    fastest = found[1] if found is not None else []
    record.setdefault("slow_rounds", [])
    for i in slow:
        r = rounds[i]
        r["contended"] = r["slow"] = True
        record["slow_rounds"].append(
            f"round {r['round']}" + (f" (re-time {r['attempt']})" if r.get("attempt") else "")
            + f": loop {min(r['loop_values']) * 1e3:.3g}-{max(r['loop_values']) * 1e3:.3g} ms, every value more than"
            f" {max_shift:.0%} above the fastest round's {min(fastest) * 1e3:.3g}-{max(fastest) * 1e3:.3g} ms"
            " (a slow process)"
        )
    return slow


def contention_reason(entry: dict[str, Any], threshold: float, max_spread: float = BASELINE_MAX_SPREAD) -> str:
    """Why a round was contended, in words: which probe, the share it saw, the threshold; or the baseline's spread."""
    low = [
        f"CPU available {entry[f'cpu_available_{when}']:.2f} {when} it"
        for when in ("before", "after")
        if entry[f"cpu_available_{when}"] < threshold
    ]
    why = [f"{' and '.join(low)} (< {threshold:.2f})"] if low else []
    if entry.get("unstable"):
        why.append(f"sequential loop values spread {entry['loop_spread']:.0%} (> {max_spread:.0%})")
    again = f" (re-time {entry['attempt']})" if entry.get("attempt") else ""
    return f"round {entry['round']}{again}: {'; '.join(why) or 'contended'}"
