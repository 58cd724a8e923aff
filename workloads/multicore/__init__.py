"""``multicore``: a gem5-like memory system, CPUs to DRAM, in integer ticks (1 tick = 1 ps).

The system, with gem5's component names::

    system.cpu<i>             clocked CPU: loads/stores from a seeded address stream (tickEvent, CPU_TICK)
    system.cpu<i>.dcache      private L1: set-associative tag array with LRU, MSHRs, dirty writebacks
    system.xbar               crossbar: one request layer per L2 bank, one response layer per L1
    system.l2.bank<b>         shared L2 banks, line-interleaved, set-associative, a busy-until tag port
    system.mem_ctrl<m>        memory controllers, page-interleaved: banks with open rows and
                              busy-until ticks, one data bus

Every message goes through a :meth:`Model.link` with ``link_latency`` ticks
(>= 1, the lookahead); what a component adds (lookup latency, layer
occupancy, DRAM timing) it adds inside itself, as gem5 does.  Payloads are
tuples of ints: ``(cmd, addr, issue_tick)`` between a CPU and its L1,
``(cmd, line, core)`` between an L1 and an L2 bank, ``(cmd, line, bank)``
between an L2 bank and a memory controller.

**How components pick ticks.**  As in gem5, both ways:

* relative to ``cur_tick``: :meth:`Clocked.clock_edge` (``clockEdge(n)``:
  ``cur_tick`` rounded up to the clock period, plus ``n`` periods), e.g. the
  CPU's next tick, an L1 hit's ready time;
* at absolute ticks computed earlier and stored: a packet's ready time set
  on arrival, a crossbar layer's, an L2 tag port's, a DRAM bank's and a data
  bus's busy-until, and the tick a response arrived at (its event's own
  ``when``), from which a stalled CPU resumes at the next clock edge.

Three queue kinds own the long-lived events:

* :class:`PacketQueue` (caches' ``cpuSidePort``/``memSidePort``) is gem5's
  ``PacketQueue``: packets sorted by ready time; ``schedSendEvent`` does
  ``when = max(when, cur_tick + 1)``, then ``schedule``, or ``reschedule``
  when a new packet is ready before the event's current tick (a fill that
  overtakes queued hits), so both calls are on the hot path;
* :class:`LayerQueue` (the crossbar's layers) and the memory controller's
  response queue hold packets whose ready times strictly increase (each one
  starts after the previous one's busy-until), so after sending one the
  event is scheduled at the next packet's *stored* ready time, unclamped,
  as gem5's ``MemCtrl::processRespondEvent`` does with
  ``respQueue.front()->readyTime``.

In a sequential run (or any correct one) a stored tick used this way is never
behind ``cur_tick``, and ``when == cur_tick`` in every handler; a strategy that
moves ``cur_tick`` past the running event (the split prototype: another
worker's pop) turns the CPU's resume edge, a layer's or the memory
controller's next send into a schedule in the past.

``direct_calls`` adds same-tick port calls (:meth:`Component.call`): on a
miss an L1 does a functional probe of the L2 bank's tag array, and before
sending on its memory side it asks the crossbar's request layer
``tryTiming``-style how long it is busy, holding the packet until then.

``warm_caches`` (on by default) starts from tag arrays that hold the working
sets, as after restoring a checkpoint, so a short run already shows
steady-state hits, misses, dirty writebacks and DRAM traffic.

The caches are not coherent (the shared region may be dirty in several L1s):
this is a timing model for the event loop, not a memory-consistency model.
The run ends when every CPU has issued ``requests_per_core`` requests and
every response has arrived: the queue drains (``end_tick`` is ``None``).

State for strategies that roll back (``optimistic``): every component
declares its ``state_attrs``; the port queues restore in place, the tag arrays
keep an undo log (:class:`LoggedTagArray`, switched to on the first save) and
the crossbar saves its layers in one tuple (see ``workloads/README.md``).

Statistics (:meth:`Multicore.stats`): ``sim_ticks`` (simulated time until the
last CPU has all its requests answered: the latest CPU's last response),
``mean_load_latency`` (ticks from a load's issue to its response reaching the
CPU, over every load) and ``l1_hit_rate`` (L1 hits over L1 lookups).
"""

