"""Launching LPs: threads over one shared model, worker processes, or MPI ranks.

* :func:`run_threads`: one thread per LP over one shared model (built by the
  caller, with race detection), :class:`~tickpar.pdes.transport.ThreadTransport`.
* :func:`run_processes`: one ``multiprocessing`` process per LP (``fork``, or
  ``spawn``; ``fork`` falls back to ``spawn`` when the caller has other threads
  alive, since forking a threaded process is unsafe); each builds the model from
  the spec; LPs talk over non-blocking socket pairs
  (:class:`~tickpar.pdes.transport.SocketTransport`).
* :func:`run_mpi`: ``mpiexec -n N python -m tickpar.pdes.mpi_rank JOB OUT`` with
  the ``mpiexec`` next to ``sys.executable`` (MPICH from PyPI installs it into
  the venv); see :mod:`tickpar.pdes.mpi_rank`.  Inside a SLURM allocation (a
  batch job or a step of one: ``SLURM_JOB_ID`` is set) it is ``mpiexec
  -launcher fork``: the ranks start on the CPUs the job already holds
  (:func:`mpi_command`); the run's statistics say how (:func:`mpi_launch_stats`).

Each returns one :class:`~tickpar.pdes.lp.LPResult` per LP, in LP order.
:func:`run_partition` is what one process or rank does: build, start, run.
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
from pathlib import Path
from typing import Any

from tickpar.host.affinity import pinned, worker_cpus
from tickpar.host.paths import REPO_ROOT
from tickpar.kernel.eventq import EventQueue
from tickpar.kernel.model import Model
from tickpar.pdes.errors import describe_error, pick_error
from tickpar.pdes.lp import LogicalProcess, LPResult
from tickpar.pdes.plan import Plan
from tickpar.pdes.sync import sync_policy
from tickpar.pdes.transport import SocketTransport, ThreadTransport, Transport
from tickpar.plugins import RunSpec
from tickpar.verify.oracle import OracleRecord, failure_record

__all__ = [
    "START_METHODS",
    "lp_main",
    "mpi_command",
    "mpi_launch_stats",
    "mpiexec_path",
    "process_main",
    "run_mpi",
    "run_partition",
    "run_processes",
    "run_threads",
    "slurm_job_id",
    "usable_cores",
]

START_METHODS = ("fork", "spawn")


def mpiexec_path() -> Path:
    """The ``mpiexec`` of this interpreter's environment (MPICH from PyPI puts it next to python)."""
    return Path(sys.executable).parent / "mpiexec"


def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# -- one LP in its own process or rank ------------------------------------------------------------
def lp_main(plan: Plan, index: int, model: Model, transport: Transport) -> LPResult:
    """One LP of a process or MPI backend, on a model private to this process: wire, start, run.

    Components of other LPs stay on a placeholder queue and never run.  If a
    component's ``init`` fails, the LP still takes part in the protocol, so the
    other LPs are told and stop.
    """
    foreign = EventQueue("foreign")
    for comp in model.components:
        comp.queue = foreign
    lp = LogicalProcess(plan, index, model, transport, sync_policy(plan))
    lp.attach()
    try:
        model.start(components=lp.own)
    except BaseException as exc:
        return lp.abort_start(exc)
    return lp.run()


def run_partition(spec: RunSpec, plan: Plan, index: int, transport: Transport) -> LPResult:
    """Build the model from ``spec`` and run LP ``index`` of ``plan`` on it; a failure to build is a crash."""
    started = time.perf_counter()
    try:
        model = spec.build_model()
        built = time.perf_counter()
        result = lp_main(plan, index, model, transport)
        result.stats["build_s"] = built - started
    except BaseException as exc:
        err = describe_error(exc, index)
        result = LPResult(index, failure_record("crash", err["message"]), {}, err)
    return result


def process_main(
    spec_data: dict[str, Any],
    plan_data: dict[str, Any],
    index: int,
    socks: dict[int, socket.socket],
    conn: Any,
    inherited: list[Any],
) -> None:
    """Entry point of one worker process of :func:`run_processes` (importable, so ``spawn`` works too).

    ``inherited`` are the parent's other sockets and pipe ends that a ``fork``
    child got a copy of; closing them makes a dead LP visible as end-of-file.
    """
    for obj in inherited:
        try:
            obj.close()
        except OSError:
            pass
    transport = SocketTransport(index, socks)
    try:
        result = run_partition(RunSpec.from_dict(spec_data), Plan.from_dict(plan_data), index, transport)
        conn.send(result)
    finally:
        conn.close()
        transport.close()


