"""PHOLD outside tickpar: the same model as ``workloads/phold.py``, in SimPy, desimpy, salabim and a bare heapq loop.

Each ``simulate_*`` function builds one PHOLD run (untimed), runs its event
loop (timed with ``time.perf_counter``) and returns a :class:`Outcome`: the
events each LP received and the loop's seconds.  :data:`IMPLEMENTATIONS` maps
the benchmark names that ``bench/engine.py`` uses to these functions, with
tickpar's ``sequential`` strategy among them.  A peer whose library does not
import (SimPy, desimpy, salabim) or a compiled kernel that was not built is
left out of it, and :data:`UNAVAILABLE` says why.

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

Ties at one tick are broken differently (tickpar: gem5's LIFO; SimPy, salabim
and the heapq loop: FIFO; desimpy: whatever its heap of ``(time, event)`` pairs
does with equal times), but that cannot change the per-LP counts: an LP's draws
depend only on how many events it has processed, and two events tied at one
LP at one tick send the same two arrival ticks whichever goes first (only
their hop counts swap).  So every implementation processes *exactly* the same
number of events per LP, which :func:`check_counts` verifies.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from heapq import heappop, heappush
from pathlib import Path
from types import ModuleType
from typing import Any

from tickpar.kernel.model import derive_seed
from tickpar.plugins.registry import get_registry
from tickpar.runner import resolve_cell

__all__ = [
    "DEFAULT_SEED",
    "IMPLEMENTATIONS",
    "LIBRARIES",
    "UNAVAILABLE",
    "Outcome",
    "PholdParams",
    "check_counts",
    "compiled_tree",
    "kernel_of",
    "library_version",
    "lp_rngs",
    "simulate_desimpy",
    "simulate_heapq",
    "simulate_salabim",
    "simulate_simpy_callbacks",
    "simulate_simpy_process",
    "simulate_tickpar",
    "simulate_tickpar_compiled",
]

DEFAULT_SEED = 1


def _optional(module: str) -> tuple[ModuleType | None, str | None]:
    """``(module, None)``, or ``(None, why)`` where it does not import (not installed, or broken on import)."""
    try:
        return importlib.import_module(module), None
    except Exception as err:  # an ImportError, or any error a broken install raises on import
        return None, f"{module} does not import ({type(err).__name__}: {err})"


simpy, _SIMPY_MISSING = _optional("simpy")
desimpy, _DESIMPY_MISSING = _optional("desimpy")
salabim, _SALABIM_MISSING = _optional("salabim")


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


# -- desimpy --------------------------------------------------------------------------------


def simulate_desimpy(params: PholdParams, seed: int = DEFAULT_SEED) -> Outcome:
    """PHOLD in desimpy: each event is ``scheduler.timeout(delay, action)``, the action the receiving LP's handler.

    desimpy is callback-only: an ``Event(time, action, context)`` on a heap of ``(time, event)``
    pairs, whose ``action()`` takes no argument, so each event carries its ``(lp, hops)`` in a
    ``functools.partial`` of the handler.  The loop is ``EventScheduler.run(stop, logging=False)``
    (no event log) with a stop condition that reads the head of the public ``event_queue``: every
    event at ``end_tick`` runs, none after.  Not ``run_until_max_time``: its stop condition takes
    ``heapq.nsmallest(1, ...)`` of the whole queue before every event (and so does ``peek()``), a scan
    of all ``lps * population`` pending events per event, 12x slower on the default model, which
    would measure that scan rather than desimpy's scheduler.
    """
    scheduler = desimpy.EventScheduler()
    lps = params.lps
    lookahead = params.lookahead
    rate = 1.0 / params.mean
    remote = params.remote
    others = lps - 1
    end_tick = params.end_tick
    rngs = lp_rngs(params, seed)
    received = [0] * lps
    timeout = scheduler.timeout

    def arrive(lp: int, hops: int) -> None:
        received[lp] += 1
        rng = rngs[lp]
        if remote and rng.random() < remote:
            dst = rng.randrange(others)
            if dst >= lp:
                dst += 1
        else:
            dst = lp
        timeout(lookahead + int(rng.expovariate(rate)), partial(arrive, dst, hops + 1))

    for lp in range(lps):
        rng = rngs[lp]
        for _ in range(params.population):
            timeout(lookahead + int(rng.expovariate(rate)), partial(arrive, lp, 0))

    queue = scheduler.event_queue  # the scheduler's own heap (nothing here replaces it)

    def stop(_: Any) -> bool:
        return not queue or queue[0][0] > end_tick

    started = time.perf_counter()
    scheduler.run(stop, logging=False)
    loop_s = time.perf_counter() - started
    return Outcome(tuple(received), loop_s)


# -- salabim --------------------------------------------------------------------------------

if salabim is not None:

    class _SalabimToken(salabim.Component):
        """One in-flight PHOLD event: hold until it arrives, do the receiving LP's work, hold again."""

        def setup(self, lp: int, first: int, model: dict[str, Any]) -> None:
            self.lp = lp
            self.first = first
            self.model = model

        def process(self):  # a generator: the Environment runs with yieldless=False
            model = self.model
            received, rngs = model["received"], model["rngs"]
            lookahead, rate, remote, others = model["lookahead"], model["rate"], model["remote"], model["others"]
            hold = self.hold
            lp = self.lp
            yield hold(self.first)
            # The draws written out as in simulate_simpy_process's token, not shared through a function:
            # a call per event would add to this peer's cost what none of the others pays.
            while True:
                received[lp] += 1
                rng = rngs[lp]
                if remote and rng.random() < remote:
                    dst = rng.randrange(others)
                    if dst >= lp:
                        dst += 1
                else:
                    dst = lp
                yield hold(lookahead + int(rng.expovariate(rate)))
                lp = dst


