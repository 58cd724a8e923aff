"""PHOLD outside tickpar: the same model as ``workloads/phold.py``, in SimPy and in a bare heapq loop.

Each ``simulate_*`` function builds one PHOLD run (untimed), runs its event
loop (timed with ``time.perf_counter``) and returns a :class:`Outcome`: the
events each LP received and the loop's seconds.  :data:`IMPLEMENTATIONS` maps
the benchmark names that ``bench/engine.py`` uses to these functions, with
tickpar's ``sequential`` strategy among them.

"The same model" means what ``workloads/phold.py`` does with ``work_us=0``
and ``granularity=1``:

* ``lps`` LPs, LP ``i`` with its own ``random.Random(derive_seed(seed, f"lp{i}"))``
  (tickpar's per-component RNG, so every implementation draws the same numbers);
* at tick 0 each LP, in index order, sends itself ``population`` events,
  each ``lookahead + int(rng.expovariate(1 / mean))`` ticks later;
* an event arriving at LP ``i``: ``received[i] += 1``; then, with
  ``remote > 0``, ``rng.random() < remote`` picks a remote target
  ``rng.randrange(lps - 1)`` skipping ``i`` (else ``i`` itself); then one new
  event goes to the target ``lookahead + int(rng.expovariate(1 / mean))``
  ticks later, carrying ``hops + 1``;
* every event with ``when <= end_tick`` runs, none after (gem5's
  ``simulate(end_tick)``: model events at ``end_tick`` still run).

Ties at one tick are broken differently (tickpar: gem5's LIFO; SimPy and the
heapq loop: FIFO), but that cannot change the per-LP counts: an LP's draws
depend only on how many events it has processed, and two events tied at one
LP at one tick send the same two arrival ticks whichever goes first (only
their hop counts swap).  So every implementation processes *exactly* the same
number of events per LP, which :func:`check_counts` verifies.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappop, heappush
from pathlib import Path
from typing import Any

import simpy

from tickpar.kernel.model import derive_seed
from tickpar.plugins.registry import get_registry
from tickpar.runner import resolve_cell

__all__ = [
    "DEFAULT_SEED",
    "IMPLEMENTATIONS",
    "Outcome",
    "PholdParams",
    "check_counts",
    "compiled_tree",
    "lp_rngs",
    "simulate_heapq",
    "simulate_simpy_callbacks",
    "simulate_simpy_process",
    "simulate_tickpar",
    "simulate_tickpar_compiled",
]

DEFAULT_SEED = 1


@dataclass(frozen=True)
class PholdParams:
    """The PHOLD parameters every implementation takes (``workloads/phold.py`` names and meanings)."""

    lps: int = 64
    population: int = 16
    remote: float = 0.25
    lookahead: int = 10
    mean: float = 100.0
    end_tick: int = 6_000

    def __post_init__(self) -> None:
        if self.lps < 1 or self.population < 1 or self.lookahead < 1 or self.end_tick < 1 or self.mean <= 0:
            raise ValueError(f"PHOLD parameters out of range: {self}")
        if not 0.0 <= self.remote <= 1.0:
            raise ValueError(f"remote={self.remote} must be in [0, 1]")
        if self.remote > 0 and self.lps < 2:
            raise ValueError(f"remote={self.remote} needs lps >= 2")

    def workload_params(self) -> dict[str, Any]:
        """The ``phold`` workload's parameters for this model (no work, no granularity)."""
        return {
            "lps": self.lps,
            "population": self.population,
            "remote": self.remote,
            "lookahead": self.lookahead,
            "mean": self.mean,
            "end_tick": self.end_tick,
            "granularity": 1,
            "work_us": 0.0,
        }

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.workload_params().items())


@dataclass(frozen=True)
class Outcome:
    """One simulation: events received per LP, and the seconds its event loop took."""

    received: tuple[int, ...]
    loop_s: float

    @property
    def events(self) -> int:
        return sum(self.received)


def lp_rngs(params: PholdParams, seed: int) -> list[random.Random]:
    """Each LP's RNG, seeded exactly as tickpar seeds component ``lp<i>``."""
    return [random.Random(derive_seed(seed, f"lp{i}")) for i in range(params.lps)]


# -- tickpar --------------------------------------------------------------------------------


