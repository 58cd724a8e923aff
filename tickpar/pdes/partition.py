"""Partitioning components into logical processes (LPs): a pure function of the coupling graph.

Input: the number of components, the coupling graph as ``(src, dst, min latency)``
triples (what :meth:`tickpar.kernel.model.Model.lookahead_graph` returns, direct calls
included with latency 0), the number of parts, and optionally a weight per
component (default 1: balance by component count) and per-window loads per
component (``window_loads``: its events in each conservative window of a
profiled run, :func:`tickpar.pdes.plan.partition_window_loads`).

Methods:

``auto``
    1. *Mandatory groups*: components joined by a zero-latency edge (a link with
       latency 0 or a direct call) are merged (connected components of the
       zero-latency subgraph), so such a pair never crosses LPs.
    2. *Lookahead maximisation*: the lookahead of a partition is the smallest
       latency of any edge it cuts.  For each distinct positive latency ``l``
       (largest first) the edges with latency below ``l`` are merged as well; the
       largest ``l`` whose groups still pack into ``parts`` bins within the
       balance cap (greedy LPT packing) is taken.  This never cuts a short edge
       when a balanced partition that keeps it exists.
    3. *Cut minimisation* over those groups: two seeds (groups in breadth-first
       order filled part by part, and LPT packing), each refined k-way (the move
       of one group, else the swap of two, with the largest positive gain in cut
       edges; no part may grow heavier than the seed's heaviest part or the even
       share), keeping the better result by (cut edges, heaviest part).
    4. *Window refinement* (only with ``window_loads``): a window-synchronised
       run takes, per window, as long as its busiest LP, so balanced totals can
       still leave one LP idle in one window and the other in the next.  Each
       refined seed of step 3 is refined again, greedily, over the same groups
       (the move of one group, else the swap of two, with the largest decrease;
       a group is never split) to minimise the *window makespan* ``sum over
       windows of max over parts of the part's load in that window``, ties
       broken by the smaller cut.  No part's total may exceed the cap (or step
       3's result's heaviest part, if heavier), and no edge below step 3's
       result's smallest cut latency may become cut, so the lookahead never
       falls; a seed that already breaks either is left out.  The best result
       by (window makespan, cut edges, heaviest part) is kept: step 3's result
       is always a candidate, so the makespan never rises above it.
    The cap of step 2 is ``max(ceil(total / parts * (1 + imbalance)), heaviest
    mandatory group)``: some imbalance is traded for a larger lookahead.

:func:`pack_balanced` is the simpler rule the bounds (:mod:`tickpar.perf.predict.bounds`) use:
the mandatory groups of step 1 packed by LPT on the given weights, cut ignored.

The result records the lookahead (smallest *positive* cut latency: what a
conservative synchronisation can use), the smallest cut latency including 0,
the cut zero-latency pairs, cut edge counts and part sizes.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

__all__ = [
    "METHODS",
    "Partition",
    "pack_balanced",
    "partition",
    "partition_model",
    "window_makespan",
    "zero_latency_groups",
]

#: Group graph: group -> {neighbour group: directed coupling edges between them}.
Adjacency = dict[int, dict[int, int]]
#: Group -> {neighbour group: smallest latency of an edge between them}.
Latencies = dict[int, dict[int, int]]
#: Group -> {window index: load}, the windows where the group has a load.
GroupWindows = dict[int, dict[int, float]]

#: Passes of the window refinement (one move or swap each): bounded work on any input.
WINDOW_PASSES = 300

METHODS = ("auto", "roundrobin", "linear")


@dataclass(frozen=True)
class Partition:
    """An assignment of components to LPs and its figures of merit."""

    lp_of: tuple[int, ...]
    """LP index of each component id."""
    parts: int
    method: str
    lookahead: int | None
    """Smallest positive latency of a cut edge; ``None`` when no edge with latency > 0 is cut."""
    min_cut_latency: int | None
    """Smallest latency of a cut edge, 0 included; ``None`` when nothing is cut."""
    zero_cut: tuple[tuple[int, int], ...]
    """Directed edges with latency 0 that cross LPs (never with ``auto``)."""
    cut_edges: int
    """Directed coupling edges ``(src, dst)`` whose ends are in different LPs."""
    edges: int
    """All directed coupling edges between distinct components."""
    sizes: tuple[int, ...]
    """Components per LP."""
    weights: tuple[float, ...]
    """Total component weight per LP."""
    weighted_by: str = "count"
    """What the weights are: ``count`` (1 per component) or what the caller says (e.g. ``events``)."""
    window_makespan: float | None = None
    """With window loads: the sum over windows of the heaviest part's load in that window."""
    window_ideal: float | None = None
    """With window loads: the sum over windows of the mean part load (all loads / parts)."""

    def members(self, lp: int) -> list[int]:
        """Component ids of ``lp``, ascending."""
        return [c for c, p in enumerate(self.lp_of) if p == lp]

    def channels(self, edges: Iterable[tuple[int, int, int]]) -> set[tuple[int, int]]:
        """The LP pairs ``(src lp, dst lp)`` that some edge crosses."""
        return {(self.lp_of[s], self.lp_of[d]) for s, d, _ in edges if self.lp_of[s] != self.lp_of[d]}

    def describe(self) -> dict[str, object]:
        """JSON-ready summary (for strategy statistics); the window figures only when window loads were given."""
        out: dict[str, object] = {
            "partition": self.method,
            "lps": self.parts,
            "lookahead": self.lookahead,
            "min_cut_latency": self.min_cut_latency,
            "zero_latency_cut": len(self.zero_cut),
            "cut_edges": self.cut_edges,
            "coupling_edges": self.edges,
            "partition_sizes": list(self.sizes),
            "partition_weights": list(self.weights),
            "partition_weighted_by": self.weighted_by,
        }
        if self.window_makespan is not None:
            out["window_makespan"] = self.window_makespan
            out["window_ideal"] = self.window_ideal
        return out


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # Smaller root wins: groups are named by their smallest member (deterministic).
            if rb < ra:
                ra, rb = rb, ra
            self.parent[rb] = ra