from __future__ import annotations

from typing import Any

from tickpar.kernel.model import Model
from tickpar.kernel.params import Param, ParamError
from tickpar.plugins import Workload
from tickpar.verify.oracle import OracleRecord

from .caches import L1_HITS, L1_MISSES, L1Cache, L2Bank
from .cpu import CPU, CPU_LOAD_LATENCY, CPU_LOADS
from .crossbar import Crossbar
from .memory import MemCtrl
from .packets import LINE_BYTES, LINE_SHIFT
from .ports import LayerQueue, PacketQueue
from .tags import LoggedTagArray, TagArray

__all__ = [
    "CPU",
    "Crossbar",
    "L1Cache",
    "L2Bank",
    "LayerQueue",
    "LoggedTagArray",
    "MemCtrl",
    "Multicore",
    "PacketQueue",
    "TagArray",
]


class Multicore(Workload):
    name = "multicore"
    summary = "gem5-like memory system: clocked CPUs, private L1s, crossbar, banked L2, DRAM controllers"
    params = {
        "cores": Param(int, 4, "CPUs, each with a private L1 data cache", min=1, max=256),
        "requests_per_core": Param(
            int, 1000, "loads+stores each CPU issues; the run ends when all are answered", min=1, max=10**7
        ),
        "max_outstanding": Param(int, 4, "requests a CPU may have in flight before it stalls", min=1, max=256),
        "think_cycles": Param(
            int, 1, "CPU cycles of computation after each memory op, uniform in [0, think_cycles]", min=0, max=10**4
        ),
        "store_fraction": Param(float, 0.3, "fraction of memory ops that are stores", min=0.0, max=1.0),
        "stride": Param(int, 8, "bytes between consecutive addresses of a sequential run", min=1, max=1 << 20),
        "jump_prob": Param(
            float, 0.1, "probability that an access jumps to a random word instead of striding on", min=0.0, max=1.0
        ),
        "reuse_prob": Param(
            float,
            0.7,
            "probability that a jump goes back to one of the last 8 run starts (temporal locality)",
            min=0.0,
            max=1.0,
        ),
        "working_set_kib": Param(int, 64, "private working set per CPU, KiB", min=1, max=1 << 20),
        "shared_kib": Param(int, 256, "region shared by all CPUs, KiB (0: none)", min=0, max=1 << 20),
        "shared_fraction": Param(float, 0.2, "fraction of jumps that land in the shared region", min=0.0, max=1.0),
        "clock": Param(int, 500, "CPU, L1 and L2 clock period in ticks (1 tick = 1 ps: 500 = 2 GHz)", min=1, max=10**9),
        "xbar_clock": Param(int, 1000, "crossbar clock period in ticks (1000 = 1 GHz)", min=1, max=10**9),
        "link_latency": Param(
            int,
            500,
            "latency of every port-to-port link in ticks: the lookahead between components (500 = 1 CPU cycle)",
            min=1,
            max=10**9,
        ),
        "l1_kib": Param(int, 32, "L1 data cache size per CPU, KiB", min=1, max=1 << 20),
        "l1_assoc": Param(int, 4, "L1 associativity (ways per set, LRU)", min=1, max=1024),
        "l1_latency": Param(
            int,
            4,
            "L1 hit latency (tag+data), in clock periods (cycles); fills answer 1 cycle after arrival",
            min=1,
            max=10**6,
        ),
        "l2_banks": Param(int, 4, "shared L2 banks, line-interleaved", min=1, max=256),
        "l2_kib": Param(int, 64, "size of each L2 bank, KiB", min=1, max=1 << 24),
        "l2_assoc": Param(int, 8, "L2 associativity (ways per set, LRU)", min=1, max=1024),
        "l2_latency": Param(
            int,
            10,
            "L2 hit latency, in clock periods (cycles); fills answer 1 cycle after the tag port frees",
            min=1,
            max=10**6,
        ),
        "xbar_latency": Param(int, 2, "crossbar forwarding latency, in crossbar clock periods", min=1, max=10**6),
        "mem_ctrls": Param(int, 2, "memory controllers, interleaved by 4 KiB page", min=1, max=64),
        "mem_banks": Param(int, 8, "DRAM banks per controller, each with an open row and a busy-until", min=1, max=256),
        "mem_row_hit": Param(int, 14_000, "DRAM access latency on an open row, ticks", min=1, max=10**9),
        "mem_row_miss": Param(
            int, 42_000, "DRAM access latency on a row miss (precharge+activate), ticks", min=1, max=10**9
        ),
        "mem_burst": Param(int, 3_333, "data-bus occupancy per 64-byte burst, ticks", min=1, max=10**9),
        "warm_caches": Param(
            bool, True, "start with tag arrays holding the working sets (as after a checkpoint); false: cold"
        ),
        "direct_calls": Param(
            bool, False, "add same-tick port calls: L1 -> L2 functional probe, L1 -> crossbar layer tryTiming"
        ),
        "work_us": Param(float, 0.0, "synthetic work per event, microseconds", min=0.0, max=1e6),
    }
    statistics = {
        "sim_ticks": "simulated time until every CPU has all its requests answered, ticks",
        "mean_load_latency": "mean ticks from a load's issue to its response at the CPU",
        "l1_hit_rate": "L1 hits over L1 lookups",
    }

    def traits(self, params: dict[str, Any]) -> frozenset[str]:
        """Stored ticks (layers, DRAM responses, a CPU's resume edge) and several event names per cache
        always; direct calls with ``direct_calls``; CPUs ticking on shared clock edges from two cores;
        a long run from 1000 requests in all (cores x requests_per_core: thousands of events, several in
        flight; tests/test_split.py checks split's promised failure at that size over interleavings)."""
        traits = {"stored_ticks", "several_named_events"}
        if params["direct_calls"]:
            traits.add("direct_calls")
        if params["cores"] >= 2:
            traits.add("many_events_per_tick")
        if params["cores"] * params["requests_per_core"] >= 1000:
            traits.add("long_run")
        return frozenset(traits)

    def check_params(self, params: dict[str, Any]) -> None:
        what = "workload multicore parameter"
        for level in ("l1", "l2"):
            kib, assoc = params[f"{level}_kib"], params[f"{level}_assoc"]
            lines = kib * 1024 // LINE_BYTES
            if lines % assoc:
                raise ParamError(
                    f"{what} {level}_assoc={assoc} does not divide {level}_kib={kib} ({lines} lines of 64 bytes):"
                    f" choose an associativity that divides {lines}"
                )
        if params["shared_fraction"] > 0 and params["shared_kib"] == 0:
            raise ParamError(
                f"{what} shared_kib=0 leaves no shared region for shared_fraction={params['shared_fraction']}:"
                " set shared_kib >= 1 or shared_fraction=0"
            )
        if params["mem_row_hit"] > params["mem_row_miss"]:
            raise ParamError(
                f"{what} mem_row_hit={params['mem_row_hit']} is not allowed: at most mem_row_miss"
                f" ({params['mem_row_miss']})"
            )

    def build(self, model: Model, params: dict[str, Any]) -> None:
        p = params
        lat = p["link_latency"]
        cpus = [CPU(model, f"system.cpu{i}", i, p) for i in range(p["cores"])]
        l1s = [L1Cache(model, f"system.cpu{i}.dcache", i, p) for i in range(p["cores"])]
        xbar = Crossbar(model, "system.xbar", p)
        banks = [L2Bank(model, f"system.l2.bank{b}", b, p) for b in range(p["l2_banks"])]
        ctrls = [MemCtrl(model, f"system.mem_ctrl{m}", m, p) for m in range(p["mem_ctrls"])]
        for cpu, l1 in zip(cpus, l1s, strict=True):
            cpu.dcache_link = model.link(
                cpu, l1, "recv_timing_req", lat, event_name=f"{l1.name}.cpuSidePort.recvTimingReq"
            )
            l1.cpu_link = model.link(
                l1, cpu, "recv_timing_resp", lat, event_name=f"{cpu.name}.dcachePort.recvTimingResp"
            )
            l1.mem_link = model.link(
                l1, xbar, "recv_timing_req", lat, event_name=f"{xbar.name}.cpuSidePort{l1.index}.recvTimingReq"
            )
            to_l1 = model.link(xbar, l1, "recv_timing_resp", lat, event_name=f"{l1.name}.memSidePort.recvTimingResp")
            xbar.resp_layers.append(LayerQueue(xbar, f"respLayer{l1.index}", to_l1))
        for bank in banks:
            to_bank = model.link(
                xbar, bank, "recv_timing_req", lat, event_name=f"{bank.name}.cpuSidePort.recvTimingReq"
            )
            xbar.req_layers.append(LayerQueue(xbar, f"reqLayer{bank.index}", to_bank))
            bank.xbar_link = model.link(
                bank, xbar, "recv_timing_resp", lat, event_name=f"{xbar.name}.memSidePort{bank.index}.recvTimingResp"
            )
            for ctrl in ctrls:
                bank.mem_links.append(
                    model.link(bank, ctrl, "recv_timing_req", lat, event_name=f"{ctrl.name}.port.recvTimingReq")
                )
                ctrl.l2_links.append(
                    model.link(
                        ctrl, bank, "recv_timing_resp", lat, event_name=f"{bank.name}.memSidePort.recvTimingResp"
                    )
                )
        if p["direct_calls"]:
            for l1 in l1s:
                l1.xbar = xbar
                l1.banks = banks
                model.connect_direct(l1, xbar)
                for bank in banks:
                    model.connect_direct(l1, bank)
        if p["warm_caches"]:
            _warm(cpus, l1s, banks, p)
        model.end_tick = None

    def stats(self, record: OracleRecord) -> dict[str, float]:
        # Components by the names build() gives them: system.cpu<i> and system.cpu<i>.dcache.
        cpus = [e for name, e in record.components.items() if name.startswith("system.cpu") and name.count(".") == 1]
        l1s = [e for name, e in record.components.items() if name.startswith("system.cpu") and name.endswith(".dcache")]
        loads = sum(e["state"][CPU_LOADS] for e in cpus)
        hits = sum(e["state"][L1_HITS] for e in l1s)
        lookups = hits + sum(e["state"][L1_MISSES] for e in l1s)
        return {
            "sim_ticks": float(max((e["last_tick"] or 0 for e in cpus), default=0)),
            "mean_load_latency": sum(e["state"][CPU_LOAD_LATENCY] for e in cpus) / loads if loads else 0.0,
            "l1_hit_rate": hits / lookups if lookups else 0.0,
        }


