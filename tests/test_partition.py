"""The partitioner (tickpar/pdes/partition.py): zero-latency pairs stay together, parts balance, lookahead is right."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickpar.pdes.partition import pack_balanced, partition, partition_model, zero_latency_groups
from tickpar.plugins import RunSpec


def _complete(n: int, latency: int) -> list[tuple[int, int, int]]:
    return [(a, b, latency) for a in range(n) for b in range(n) if a != b]


def test_zero_latency_pairs_share_an_lp_and_parts_balance() -> None:
    """A ring of 4 zero-latency pairs joined by latency-5 links: pairs are never split, 2 + 2 pairs per LP."""
    edges = []
    for p in range(4):
        a, b = 2 * p, 2 * p + 1
        edges += [(a, b, 0), (b, a, 0), (b, (a + 2) % 8, 5)]
    part = partition(8, edges, 2)
    for p in range(4):
        assert part.lp_of[2 * p] == part.lp_of[2 * p + 1]
    assert part.sizes == (4, 4)
    assert part.zero_cut == ()
    assert part.lookahead == 5
    assert part.min_cut_latency == 5
    # The ring is cut in exactly two places.
    assert part.cut_edges == 2


def test_direct_call_edges_count_as_zero_latency() -> None:
    """An edge of latency 0 (what lookahead_graph reports for a direct call) glues its ends like a 0-latency link."""
    edges = [(0, 1, 0), (1, 2, 7), (2, 3, 7), (3, 0, 7)]
    part = partition(4, edges, 2)
    assert part.lp_of[0] == part.lp_of[1]
    assert part.lookahead == 7


def test_balance_on_a_complete_graph() -> None:
    """PHOLD-like all-to-all coupling: 16 components split evenly into 2 and 4 LPs, lookahead = the latency."""
    for parts in (2, 4):
        part = partition(16, _complete(16, 10), parts)
        assert part.sizes == tuple([16 // parts] * parts)
        assert part.lookahead == 10
        assert part.cut_edges == 16 * 15 - parts * (16 // parts) * (16 // parts - 1)


def test_lookahead_is_maximised_when_balance_allows() -> None:
    """Two clusters joined by slow links, short links inside: the cut takes only the slow links."""
    edges = []
    for base in (0, 4):
        for a in range(base, base + 4):
            for b in range(base, base + 4):
                if a != b:
                    edges.append((a, b, 1))
    edges += [(0, 4, 100), (4, 0, 100), (3, 7, 100)]
    part = partition(8, edges, 2)
    assert part.lookahead == 100
    assert {part.lp_of[i] for i in range(4)} != {part.lp_of[i] for i in range(4, 8)}
    assert part.cut_edges == 3


def test_short_edges_are_cut_when_keeping_them_would_unbalance() -> None:
    """One heavy cluster of short links: keeping it whole breaks the balance cap, so a short link is cut."""
    edges = [(i, i + 1, 1) for i in range(5)] + [(5, 6, 50), (6, 7, 50)]
    part = partition(8, edges, 2)
    assert part.sizes == (4, 4)
    assert part.lookahead == 1


def test_roundrobin_and_linear_ignore_the_graph() -> None:
    """roundrobin is id % parts, linear is contiguous blocks; both may cut zero-latency pairs, which is reported."""
    edges = [(0, 1, 0), (1, 2, 3), (2, 3, 0), (3, 0, 4)]
    rr = partition(4, edges, 2, "roundrobin")
    assert rr.lp_of == (0, 1, 0, 1)
    assert rr.zero_cut == ((0, 1), (2, 3))
    assert rr.min_cut_latency == 0
    assert rr.lookahead == 3
    lin = partition(4, edges, 2, "linear")
    assert lin.lp_of == (0, 0, 1, 1)
    assert lin.zero_cut == ()
    assert lin.cut_edges == 2
    assert lin.lookahead == 3


def test_uncut_and_single_part_partitions() -> None:
    """One part, or nothing coupled across parts: no lookahead; more parts than groups leaves LPs empty."""
    one = partition(3, [(0, 1, 2), (1, 2, 2)], 1)
    assert one.lp_of == (0, 0, 0)
    assert one.lookahead is None and one.min_cut_latency is None and one.cut_edges == 0
    glued = partition(3, [(0, 1, 0), (1, 2, 0)], 2)
    assert len(set(glued.lp_of)) == 1
    assert sorted(glued.sizes) == [0, 3]
    assert glued.lookahead is None


def test_partition_is_a_pure_function_and_weights_balance() -> None:
    """Same inputs, same output; with weights the heavy component gets an LP of its own."""
    edges = _complete(6, 4)
    assert partition(6, edges, 3) == partition(6, edges, 3)
    part = partition(5, _complete(5, 4), 2, weights=[4, 1, 1, 1, 1])
    heavy = part.lp_of[0]
    assert part.sizes[heavy] == 1
    assert part.weights == (4.0, 4.0)


def test_partition_model_on_phold() -> None:
    """partition_model uses the model's coupling graph: PHOLD's 16 LPs -> 8 + 8, lookahead = PHOLD's lookahead."""
    params = {
        "lps": 16, "population": 1, "remote": 0.25, "lookahead": 7, "mean": 10.0,
        "granularity": 1, "end_tick": 100, "work_us": 0.0,
    }
    model = RunSpec("phold", params, 1).build_model()
    part = partition_model(model, 2)
    assert part.sizes == (8, 8)
    assert part.lookahead == 7
    assert part.edges == 16 * 15