def _undirected(n: int, edges: Iterable[tuple[int, int, int]]) -> dict[tuple[int, int], tuple[int, int]]:
    """``{(a, b): (min latency, directed multiplicity)}`` with ``a < b``; self-loops dropped."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for s, d, lat in edges:
        if not (0 <= s < n and 0 <= d < n):
            raise ValueError(f"edge ({s}, {d}) names a component outside 0..{n - 1}")
        if lat < 0:
            raise ValueError(f"edge ({s}, {d}) has negative latency {lat}")
        if s == d:
            continue
        key = (s, d) if s < d else (d, s)
        old = out.get(key)
        out[key] = (lat, 1) if old is None else (min(old[0], lat), old[1] + 1)
    return out


def _groups(n: int, und: dict[tuple[int, int], tuple[int, int]], below: float) -> list[int]:
    """Group id (smallest member) of each component when edges with latency < ``below`` are merged."""
    uf = _UnionFind(n)
    for (a, b), (lat, _m) in und.items():
        if lat < below:
            uf.union(a, b)
    return [uf.find(i) for i in range(n)]


def _lpt(group_w: dict[int, float], parts: int) -> dict[int, int]:
    """Greedy LPT packing: heaviest group first into the lightest part (ties: lowest index)."""
    loads = [0.0] * parts
    out: dict[int, int] = {}
    for g in sorted(group_w, key=lambda g: (-group_w[g], g)):
        p = min(range(parts), key=lambda i: (loads[i], i))
        out[g] = p
        loads[p] += group_w[g]
    return out


def _bfs_fill(gg: Adjacency, group_w: dict[int, float], parts: int, total: float) -> dict[int, int]:
    """Groups in breadth-first order (component by component, lowest id first), filled part by part."""
    order: list[int] = []
    seen: set[int] = set()
    for start in sorted(gg):
        if start in seen:
            continue
        seen.add(start)
        todo = deque([start])
        while todo:
            node = todo.popleft()
            order.append(node)
            for nb in sorted(gg[node]):
                if nb not in seen:
                    seen.add(nb)
                    todo.append(nb)
    out: dict[int, int] = {}
    part, filled, cum = 0, 0.0, 0.0
    for g in order:
        w = group_w[g]
        # Move to the next part when this one reached its share of the running total.
        target = total * (part + 1) / parts
        if part < parts - 1 and filled > 0 and cum + w / 2 > target:
            part += 1
            filled = 0.0
        out[g] = part
        filled += w
        cum += w
    return out


def _cut(assign: dict[int, int], gg: Adjacency) -> int:
    return sum(m for a, row in gg.items() for b, m in row.items() if a < b and assign[a] != assign[b])


def _part_totals(assign: dict[int, int], group_w: dict[int, float], parts: int) -> tuple[list[float], list[int]]:
    """Each part's total weight and number of groups under ``assign``."""
    loads = [0.0] * parts
    counts = [0] * parts
    for g, p in assign.items():
        loads[p] += group_w[g]
        counts[p] += 1
    return loads, counts


