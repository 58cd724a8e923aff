"""What to read from each figure: one sentence per figure page, printed under it in the PDF and opening its
HTML caption (``report/{name}.rst``; tests/test_answer.py checks that the two agree)."""

from __future__ import annotations

__all__ = ["READ", "caption"]

READ: dict[str, str] = {
    "correctness": "a green row is a strategy that was exact everywhere; any other colour names how it went wrong, "
    "and a ! marks a verdict the strategy did not promise.",
    "speedup": "how far each exact strategy gets towards the dashed ideal as workers grow; the gap to its own "
    "dotted bound is its overhead.",
    "efficiency": "the share of each worker that does useful work: 1 is perfect scaling, well below 1 is overhead.",
    "breakeven": "where a line crosses the dashed 1.0 the strategy starts to pay off; further left means it pays "
    "off at cheaper events.",
    "interpreters": "whether the free-threaded build lets threads pay off at cheaper events than the GIL build.",
    "ft_cost": "what the free-threaded build costs one thread: near 1 is free, below 1 is slower.",
    "engines": "the native (C++) engine breaks even at far cheaper events than Python: compare the diamonds on the "
    "1.0 line.",
    "scaling": "the speedup the model expects at 16-64 workers; trust a line only over the P range its legend "
    "gives as validated, it is faint beyond.",
    "time_per_event": "what one event costs each strategy, work included: shorter bars are faster.",
    "overhead": "what each strategy's synchronisation adds per event; at one worker that is its pure cost.",
    "accuracy": "how much error each quantum ratio buys and how much speed: the further right a point at low "
    "error, the better the trade; the dashed lines are the published claims.",
    "optimism": "where Time Warp beats conservative windows, and from the lower rows why it loses elsewhere "
    "(work rolled back).",
    "synthetic": "how the parallelism a scheme can use grows with the simulated system: the top line (events over "
    "the critical path) is what the real run holds, the lower ones what each strategy could use at 64 workers; "
    "where a dashed line (the fitted synthetic shape) leaves its solid one, the synthetic workload does not stand "
    "in for the real run on that figure.",
}


def caption(name: str) -> str:
    """The sentence for figure page ``name`` ('' when it has none)."""
    return READ.get(name, "")