def test_bad_arguments_are_one_line_errors() -> None:
    """Unknown method, parts < 1, edges outside the range, wrong weight count: ValueError, one line each."""
    for kwargs in (
        {"method": "metis"},
        {"parts": 0},
        {"edges": [(0, 9, 1)]},
        {"edges": [(0, 1, -1)]},
        {"weights": [1.0]},
    ):
        args = {"n": 3, "edges": [(0, 1, 1)], "parts": 2, **kwargs}
        with pytest.raises(ValueError) as err:
            partition(**args)
        assert "\n" not in str(err.value)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=2, max_value=14).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(
                st.tuples(
                    st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from([0, 0, 1, 2, 5, 9])
                ),
                max_size=40,
            ),
            st.integers(min_value=1, max_value=4),
        )
    )
)
def test_auto_never_cuts_zero_latency_edges(case: tuple[int, list[tuple[int, int, int]], int]) -> None:
    """On random graphs: every component gets an LP in range, no zero-latency edge is cut, figures agree."""
    n, edges, parts = case
    part = partition(n, edges, parts)
    assert len(part.lp_of) == n
    assert all(0 <= p < parts for p in part.lp_of)
    assert part.zero_cut == ()
    cut = [lat for s, d, lat in edges if part.lp_of[s] != part.lp_of[d]]
    assert all(lat > 0 for lat in cut)
    assert part.lookahead == (min(cut) if cut else None)
    assert sum(part.sizes) == n


def test_pack_balanced_is_lpt_over_zero_latency_groups() -> None:
    """pack_balanced (what the bounds use): zero-latency groups stay whole, heaviest first into the lightest part."""
    edges = [(1, 2, 0), (0, 4, 7), (2, 3, 3)]
    assert zero_latency_groups(5, edges) == [0, 1, 1, 3, 4]
    # groups and weights: {0}: 5, {1, 2}: 2, {3}: 1, {4}: 4 -> 5 | 4, 2 | 1 onto the lighter part 0
    assert pack_balanced(5, edges, 2, [5.0, 1.0, 1.0, 1.0, 4.0]) == [0, 1, 1, 0, 1]
    with pytest.raises(ValueError, match="parts=0"):
        pack_balanced(5, edges, 0, [1.0] * 5)


#: multicore's `wide` shape (config/config.yaml).
MULTICORE_WIDE = {"cores": 16, "l2_banks": 8, "working_set_kib": 16, "think_cycles": 0, "link_latency": 2000,
                  "max_outstanding": 8, "requests_per_core": 16, "work_us": 1}  # fmt: skip


def _busiest_share(weights: str) -> float:
    from strategies.conservative import plan_for
    from tickpar.pdes.plan import component_event_counts
    from tickpar.runner import resolve_cell

    options = {"partition": "auto", "sync": "window", "stall_s": 10.0, "partition_weights": weights}
    spec = resolve_cell("multicore", dict(MULTICORE_WIDE), "conservative", options, 2, 1, "canonical").spec
    assert spec.order == "canonical"
    plan, _part = plan_for(spec.build_model(work="none"), spec, 2, options)
    counts = component_event_counts(spec)
    per_lp = [sum(c for c, lp in zip(counts, plan.lp_of, strict=True) if lp == p) for p in range(plan.parts)]
    return max(per_lp) / sum(per_lp)


def test_event_weighted_partition_balances_multicore_wide_better_than_counts() -> None:
    """On multicore `wide` the count partition leaves one LP two thirds of the events; events weights do not."""
    by_count, by_events = _busiest_share("count"), _busiest_share("events")
    assert by_count > 0.6
    assert by_events < by_count and by_events < 0.55


def test_component_event_counts_are_the_sequential_runs_and_ignore_work() -> None:
    """Counts per component sum to the golden run's events; the work mode and trace flag do not change them."""
    from dataclasses import replace

    from tickpar.pdes.plan import component_event_counts, partition_weights
    from tickpar.runner import resolve_cell

    spec = replace(resolve_cell("phold", {"lps": 8, "end_tick": 400}, "sequential", {}, 1, 3).spec, work="gil-release")
    counts = component_event_counts(spec)
    from tickpar.kernel.simloop import start_single_queue

    model, queue = start_single_queue(replace(spec, work="none"))
    queue.run()
    assert len(counts) == len(model.components) and sum(counts) > 0
    assert component_event_counts(replace(spec, work="none", trace=True)) == counts
    assert partition_weights(spec, "count") is None
    assert partition_weights(spec, "events") == [float(c) for c in counts]
    with pytest.raises(ValueError, match=r"partition_weights='cost' is not allowed: one of events, count, windows"):
        partition_weights(spec, "cost")