def simulate_salabim(params: PholdParams, seed: int = DEFAULT_SEED) -> Outcome:
    """PHOLD in salabim: one component per in-flight event (as ``simulate_simpy_process``), ``yield self.hold(...)``.

    salabim has no callback or event-scheduling API: everything scheduled is a ``Component``'s
    process, and a component is on the event list once, so PHOLD's ``lps * population`` in-flight
    events are that many components, each holding until its arrival and then doing the receiving
    LP's work.  Of salabim's two process forms this is the generator one
    (``Environment(yieldless=False)``, ``yield self.hold(d)``): 1.7x the events/s of the greenlet
    form that salabim 24+ makes the default (``yieldless=True``, a plain ``self.hold(d)``) on the
    default model here (240k against 139k events/s; with 1,024 greenlets a switch costs more than a
    generator's ``send``).  A plain-function process, the nearest thing to a callback, is refused in
    yield mode and gets a new greenlet per activation in yieldless mode.  ``trace=False``, no
    animation, and ``random_seed=""`` (salabim leaves the ``random`` module alone; every LP draws
    from its own RNG anyway).  ``run(till=end_tick)``: the main component is scheduled at
    ``end_tick`` with priority ``inf``, so every event at ``end_tick`` runs first, none after.
    """
    env = salabim.Environment(trace=False, yieldless=False, random_seed="", set_numpy_random_seed=False)
    lps = params.lps
    rngs = lp_rngs(params, seed)
    received = [0] * lps
    model = {
        "received": received, "rngs": rngs, "lookahead": params.lookahead, "rate": 1.0 / params.mean,
        "remote": params.remote, "others": lps - 1,
    }  # fmt: skip
    for lp in range(lps):
        rng = rngs[lp]
        for _ in range(params.population):
            _SalabimToken(lp=lp, first=params.lookahead + int(rng.expovariate(model["rate"])), model=model, env=env)

    started = time.perf_counter()
    env.run(till=params.end_tick)
    loop_s = time.perf_counter() - started
    return Outcome(tuple(received), loop_s)


#: Benchmark name -> simulation function, in the order ``bench/engine.py`` runs them.  Only what can
#: run here: a peer whose library does not import, or ``tickpar_compiled`` without a compiled kernel,
#: is in :data:`UNAVAILABLE` instead, with the reason.
IMPLEMENTATIONS: dict[str, Callable[[PholdParams, int], Outcome]] = {}
#: Benchmark name -> why it cannot run here (one line).
UNAVAILABLE: dict[str, str] = {}
#: Benchmark name -> the distribution whose version it measures (None: the standard library only).
LIBRARIES: dict[str, str | None] = {
    "tickpar_sequential": "tickpar",
    "tickpar_compiled": "tickpar",
    "simpy_callbacks": "simpy",
    "simpy_process": "simpy",
    "desimpy": "desimpy",
    "salabim": "salabim",
    "heapq_bare": None,
}
_NO_COMPILED = (
    "no compiled kernel (`make test-compiled` builds build/compiled-tree; TICKPAR_COMPILED_TREE names another)"
)
for _name, _simulate, _missing in (
    ("tickpar_sequential", simulate_tickpar, None),
    ("tickpar_compiled", simulate_tickpar_compiled, None if compiled_tree() is not None else _NO_COMPILED),
    ("simpy_callbacks", simulate_simpy_callbacks, _SIMPY_MISSING),
    ("simpy_process", simulate_simpy_process, _SIMPY_MISSING),
    ("desimpy", simulate_desimpy, _DESIMPY_MISSING),
    ("salabim", simulate_salabim, _SALABIM_MISSING),
    ("heapq_bare", simulate_heapq, None),
):
    if _missing is None:
        IMPLEMENTATIONS[_name] = _simulate
    else:
        UNAVAILABLE[_name] = _missing


def kernel_of(name: str) -> str | None:
    """The kernel build a tickpar implementation runs (``pure`` or ``compiled``); None for a peer."""
    if name == "tickpar_compiled":
        return "compiled"  # its child process refuses to run on anything else
    if name == "tickpar_sequential":
        from tickpar.kernel import kernel_build

        return kernel_build()  # this process's kernel: compiled where the venv's is
    return None


def library_version(name: str) -> str | None:
    """``"<distribution> <version>"`` of the library implementation ``name`` measures; None for the bare loop."""
    dist = LIBRARIES.get(name)
    if dist is None:
        return None
    try:
        return f"{dist} {importlib.metadata.version(dist)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{dist} (version unknown)"


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