def _part_links(nodes: Sequence[int], gg: Adjacency, assign: dict[int, int]) -> dict[int, dict[int, int]]:
    """``links[g][p]``: directed coupling edges between group ``g`` and part ``p``."""
    links: dict[int, dict[int, int]] = {}
    for g in nodes:
        row: dict[int, int] = {}
        for nb, m in gg[g].items():
            row[assign[nb]] = row.get(assign[nb], 0) + m
        links[g] = row
    return links


def _feasible_swaps(
    nodes: Sequence[int], assign: dict[int, int], group_w: dict[int, float], loads: list[float], cap: float
) -> Iterator[tuple[int, int, int, int]]:
    """``(g, h, part of g, part of h)`` for each pair of groups in different parts whose swap keeps both in ``cap``."""
    for i, g in enumerate(nodes):
        a = assign[g]
        for h in nodes[i + 1 :]:
            b = assign[h]
            if a == b:
                continue
            delta = group_w[h] - group_w[g]
            if loads[a] + delta > cap or loads[b] - delta > cap:
                continue
            yield g, h, a, b


def _swap_gain(links: dict[int, dict[int, int]], gg: Adjacency, g: int, h: int, a: int, b: int) -> int:
    """Cut edges saved by swapping group ``g`` (in part ``a``) with group ``h`` (in part ``b``)."""
    m = gg[g].get(h, 0)
    return links[g].get(b, 0) - links[g].get(a, 0) + links[h].get(a, 0) - links[h].get(b, 0) - 2 * m


def _refine(assign: dict[int, int], gg: Adjacency, group_w: dict[int, float], parts: int, cap: float) -> dict[int, int]:
    """k-way greedy refinement: moves and swaps of groups that shrink the cut, every part staying within ``cap``."""
    assign = dict(assign)
    loads, counts = _part_totals(assign, group_w, parts)
    nodes = sorted(gg)
    for _ in range(200):
        links = _part_links(nodes, gg, assign)
        best_gain, best_op = 0, None
        for g in nodes:
            a = assign[g]
            row = links[g]
            if counts[a] > 1:
                for b in sorted(row):
                    gain = row[b] - row.get(a, 0)
                    if b != a and gain > best_gain and loads[b] + group_w[g] <= cap:
                        best_gain, best_op = gain, (g, b, None)
        if best_op is None:
            for g, h, a, b in _feasible_swaps(nodes, assign, group_w, loads, cap):
                gain = _swap_gain(links, gg, g, h, a, b)
                if gain > best_gain:
                    best_gain, best_op = gain, (g, b, h)
        if best_op is None:
            return assign
        g, b, h = best_op
        a = assign[g]
        assign[g] = b
        loads[a] -= group_w[g]
        loads[b] += group_w[g]
        counts[a] -= 1
        counts[b] += 1
        if h is not None:
            assign[h] = a
            loads[b] -= group_w[h]
            loads[a] += group_w[h]
            counts[b] -= 1
            counts[a] += 1
    return assign