# -- backends ----------------------------------------------------------------------------------------
def run_threads(model: Model, plan: Plan) -> list[LPResult]:
    """One thread per LP over ``model`` (shared); re-raises the original exception of the LP that failed first."""
    transports = ThreadTransport.group(plan.parts)
    lps = [LogicalProcess(plan, i, model, transports[i], sync_policy(plan)) for i in range(plan.parts)]
    for lp in lps:
        lp.attach()
    model.start()
    results: list[LPResult | None] = [None] * plan.parts
    cpus = worker_cpus(plan.parts)  # each LP on a core of its own (tickpar.host.affinity)

    def body(i: int) -> None:
        with pinned(cpus, i):
            results[i] = lps[i].run()

    threads = [threading.Thread(target=body, args=(i,), name=f"pdes-lp{i}") for i in range(plan.parts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Re-raise the original exception of the LP that caused a failure (keeps its traceback).
    err = pick_error(r.error for r in results if r is not None)
    if err is not None and lps[err["lp"]].exception is not None:
        raise lps[err["lp"]].exception
    return [r for r in results if r is not None]


def run_processes(spec: RunSpec, plan: Plan, start_method: str) -> tuple[list[LPResult], str]:
    """One process per LP; returns the results and the start method actually used."""
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
                name=f"pdes-lp{i}",
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
                        raise RuntimeError(f"LP process {i} exited with status {procs[i].exitcode} before reporting")
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


def slurm_job_id() -> str | None:
    """The SLURM job this process runs in (a batch job or a step of one), or None outside SLURM."""
    return os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID") or None


def _launcher() -> list[str]:
    """``mpiexec``, or inside a SLURM allocation ``mpiexec -launcher fork``.

    Inside an allocation MPICH's ``mpiexec`` (hydra) starts its proxy with ``srun``: from within a job
    step (Snakemake's SLURM jobs run their command in ``srun -n1 -c N``) that is a nested step asking
    for CPUs the enclosing step holds, and Slurm (22.05) retries it for ever ("step creation temporarily
    disabled ... Requested nodes are busy").  A cell's ranks fit on one node (at most its usable cores,
    :meth:`Conservative.validate`), so they are forked on the CPUs the job already holds.
    """
    exe = str(mpiexec_path())
    return [exe, "-launcher", "fork"] if slurm_job_id() else [exe]


def mpi_command(parts: int, job: Path, out: Path) -> list[str]:
    """The ``mpiexec`` command line that runs ``parts`` ranks of :mod:`tickpar.pdes.mpi_rank`."""
    return [*_launcher(), "-n", str(parts), sys.executable, "-m", "tickpar.pdes.mpi_rank", str(job), str(out)]


def mpi_launch_stats() -> dict[str, Any]:
    """How :func:`run_mpi` starts its ranks, for a run's statistics: the ``mpiexec``, the launch command and
    the SLURM job the ranks ran in (None outside SLURM)."""
    return {"mpiexec": str(mpiexec_path()), "mpi_launch": " ".join(_launcher()), "slurm_job_id": slurm_job_id()}


def run_mpi(spec: RunSpec, plan: Plan) -> list[LPResult]:
    """``plan.parts`` MPI ranks under ``mpiexec``; a hang past ``4 * stall_s + 60`` s is an error."""
    with tempfile.TemporaryDirectory(prefix="tickpar-mpi-") as tmp:
        job_path = Path(tmp, "job.json")
        out_path = Path(tmp, "out.json")
        job_path.write_text(json.dumps({"spec": spec.to_dict(), "plan": plan.to_dict()}))
        limit = None if plan.stall_s == 0 else 4 * plan.stall_s + 60
        # Run from the folder that holds this tickpar package, so the ranks import the same one.
        home = REPO_ROOT
        proc = subprocess.Popen(
            mpi_command(plan.parts, job_path, out_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=home
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
