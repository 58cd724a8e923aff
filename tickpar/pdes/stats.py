"""The statistics every partitioned strategy reports, gathered from its LPs' results."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tickpar.plugins import base_stats

if TYPE_CHECKING:
    from tickpar.pdes.lp import LPResult
    from tickpar.pdes.partition import Partition
    from tickpar.pdes.plan import Plan
    from tickpar.verify.oracle import OracleRecord

__all__ = ["lp_total", "merged_record", "partitioned_stats"]


def merged_record(results: list[LPResult]) -> OracleRecord:
    """The run's oracle record from every LP's, in LP order; the most telling LP error, raised, if any failed."""
    from tickpar.pdes.errors import error_to_exception, pick_error
    from tickpar.verify.oracle import merge

    results.sort(key=lambda r: r.index)
    err = pick_error(r.error for r in results)
    if err is not None:
        raise error_to_exception(err)
    return merge([r.record for r in results])


def lp_total(results: list[LPResult], key: str) -> Any:
    """The sum of one statistic over every LP (0 where an LP does not report it)."""
    return sum(r.stats.get(key, 0) for r in results)


def partitioned_stats(
    results: list[LPResult], record: OracleRecord, plan: Plan, part: Partition, wall: float, batches: int
) -> dict[str, Any]:
    """Events, batches (windows, rounds or quanta), messages, idle and loop time, the partition, gem5 ties.

    ``loop_s`` is the slowest LP's synchronised execution (from the READY
    barrier to its end); ``setup_s`` is the rest of ``wall`` (model builds,
    process or rank start-up).  LPs share no locks, so ``lock_waits`` (constant
    0 by definition) is left out.
    """
    served = lp_total(results, "served")
    loop_s = max(r.stats.get("loop_s", 0.0) for r in results)
    stats = base_stats(plan.parts)
    del stats["lock_waits"]
    stats.update(
        events=record.events,
        batches=batches,
        mean_events_per_batch=served / batches if batches else 0.0,
        messages=lp_total(results, "messages"),
        idle_s=[round(r.stats.get("idle_s", 0.0), 6) for r in results],
    )
    stats.update(part.describe())
    stats.update(
        lookahead=plan.lookahead,
        events_per_lp=[r.stats.get("served", 0) for r in results],
        packets=lp_total(results, "packets"),
        dropped_after_end=lp_total(results, "dropped_after_end"),
        loop_s=loop_s,
        cpu_s=[round(r.stats.get("cpu_s", 0.0), 6) for r in results],
        setup_s=max(0.0, wall - loop_s),
    )
    if plan.order == "gem5":
        ties = ("gem5_cross_lp_ties", "gem5_tie_reorders", "gem5_tie_unresolved")
        stats.update({key: lp_total(results, key) for key in ties})
    return stats