def simulate_tickpar(params: PholdParams, seed: int = DEFAULT_SEED) -> Outcome:
    """tickpar's ``sequential`` strategy on the ``phold`` workload, ``work=none``.

    The strategy builds the model, binds it and runs ``init()`` untimed, then
    times only its ``serviceOne`` loop (``stats["loop_s"]``); collecting the
    oracle record afterwards is untimed too.
    """
    cell = resolve_cell("phold", params.workload_params(), "sequential", None, 1, seed, order="gem5", work="none")
    strategy = get_registry().strategy(cell.strategy)()
    result = strategy.run(cell.spec, cell.workers, dict(cell.options))
    comps = result.record.components
    received = tuple(comps[f"lp{i}"]["count"] for i in range(params.lps))
    return Outcome(received, float(result.stats["loop_s"]))


def compiled_tree() -> Path | None:
    """A checkout whose kernel is compiled (``make test-compiled`` leaves one in build/compiled-tree), or None.

    ``TICKPAR_COMPILED_TREE`` names another; the tree counts only if its ``tickpar/kernel`` holds an
    extension module of this interpreter's ABI.
    """
    from importlib.machinery import EXTENSION_SUFFIXES

    where = os.environ.get("TICKPAR_COMPILED_TREE")
    tree = Path(where) if where else Path(__file__).resolve().parent.parent / "build" / "compiled-tree"
    kernel = tree / "tickpar" / "kernel"
    if any((kernel / f"eventq{suffix}").exists() for suffix in EXTENSION_SUFFIXES):
        return tree
    return None


_CHILD = """
import json, sys
import phold_baselines as pb
from tickpar.kernel import kernel_build
assert kernel_build() == "compiled", kernel_build()
params, seed, warm = pb.PholdParams(**json.loads(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
for _ in range(warm):
    pb.simulate_tickpar(pb.PholdParams(lps=4, population=2, end_tick=200), seed)
out = pb.simulate_tickpar(params, seed)
print(json.dumps([out.received, out.loop_s]))
"""


def simulate_tickpar_compiled(params: PholdParams, seed: int = DEFAULT_SEED, warm: int = 10) -> Outcome:
    """:func:`simulate_tickpar` with the compiled kernel, in a child process on :func:`compiled_tree`.

    One interpreter cannot hold both builds of ``tickpar.kernel.eventq``, so each simulation runs in
    a fresh child (its start-up, imports, ``warm`` code warm-up runs and the model build are untimed,
    as here: only the child's ``loop_s`` counts); the child refuses to run on a pure kernel.
    """
    tree = compiled_tree()
    if tree is None:
        raise RuntimeError("no compiled kernel: run `make test-compiled` or set TICKPAR_COMPILED_TREE")
    fields = {k: getattr(params, k) for k in ("lps", "population", "remote", "lookahead", "mean", "end_tick")}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "bench")])}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(fields), str(seed), str(warm)],
        capture_output=True, text=True, env=env, cwd=tree, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"compiled-kernel child failed: {done.stderr[-1500:]}")
    received, loop_s = json.loads(done.stdout.strip().splitlines()[-1])
    return Outcome(tuple(received), float(loop_s))


# -- bare heapq -----------------------------------------------------------------------------


def simulate_heapq(params: PholdParams, seed: int = DEFAULT_SEED) -> Outcome:
    """PHOLD as a bare heapq loop over ``(when, seq, lp, hops)`` tuples (ties FIFO by ``seq``)."""
    lps = params.lps
    lookahead = params.lookahead
    rate = 1.0 / params.mean
    remote = params.remote
    end_tick = params.end_tick
    rngs = lp_rngs(params, seed)
    received = [0] * lps
    heap: list[tuple[int, int, int, int]] = []
    seq = 0
    for lp in range(lps):
        rng = rngs[lp]
        for _ in range(params.population):
            seq += 1
            heappush(heap, (lookahead + int(rng.expovariate(rate)), seq, lp, 0))

    started = time.perf_counter()
    others = lps - 1
    while heap and heap[0][0] <= end_tick:
        now, _, lp, hops = heappop(heap)
        received[lp] += 1
        rng = rngs[lp]
        if remote and rng.random() < remote:
            dst = rng.randrange(others)
            if dst >= lp:
                dst += 1
        else:
            dst = lp
        seq += 1
        heappush(heap, (now + lookahead + int(rng.expovariate(rate)), seq, dst, hops + 1))
    loop_s = time.perf_counter() - started
    return Outcome(tuple(received), loop_s)