def _warm(cpus: list[CPU], l1s: list[L1Cache], banks: list[L2Bank], p: dict[str, Any]) -> None:
    """Functional warm-up, as after restoring a checkpoint: fill the tag arrays with the working sets.

    Each L1 gets the first lines of its CPU's private region (dirty with
    probability ``store_fraction``, drawn from the L1's own RNG); the L2 banks
    get the regions' first lines round robin (shared region first), until
    the L2 is full.  Cost: one insert per cache line of capacity.
    """
    for cpu, l1 in zip(cpus, l1s, strict=True):
        base = cpu.private[0] >> LINE_SHIFT
        lines = min(cpu.private[1] // LINE_BYTES, l1.tags.sets * l1.tags.assoc)
        for k in range(lines):
            l1.tags.insert(base + k, l1.rng.random() < p["store_fraction"])
    regions = ([cpus[0].shared] if p["shared_kib"] else []) + [cpu.private for cpu in cpus]
    spans = [(base >> LINE_SHIFT, size // LINE_BYTES) for base, size in regions]
    budget = len(banks) * banks[0].tags.sets * banks[0].tags.assoc
    longest = max(n for _, n in spans)
    inserted = 0
    for k in range(longest):
        for first, n in spans:
            if k < n:
                line = first + k
                tags = banks[line % len(banks)].tags
                if not tags.probe(line):
                    tags.insert(line, False)
                inserted += 1
                if inserted >= budget:
                    return