def _group_windows(groups: Sequence[int], window_loads: Sequence[Sequence[float]]) -> GroupWindows:
    """Each group's load per window (sparse: a window where the group has no load is left out)."""
    out: GroupWindows = {}
    for comp, g in enumerate(groups):
        row = out.setdefault(g, {})
        for w, x in enumerate(window_loads[comp]):
            if x:
                row[w] = row.get(w, 0.0) + float(x)
    return out


def _part_windows(assign: dict[int, int], group_win: GroupWindows, parts: int, windows: int) -> list[list[float]]:
    """``win[w][p]``: part ``p``'s load in window ``w``."""
    win = [[0.0] * parts for _ in range(windows)]
    for g, p in assign.items():
        for w, x in group_win[g].items():
            win[w][p] += x
    return win


def _group_latencies(und: dict[tuple[int, int], tuple[int, int]], groups: Sequence[int]) -> Latencies:
    """Group -> {neighbour group: smallest latency of an edge between them} (both directions)."""
    out: Latencies = {}
    for (a, b), (lat, _m) in und.items():
        ga, gb = groups[a], groups[b]
        if ga != gb:
            for x, y in ((ga, gb), (gb, ga)):
                row = out.setdefault(x, {})
                row[y] = min(row.get(y, lat), lat)
    return out


def _cut_floor(assign: dict[int, int], glat: Latencies) -> float:
    """The smallest latency of an edge between groups in different parts (``inf``: nothing is cut)."""
    return min((lat for g, row in glat.items() for h, lat in row.items() if assign[g] != assign[h]), default=math.inf)


def _delta_makespan(win: list[list[float]], top: list[float], shift: dict[int, float], a: int, b: int) -> float:
    """The change of the window makespan when ``shift[w]`` of load moves from part ``a`` to part ``b``."""
    delta = 0.0
    for w, x in shift.items():
        row = win[w]
        ra, rb = row[a], row[b]
        row[a], row[b] = ra - x, rb + x
        delta += max(row) - top[w]
        row[a], row[b] = ra, rb
    return delta


def _swap_shift(gw: dict[int, float], hw: dict[int, float]) -> dict[int, float]:
    """Per window, the load that moves from ``g``'s part to ``h``'s when ``g`` and ``h`` swap (ascending windows)."""
    out: dict[int, float] = {}
    for w in sorted(gw.keys() | hw.keys()):
        x = gw.get(w, 0.0) - hw.get(w, 0.0)
        if x:
            out[w] = x
    return out


def _refine_windows(
    assign: dict[int, int],
    gg: Adjacency,
    glat: Latencies,
    group_w: dict[int, float],
    group_win: GroupWindows,
    parts: int,
    cap: float,
    floor: float,
    windows: int,
) -> dict[int, int]:
    """Greedy moves and swaps of whole groups that lower the window makespan (ties: the cut).

    Best improvement per pass, moves before swaps (a swap is tried only when no move
    improves), in a fixed order: deterministic, and at most :data:`WINDOW_PASSES` passes.
    No part's total may exceed ``cap`` (or the start's heaviest part, so the start is
    always feasible), and no edge with a latency below ``floor`` may become cut.
    """
    assign = dict(assign)
    loads, counts = _part_totals(assign, group_w, parts)
    cap = max(cap, max(loads))
    win = _part_windows(assign, group_win, parts, windows)
    # Loads are event counts (exact in floats); the tolerance only guards fractional weights against cycling.
    eps = 1e-9 * max(1.0, sum(sum(row) for row in win))
    nodes = sorted(gg)
    no_edges: dict[int, int] = {}

    def keeps_lookahead(g: int, part: int, other: int | None = None) -> bool:
        # Leaving ``part``, g cuts its edges to the groups that stay there (``other`` leaves too).
        return all(lat >= floor for h, lat in glat.get(g, no_edges).items() if h != other and assign[h] == part)

    for _ in range(WINDOW_PASSES):
        top = [max(row) for row in win]
        links = _part_links(nodes, gg, assign)
        best_key: tuple[float, int] = (0.0, 0)
        best_op: tuple[int, int, int | None] | None = None
        for g in nodes:
            a = assign[g]
            if counts[a] < 2 or not keeps_lookahead(g, a):
                continue
            for b in range(parts):
                if b == a or loads[b] + group_w[g] > cap:
                    continue
                d = _delta_makespan(win, top, group_win[g], a, b)
                key = (0.0 if abs(d) <= eps else d, links[g].get(a, 0) - links[g].get(b, 0))
                if key < best_key:
                    best_key, best_op = key, (g, b, None)
        if best_op is None:
            for g, h, a, b in _feasible_swaps(nodes, assign, group_w, loads, cap):
                shift = _swap_shift(group_win[g], group_win[h])
                if not (keeps_lookahead(g, a, h) and keeps_lookahead(h, b, g)):
                    continue
                d = _delta_makespan(win, top, shift, a, b)
                key = (0.0 if abs(d) <= eps else d, -_swap_gain(links, gg, g, h, a, b))
                if key < best_key:
                    best_key, best_op = key, (g, b, h)
        if best_op is None:
            return assign
        g, b, partner = best_op
        a = assign[g]
        _shift_group(assign, loads, counts, win, group_w, group_win, g, a, b)
        if partner is not None:
            _shift_group(assign, loads, counts, win, group_w, group_win, partner, b, a)
    return assign