# -- SimPy ----------------------------------------------------------------------------------


def simulate_simpy_callbacks(params: PholdParams, seed: int = DEFAULT_SEED) -> Outcome:
    """PHOLD in SimPy without generators: each event is an ``env.timeout`` with a callback.

    The timeout's value is ``(lp, hops)``; its callback is the receiving
    LP's handler, which sends the next event the same way.  This is SimPy's
    documented callback API (``Event.callbacks``) and its fastest form here.
    """
    env = simpy.Environment()
    lps = params.lps
    lookahead = params.lookahead
    rate = 1.0 / params.mean
    remote = params.remote
    others = lps - 1
    rngs = lp_rngs(params, seed)
    received = [0] * lps
    timeout = env.timeout

    def arrive(event: simpy.Event) -> None:
        lp, hops = event.value
        received[lp] += 1
        rng = rngs[lp]
        if remote and rng.random() < remote:
            dst = rng.randrange(others)
            if dst >= lp:
                dst += 1
        else:
            dst = lp
        timeout(lookahead + int(rng.expovariate(rate)), (dst, hops + 1)).callbacks.append(arrive)

    for lp in range(lps):
        rng = rngs[lp]
        for _ in range(params.population):
            timeout(lookahead + int(rng.expovariate(rate)), (lp, 0)).callbacks.append(arrive)

    started = time.perf_counter()
    env.run(until=params.end_tick + 1)  # integer ticks: runs every event at end_tick, none after
    loop_s = time.perf_counter() - started
    return Outcome(tuple(received), loop_s)


def simulate_simpy_process(params: PholdParams, seed: int = DEFAULT_SEED) -> Outcome:
    """PHOLD in SimPy's process style: one process per in-flight event, ``yield env.timeout(...)``.

    Each of the ``lps * population`` processes is one PHOLD event hopping
    from LP to LP: it waits for its arrival, does the receiving LP's work
    (count, draw the target and the delay from that LP's RNG), and waits again.
    """
    env = simpy.Environment()
    lps = params.lps
    lookahead = params.lookahead
    rate = 1.0 / params.mean
    remote = params.remote
    others = lps - 1
    rngs = lp_rngs(params, seed)
    received = [0] * lps
    timeout = env.timeout

    def token(lp: int, first: int) -> simpy.events.ProcessGenerator:
        yield timeout(first)
        hops = 0
        while True:
            received[lp] += 1
            rng = rngs[lp]
            if remote and rng.random() < remote:
                dst = rng.randrange(others)
                if dst >= lp:
                    dst += 1
            else:
                dst = lp
            yield timeout(lookahead + int(rng.expovariate(rate)))
            lp = dst
            hops += 1

    for lp in range(lps):
        rng = rngs[lp]
        for _ in range(params.population):
            env.process(token(lp, lookahead + int(rng.expovariate(rate))))

    started = time.perf_counter()
    env.run(until=params.end_tick + 1)
    loop_s = time.perf_counter() - started
    return Outcome(tuple(received), loop_s)


#: Benchmark name -> simulation function, in the order ``bench/engine.py`` runs them.
IMPLEMENTATIONS: dict[str, Callable[[PholdParams, int], Outcome]] = {
    "tickpar_sequential": simulate_tickpar,
    "simpy_callbacks": simulate_simpy_callbacks,
    "simpy_process": simulate_simpy_process,
    "heapq_bare": simulate_heapq,
}
if compiled_tree() is not None:  # a peer only where a compiled kernel was built (make test-compiled)
    IMPLEMENTATIONS["tickpar_compiled"] = simulate_tickpar_compiled


def check_counts(outcomes: dict[str, Outcome]) -> None:
    """Raise ``AssertionError`` unless every implementation processed the same events per LP."""
    items = list(outcomes.items())
    ref_name, ref = items[0]
    for name, out in items[1:]:
        if out.received != ref.received:
            diff = [i for i, (a, b) in enumerate(zip(ref.received, out.received, strict=True)) if a != b]
            raise AssertionError(
                f"{name} processed {out.events} events, {ref_name} {ref.events}; per-LP counts differ at LPs {diff[:8]}"
            )
