"""Partitioning components into logical processes (LPs): a pure function of the coupling graph.

Input: the number of components, the coupling graph as ``(src, dst, min latency)``
triples (what :meth:`tickpar.kernel.model.Model.lookahead_graph` returns, direct calls
included with latency 0), the number of parts, and optionally a weight per
component (default 1: balance by component count).

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
    The cap of step 2 is ``max(ceil(total / parts * (1 + imbalance)), heaviest
    mandatory group)``: some imbalance is traded for a larger lookahead.

:func:`pack_balanced` is the simpler rule the bounds (:mod:`tickpar.perf.bounds`) use:
the mandatory groups of step 1 packed by LPT on the given weights, cut ignored.

The result records the lookahead (smallest *positive* cut latency: what a
conservative synchronisation can use), the smallest cut latency including 0,
the cut zero-latency pairs, cut edge counts and part sizes.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["METHODS", "Partition", "pack_balanced", "partition", "partition_model", "zero_latency_groups"]

#: Group graph: group -> {neighbour group: directed coupling edges between them}.
Adjacency = dict[int, dict[int, int]]

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

    def members(self, lp: int) -> list[int]:
        """Component ids of ``lp``, ascending."""
        return [c for c, p in enumerate(self.lp_of) if p == lp]

    def channels(self, edges: Iterable[tuple[int, int, int]]) -> set[tuple[int, int]]:
        """The LP pairs ``(src lp, dst lp)`` that some edge crosses."""
        return {(self.lp_of[s], self.lp_of[d]) for s, d, _ in edges if self.lp_of[s] != self.lp_of[d]}

    def describe(self) -> dict[str, object]:
        """JSON-ready summary (for strategy statistics)."""
        return {
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


def _refine(assign: dict[int, int], gg: Adjacency, group_w: dict[int, float], parts: int, cap: float) -> dict[int, int]:
    """k-way greedy refinement: moves and swaps of groups that shrink the cut, every part staying within ``cap``."""
    assign = dict(assign)
    loads = [0.0] * parts
    counts = [0] * parts
    for g, p in assign.items():
        loads[p] += group_w[g]
        counts[p] += 1
    nodes = sorted(gg)
    for _ in range(200):
        # links[g][p]: directed coupling edges between group g and part p.
        links: dict[int, dict[int, int]] = {}
        for g in nodes:
            row: dict[int, int] = {}
            for nb, m in gg[g].items():
                row[assign[nb]] = row.get(assign[nb], 0) + m
            links[g] = row
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
            for i, g in enumerate(nodes):
                a = assign[g]
                for h in nodes[i + 1 :]:
                    b = assign[h]
                    if a == b:
                        continue
                    delta = group_w[h] - group_w[g]
                    if loads[a] + delta > cap or loads[b] - delta > cap:
                        continue
                    m = gg[g].get(h, 0)
                    gain = links[g].get(b, 0) - links[g].get(a, 0) + links[h].get(a, 0) - links[h].get(b, 0) - 2 * m
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


def _auto(
    n: int, und: dict[tuple[int, int], tuple[int, int]], weights: Sequence[float], parts: int, imbalance: float
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

    best: tuple[tuple[int, float], dict[int, int]] | None = None
    for seed in (_bfs_fill(gg, group_w, parts, total), _lpt(group_w, parts)):
        # Refinement may not make the heaviest part heavier than the seed's (or the even share).
        seed_loads = [0.0] * parts
        for g, p in seed.items():
            seed_loads[p] += group_w[g]
        refined = _refine(seed, gg, group_w, parts, max(max(seed_loads), math.ceil(total / parts - 1e-9)))
        loads = [0.0] * parts
        for g, p in refined.items():
            loads[p] += group_w[g]
        score = (_cut(refined, gg), max(loads))
        if best is None or score < best[0]:
            best = (score, refined)
    assert best is not None
    assign = best[1]
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


def partition(
    n: int,
    edges: Iterable[tuple[int, int, int]],
    parts: int,
    method: str = "auto",
    weights: Sequence[float] | None = None,
    imbalance: float = 0.2,
) -> Partition:
    """Partition components ``0..n-1`` coupled by ``edges`` into ``parts`` LPs (see the module docstring)."""
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
        lp_of = _auto(n, und, weights, parts, imbalance)

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
    )


def partition_model(
    model: object,
    parts: int,
    method: str = "auto",
    imbalance: float = 0.2,
    weights: Sequence[float] | None = None,
) -> Partition:
    """:func:`partition` of a built :class:`~tickpar.kernel.model.Model` (``weights`` by component id; default 1)."""
    comps = model.components  # type: ignore[attr-defined]
    graph = model.lookahead_graph()  # type: ignore[attr-defined]
    return partition(len(comps), graph, parts, method, weights=weights, imbalance=imbalance)