def _shift_group(
    assign: dict[int, int],
    loads: list[float],
    counts: list[int],
    win: list[list[float]],
    group_w: dict[int, float],
    group_win: GroupWindows,
    g: int,
    a: int,
    b: int,
) -> None:
    """Move group ``g`` from part ``a`` to part ``b``, updating the totals and window loads."""
    assign[g] = b
    loads[a] -= group_w[g]
    loads[b] += group_w[g]
    counts[a] -= 1
    counts[b] += 1
    for w, x in group_win[g].items():
        win[w][a] -= x
        win[w][b] += x


def _makespan(win: list[list[float]]) -> float:
    return sum(max(row) for row in win)


def _heaviest(assign: dict[int, int], group_w: dict[int, float], parts: int) -> float:
    return max(_part_totals(assign, group_w, parts)[0])


def _best_by_windows(
    chosen: dict[int, int],
    candidates: list[dict[int, int]],
    und: dict[tuple[int, int], tuple[int, int]],
    groups: Sequence[int],
    gg: Adjacency,
    group_w: dict[int, float],
    window_loads: Sequence[Sequence[float]],
    parts: int,
    cap: float,
) -> dict[int, int]:
    """Step 4: every refined seed refined by window makespan; the best by (makespan, cut, heaviest part).

    ``chosen`` is what steps 1-3 pick (the ``events`` partition).  No result may be heavier
    than the cap or ``chosen``'s heaviest part, nor cut an edge below ``chosen``'s smallest cut
    latency: a seed that does is left out, and ``chosen`` never is, so the result's window
    makespan is never above ``chosen``'s and its lookahead never below.
    """
    windows = len(window_loads[0]) if window_loads else 0
    group_win = _group_windows(groups, window_loads)
    glat = _group_latencies(und, groups)
    limit = max(cap, _heaviest(chosen, group_w, parts))
    floor = _cut_floor(chosen, glat)
    best: tuple[tuple[float, ...], dict[int, int]] | None = None
    for start in candidates:
        if _heaviest(start, group_w, parts) > limit or _cut_floor(start, glat) < floor:
            continue
        refined = _refine_windows(start, gg, glat, group_w, group_win, parts, limit, floor, windows)
        score = (
            _makespan(_part_windows(refined, group_win, parts, windows)),
            _cut(refined, gg),
            _heaviest(refined, group_w, parts),
        )
        if best is None or score < best[0]:
            best = (score, refined)
    assert best is not None  # chosen is one of the candidates
    return best[1]


