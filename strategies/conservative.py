"""``conservative``: the model partitioned into logical processes (LPs), synchronised conservatively.

Contract.  Components are partitioned into ``workers`` LPs by
:func:`tickpar.partition.partition` (``partition=auto`` never separates
components joined by a zero-latency link or a direct call, maximises the
lookahead and then minimises cut edges within a balance cap; ``roundrobin``
and ``linear`` ignore the graph).  Each LP has its own
:class:`~tickpar.eventq.EventQueue` and runs only its own components; links
that cross LPs deliver through messages, batched per destination LP per
round.  The lookahead is the smallest positive latency of a link that
crosses LPs (or the ``lookahead`` option, which may also be set larger, as
gem5's ``sim_quantum`` is: then it is a claim that the run checks).

Synchronisation (``sync``, see :mod:`tickpar.lp`): ``window`` runs every LP to
``global next event time + lookahead`` and exchanges messages at a barrier
(YAWNS; gem5's quantum barrier); ``null-message`` is Chandy–Misra–Bryant,
each LP running strictly below the smallest clock of its input channels, with
Safra's token for global quiescence when the workload has no end tick.

Backends (``backend``): ``threads`` (one thread per LP over one shared model
built with race detection; gives speedup only with GIL-releasing work),
``processes`` (one process per LP, ``multiprocessing`` with
``start_method=fork`` (default; falls back to ``spawn`` if the caller has
other threads alive, since forking a threaded process is unsafe) or
``spawn``; each process builds the model from the spec; LPs talk over
non-blocking socket pairs), ``mpi`` (``mpiexec -n N python -m tickpar.mpi_rank
JOB OUT``, with the ``mpiexec`` next to ``sys.executable``: MPICH from PyPI
installs it into the venv; at most one rank per core unless
``oversubscribe=true``, because MPICH ranks spin while they wait).

Verdicts.  Under ``order=canonical`` every backend and both syncs are
``exact`` (a message always reaches its receiver before the receiver runs
anything at its tick, and the canonical tie key is the sender's own).  A
message that crosses LPs with less than the lookahead (a cut zero-latency
link with ``partition=roundrobin``, or a ``lookahead`` option larger than a
link's latency) raises :class:`~tickpar.plugins.LookaheadError`: verdict
``causality``, "lookahead violation".  A direct call across LPs cannot be
simulated at all and is rejected before the run, with the same verdict.
Under ``order=gem5`` each LP serves its bins LIFO by its own insertions, and
messages are inserted at the barrier, as gem5's ``handleAsyncInsertions``
does: results may differ from the single queue where a bin mixes events from
different LPs.  The strategy counts those ties (``gem5_cross_lp_ties``) and
those whose order the single-queue run reverses (``gem5_tie_reorders``; see
:mod:`tickpar.lp`); it promises no verdict in gem5 order.  Under gem5 order
with ``null-message`` the insertion order of messages depends on when they
arrive, so results may also vary from run to run (gem5's own
nondeterminism); ``window`` delivers in LP order and is deterministic.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tickpar.lp import (
    SYNCS,
    LogicalProcess,
    LPResult,
    Plan,
    ThreadTransport,
    error_to_exception,
    pick_error,
    process_main,
)
from tickpar.model import Model
from tickpar.oracle import OracleRecord, merge
from tickpar.params import Param, ParamError
from tickpar.partition import METHODS, Partition, partition_model
from tickpar.plugins import LookaheadError, RunSpec, Strategy, StrategyResult, base_stats
from tickpar.work import calibrate

BACKENDS = ("threads", "processes", "mpi")
START_METHODS = ("fork", "spawn")


def mpiexec_path() -> Path:
    """The ``mpiexec`` of this interpreter's environment (MPICH from PyPI puts it next to python)."""
    return Path(sys.executable).parent / "mpiexec"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def make_plan(model: Model, spec: RunSpec, workers: int, options: dict[str, Any]) -> tuple[Plan, Partition]:
    """Partition ``model`` and fix everything the LPs must agree on; rejects direct calls across LPs."""
    part = partition_model(model, workers, options["partition"])
    for a, b in model.direct:
        if part.lp_of[a.id] != part.lp_of[b.id]:
            raise LookaheadError(
                f"direct call {a.name} -> {b.name} crosses LPs {part.lp_of[a.id]} and {part.lp_of[b.id]} "
                f"(zero lookahead; partition={part.method})"
            )
    channels = sorted(
        {
            (part.lp_of[link.src.id], part.lp_of[link.dst.id])
            for link in model.links
            if part.lp_of[link.src.id] != part.lp_of[link.dst.id]
        }
    )
    lookahead = options.get("lookahead")
    if lookahead is None:
        lookahead = part.lookahead
        if lookahead is None and part.min_cut_latency is not None:
            lookahead = 1  # only zero-latency links are cut: the smallest positive increment
    plan = Plan(
        parts=workers,
        lp_of=part.lp_of,
        lookahead=lookahead if channels else None,
        end_tick=model.end_tick,
        sync=options["sync"],
        order=spec.order,
        channels=tuple(channels),
        stall_s=float(options["stall_s"]),
    )
    return plan, part