def _auto(
    n: int,
    und: dict[tuple[int, int], tuple[int, int]],
    weights: Sequence[float],
    parts: int,
    imbalance: float,
    window_loads: Sequence[Sequence[float]] | None = None,
) -> list[int]:
    total = float(sum(weights))
    mandatory = _groups(n, und, 1)  # merge latency-0 edges
    mand_w: dict[int, float] = {}
    for i, g in enumerate(mandatory):
        mand_w[g] = mand_w.get(g, 0.0) + weights[i]
    cap = max(math.ceil(total / parts * (1.0 + imbalance) - 1e-9), max(mand_w.values()))
    need = min(parts, len(mand_w))

    groups = mandatory
    for lat in sorted({lat for (lat, _m) in und.values() if lat > 0}, reverse=True):
        cand = _groups(n, und, lat)
        cand_w: dict[int, float] = {}
        for i, g in enumerate(cand):
            cand_w[g] = cand_w.get(g, 0.0) + weights[i]
        if len(cand_w) < need:
            continue
        packed = _lpt(cand_w, parts)
        loads = [0.0] * parts
        for g, p in packed.items():
            loads[p] += cand_w[g]
        if max(loads) <= cap:
            groups = cand
            break

    group_w: dict[int, float] = {}
    for i, g in enumerate(groups):
        group_w[g] = group_w.get(g, 0.0) + weights[i]
    gg: Adjacency = {g: {} for g in group_w}
    for (a, b), (_lat, m) in und.items():
        ga, gb = groups[a], groups[b]
        if ga != gb:
            gg[ga][gb] = gg[ga].get(gb, 0) + m
            gg[gb][ga] = gg[gb].get(ga, 0) + m

    refined_seeds: list[tuple[tuple[float, ...], dict[int, int]]] = []
    for seed in (_bfs_fill(gg, group_w, parts, total), _lpt(group_w, parts)):
        # Refinement may not make the heaviest part heavier than the seed's (or the even share).
        seed_loads = [0.0] * parts
        for g, p in seed.items():
            seed_loads[p] += group_w[g]
        refined = _refine(seed, gg, group_w, parts, max(max(seed_loads), math.ceil(total / parts - 1e-9)))
        refined_seeds.append(((_cut(refined, gg), _heaviest(refined, group_w, parts)), refined))
    assign = min(refined_seeds, key=lambda item: item[0])[1]
    if window_loads is not None:
        candidates = [r for _score, r in refined_seeds]
        assign = _best_by_windows(assign, candidates, und, groups, gg, group_w, window_loads, parts, cap)
    # Name LPs by their smallest component id, so the result does not depend on the seed used.
    first: dict[int, int] = {}
    for i in range(n):
        first.setdefault(assign[groups[i]], len(first))
    return [first[assign[groups[i]]] for i in range(n)]


def zero_latency_groups(n: int, edges: Iterable[tuple[int, int, int]]) -> list[int]:
    """Group of each component ``0..n-1`` (named by its smallest member) when latency-0 edges are merged."""
    return _groups(n, _undirected(n, edges), 1)


def pack_balanced(n: int, edges: Iterable[tuple[int, int, int]], parts: int, weights: Sequence[float]) -> list[int]:
    """Part of each component: zero-latency groups packed heaviest first into the lightest part (LPT).

    Ignores the cut (unlike ``auto``): the balance of ``weights`` is all that
    counts.  Ties go to the lower group name and the lower part index.
    """
    if parts < 1:
        raise ValueError(f"parts={parts} is not allowed: an int >= 1")
    if len(weights) != n:
        raise ValueError(f"{len(weights)} weights given for {n} components")
    groups = zero_latency_groups(n, edges)
    group_w: dict[int, float] = {}
    for comp, g in enumerate(groups):
        group_w[g] = group_w.get(g, 0.0) + float(weights[comp])
    packed = _lpt(group_w, parts)
    return [packed[g] for g in groups]