class Conservative(Strategy):
    name = "conservative"
    summary = "LPs with own queues and lookahead: window barriers (YAWNS, gem5 quantum) or null messages (CMB)"
    options = {
        "sync": Param(str, "window", "window (barrier every lookahead) or null-message (Chandy-Misra-Bryant)",
                      choices=SYNCS),
        "backend": Param(str, "threads", "threads (shared model), processes (multiprocessing) or mpi (mpi4py)",
                         choices=BACKENDS),
        "partition": Param(str, "auto", "auto (graph partitioner), roundrobin or linear (by component id)",
                           choices=METHODS),
        "lookahead": Param(int, None, "ticks per window/promise; none: smallest latency crossing LPs",
                           min=1, nullable=True),
        "oversubscribe": Param(bool, False, "backend=mpi: allow more ranks than cores (MPICH ranks spin)"),
        "start_method": Param(str, "fork", "backend=processes: multiprocessing start method", choices=START_METHODS),
        "stall_s": Param(float, 120.0, "an LP waiting longer than this for a packet is a deadlock (0: no limit)",
                         min=0.0, max=86400.0),
    }
    orders = ("canonical",)

    # -- contract ------------------------------------------------------------------------------
    def validate(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> None:
        super().validate(spec, workers, options)
        if options.get("backend") == "mpi":
            exe = mpiexec_path()
            if not exe.exists():
                raise ParamError(f"backend=mpi needs {exe} (pip install mpich mpi4py into this environment)")
            try:
                import mpi4py  # noqa: F401
            except ImportError:
                raise ParamError("backend=mpi needs mpi4py (pip install mpi4py)") from None
            cores = usable_cores()
            if workers > cores and not options.get("oversubscribe", False):
                raise ParamError(
                    f"workers={workers} is not allowed for backend=mpi on {cores} cores: MPICH ranks spin while "
                    "waiting (set oversubscribe=true to run anyway)"
                )

    def expected_verdict(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> str | None:
        """``exact`` under canonical order when no link or call crosses LPs faster than the lookahead.

        ``causality`` when a direct call crosses LPs (rejected before the run);
        ``None`` (not promised) under gem5 order, or when a cut link is faster
        than the lookahead (a violation only if a message takes it).
        """
        if spec.order != "canonical":
            return None
        if options.get("partition", "auto") == "auto" and options.get("lookahead") is None:
            return "exact"
        model = spec.build_model(work="none")
        try:
            plan, part = make_plan(model, spec, workers, options)
        except LookaheadError:
            return "causality"
        if plan.lookahead is not None and any(
            link.latency < plan.lookahead
            for link in model.links
            if part.lp_of[link.src.id] != part.lp_of[link.dst.id]
        ):
            return None
        return "exact"

    def uses_processes(self, options: dict[str, Any]) -> bool:
        return options.get("backend") in {"processes", "mpi"}

    # -- running -----------------------------------------------------------------------------------
    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        started = time.perf_counter()
        backend = options["backend"]
        extra: dict[str, Any] = {}
        if backend == "threads":
            model = spec.build_model(detect_races=True)
            plan, part = make_plan(model, spec, workers, options)
            results = self._run_threads(model, plan)
        else:
            # The parent builds the model only to partition it (no work calibration); each LP builds its own.
            plan, part = make_plan(spec.build_model(work="none"), spec, workers, options)
            if backend == "processes":
                # Calibrated once here, a forked LP inherits the rate (cached per process) instead of measuring.
                calibrate(spec.work)
                results, extra["start_method"] = self._run_processes(spec, plan, options["start_method"])
            else:
                results = self._run_mpi(spec, plan)
                extra["mpiexec"] = str(mpiexec_path())
        wall = time.perf_counter() - started
        results.sort(key=lambda r: r.index)
        err = pick_error(r.error for r in results)
        if err is not None:
            raise error_to_exception(err)
        record = merge([r.record for r in results])
        if backend == "threads":
            # One shared model: every LP's record carries all of its races.
            record.races = [asdict(r) for r in model.races]
        stats = self._stats(results, record, plan, part, options, wall)
        stats.update(extra)
        return StrategyResult(record, stats)

    def _run_threads(self, model: Model, plan: Plan) -> list[LPResult]:
        transports = ThreadTransport.group(plan.parts)
        lps = [LogicalProcess(plan, i, model, transports[i]) for i in range(plan.parts)]
        for lp in lps:
            lp.attach()
        model.start()
        results: list[LPResult | None] = [None] * plan.parts

        def body(i: int) -> None:
            results[i] = lps[i].run()

        threads = [threading.Thread(target=body, args=(i,), name=f"conservative-lp{i}") for i in range(plan.parts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Re-raise the original exception of the LP that caused a failure (keeps its traceback).
        err = pick_error(r.error for r in results if r is not None)
        if err is not None and lps[err["lp"]].exception is not None:
            raise lps[err["lp"]].exception
        return [r for r in results if r is not None]

    def _run_processes(self, spec: RunSpec, plan: Plan, start_method: str) -> tuple[list[LPResult], str]:
        n = plan.parts
        if start_method == "fork" and threading.active_count() > 1:
            start_method = "spawn"  # never fork a process that has other threads running
        ctx = mp.get_context(start_method)
        pairs = {(i, j): socket.socketpair() for i in range(n) for j in range(i + 1, n)}
        pipes = [ctx.Pipe(duplex=False) for _ in range(n)]
        everything: list[Any] = [s for pair in pairs.values() for s in pair] + [c for pipe in pipes for c in pipe]
        procs = []
        for i in range(n):
            socks = {}
            for (a, b), (sa, sb) in pairs.items():
                if a == i:
                    socks[b] = sa
                elif b == i:
                    socks[a] = sb
            mine = set(map(id, socks.values())) | {id(pipes[i][1])}
            inherited = [o for o in everything if id(o) not in mine] if start_method == "fork" else []
            procs.append(
                ctx.Process(
                    target=process_main,
                    args=(spec.to_dict(), plan.to_dict(), i, socks, pipes[i][1], inherited),
                    name=f"conservative-lp{i}",
                    daemon=True,
                )
            )
        try:
            for p in procs:
                p.start()
            for pair in pairs.values():
                for s in pair:
                    s.close()
            for _r, w in pipes:
                w.close()
            results: dict[int, LPResult] = {}
            waiting = {pipes[i][0]: i for i in range(n)}
            sentinels = {procs[i].sentinel: i for i in range(n)}
            while waiting:
                ready = mp_connection.wait(list(waiting) + [s for s, i in sentinels.items() if i not in results])
                for obj in ready:
                    if obj in waiting:
                        i = waiting.pop(obj)
                        try:
                            results[i] = obj.recv()
                        except EOFError:
                            raise RuntimeError(
                                f"LP process {i} exited with status {procs[i].exitcode} before reporting"
                            ) from None
                    else:
                        i = sentinels[obj]
                        conn = pipes[i][0]
                        if i not in results and conn in waiting and not conn.poll():
                            procs[i].join()
                            raise RuntimeError(
                                f"LP process {i} exited with status {procs[i].exitcode} before reporting"
                            )
            for p in procs:
                p.join()
            return [results[i] for i in range(n)], start_method
        finally:
            for p in procs:
                if p.is_alive():
                    p.terminate()
                    p.join(5)
                    if p.is_alive():
                        p.kill()
                        p.join()
            for r, _w in pipes:
                r.close()

    def _run_mpi(self, spec: RunSpec, plan: Plan) -> list[LPResult]:
        with tempfile.TemporaryDirectory(prefix="tickpar-mpi-") as tmp:
            job_path = Path(tmp, "job.json")
            out_path = Path(tmp, "out.json")
            job_path.write_text(json.dumps({"spec": spec.to_dict(), "plan": plan.to_dict()}))
            cmd = [
                str(mpiexec_path()),
                "-n",
                str(plan.parts),
                sys.executable,
                "-m",
                "tickpar.mpi_rank",
                str(job_path),
                str(out_path),
            ]
            limit = None if plan.stall_s == 0 else 4 * plan.stall_s + 60
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).resolve().parent.parent
            )
            try:
                _out, err = proc.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
                raise RuntimeError(f"mpiexec did not finish within {limit:g} s") from None
            if not out_path.exists():
                tail = " | ".join(err.decode(errors="replace").strip().splitlines()[-3:])
                raise RuntimeError(f"mpiexec exited with status {proc.returncode} and no result: {tail}")
            data = json.loads(out_path.read_text())
        return [
            LPResult(r["index"], OracleRecord.from_dict(r["record"]), r["stats"], r["error"]) for r in data["results"]
        ]

    # -- statistics --------------------------------------------------------------------------------
    def _stats(
        self,
        results: list[LPResult],
        record: OracleRecord,
        plan: Plan,
        part: Partition,
        options: dict[str, Any],
        wall: float,
    ) -> dict[str, Any]:
        def total(key: str) -> Any:
            return sum(r.stats.get(key, 0) for r in results)

        served = total("served")
        if plan.sync == "window" or plan.parts == 1:
            batches = max(r.stats.get("windows", 0) for r in results)
        else:
            batches = total("rounds")
        loop_s = max(r.stats.get("loop_s", 0.0) for r in results)
        stats = base_stats(plan.parts)
        stats.update(
            events=record.events,
            batches=batches,
            mean_events_per_batch=served / batches if batches else 0.0,
            lock_waits=0,
            messages=total("messages"),
            null_messages=total("null_messages"),
            idle_s=[round(r.stats.get("idle_s", 0.0), 6) for r in results],
        )
        stats.update(part.describe())
        stats.update(
            sync=plan.sync,
            backend=options["backend"],
            lookahead=plan.lookahead,
            served=served,
            events_per_lp=[r.stats.get("served", 0) for r in results],
            windows=max(r.stats.get("windows", 0) for r in results),
            rounds=total("rounds"),
            packets=total("packets"),
            dropped_after_end=total("dropped_after_end"),
            loop_s=loop_s,
            cpu_s=[round(r.stats.get("cpu_s", 0.0), 6) for r in results],
            setup_s=max(0.0, wall - loop_s),
        )
        if plan.order == "gem5":
            stats.update(
                gem5_cross_lp_ties=total("gem5_cross_lp_ties"),
                gem5_tie_reorders=total("gem5_tie_reorders"),
                gem5_tie_unresolved=total("gem5_tie_unresolved"),
            )
        return stats