def window_makespan(lp_of: Sequence[int], window_loads: Sequence[Sequence[float]], parts: int) -> float:
    """Sum over windows of the heaviest part's load in that window (``window_loads``: per component, per window).

    What a window-synchronised run's time is proportional to when every event costs the
    same: each window lasts as long as its busiest LP.
    """
    if len(window_loads) != len(lp_of):
        raise ValueError(f"window loads given for {len(window_loads)} components, not {len(lp_of)}")
    windows = len(window_loads[0]) if window_loads else 0
    win = [[0.0] * parts for _ in range(windows)]
    for comp, p in enumerate(lp_of):
        for w, x in enumerate(window_loads[comp]):
            win[w][p] += x
    return _makespan(win)


def _check_window_loads(n: int, window_loads: Sequence[Sequence[float]]) -> None:
    if len(window_loads) != n:
        raise ValueError(f"window loads given for {len(window_loads)} components, not {n}")
    lengths = {len(row) for row in window_loads}
    if len(lengths) > 1:
        raise ValueError(f"window loads of unequal lengths {sorted(lengths)}: one count per window per component")
    if any(x < 0 for row in window_loads for x in row):
        raise ValueError("window loads must be >= 0")


def partition(
    n: int,
    edges: Iterable[tuple[int, int, int]],
    parts: int,
    method: str = "auto",
    weights: Sequence[float] | None = None,
    imbalance: float = 0.2,
    window_loads: Sequence[Sequence[float]] | None = None,
) -> Partition:
    """Partition components ``0..n-1`` coupled by ``edges`` into ``parts`` LPs (see the module docstring).

    ``window_loads``: per component, its load in each window (the same windows for all);
    ``auto`` then also minimises the window makespan (step 4), and every method reports it.
    """
    if method not in METHODS:
        raise ValueError(f"partition method {method!r} is not allowed: choose one of {', '.join(METHODS)}")
    if parts < 1:
        raise ValueError(f"parts={parts} is not allowed: an int >= 1")
    if n < 0:
        raise ValueError(f"n={n} is not allowed: an int >= 0")
    edges = list(edges)
    if weights is None:
        weights = [1.0] * n
    if len(weights) != n:
        raise ValueError(f"{len(weights)} weights given for {n} components")
    if window_loads is not None:
        _check_window_loads(n, window_loads)
    und = _undirected(n, edges)
    if n == 0:
        lp_of: list[int] = []
    elif parts == 1:
        lp_of = [0] * n
    elif method == "roundrobin":
        lp_of = [i % parts for i in range(n)]
    elif method == "linear":
        lp_of = [i * parts // n for i in range(n)]
    else:
        lp_of = _auto(n, und, weights, parts, imbalance, window_loads)

    cut = [(s, d, lat) for s, d, lat in edges if s != d and lp_of[s] != lp_of[d]]
    positive = [lat for _s, _d, lat in cut if lat > 0]
    sizes = [0] * parts
    loads = [0.0] * parts
    for i, p in enumerate(lp_of):
        sizes[p] += 1
        loads[p] += weights[i]
    return Partition(
        lp_of=tuple(lp_of),
        parts=parts,
        method=method,
        lookahead=min(positive) if positive else None,
        min_cut_latency=min((lat for _s, _d, lat in cut), default=None),
        zero_cut=tuple(sorted((s, d) for s, d, lat in cut if lat == 0)),
        cut_edges=len({(s, d) for s, d, _ in cut}),
        edges=len({(s, d) for s, d, _ in edges if s != d}),
        sizes=tuple(sizes),
        weights=tuple(loads),
        window_makespan=None if window_loads is None else window_makespan(lp_of, window_loads, parts),
        window_ideal=None if window_loads is None else sum(map(sum, window_loads)) / parts,
    )


def partition_model(
    model: object,
    parts: int,
    method: str = "auto",
    imbalance: float = 0.2,
    weights: Sequence[float] | None = None,
    window_loads: Sequence[Sequence[float]] | None = None,
) -> Partition:
    """:func:`partition` of a built :class:`~tickpar.kernel.model.Model` (``weights``, ``window_loads`` by id)."""
    comps = model.components  # type: ignore[attr-defined]
    graph = model.lookahead_graph()  # type: ignore[attr-defined]
    return partition(len(comps), graph, parts, method, weights=weights, imbalance=imbalance, window_loads=window_loads)
