"""One MPI rank of the ``conservative`` strategy: ``python -m tickpar.mpi_rank JOB.json OUT.json``.

The strategy starts ``mpiexec -n N <python> -m tickpar.mpi_rank JOB OUT`` with
the ``mpiexec`` that sits next to the Python interpreter (MPICH from PyPI puts
it in the virtual environment's ``bin/``).  ``JOB`` holds the run spec and the
:class:`~tickpar.lp.Plan` (the partition every rank must agree on); rank ``i``
builds the whole model from the spec (a pure function of it), runs LP ``i`` on
:class:`~tickpar.lp.MPITransport`, and the results are gathered on rank 0,
which writes ``OUT``: ``{"results": [{"index", "record", "stats", "error"}, ...]}``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]


def _result_dict(res: Any) -> dict[str, Any]:
    return {"index": res.index, "record": res.record.to_dict(with_traces=True), "stats": res.stats, "error": res.error}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tickpar.mpi_rank JOB.json OUT.json", file=sys.stderr)
        return 2
    from mpi4py import MPI

    from tickpar.lp import MPITransport, Plan, lp_main
    from tickpar.oracle import failure_record
    from tickpar.plugins import RunSpec

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    started = time.perf_counter()
    job = json.loads(Path(argv[0]).read_text())
    plan = Plan.from_dict(job["plan"])
    if comm.Get_size() != plan.parts:
        if rank == 0:
            print(f"tickpar.mpi_rank: {comm.Get_size()} ranks for {plan.parts} LPs", file=sys.stderr)
        return 2
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    transport = MPITransport(comm, yield_cpu=comm.Get_size() > cores)
    try:
        spec = RunSpec.from_dict(job["spec"])
        model = spec.build_model()
        built = time.perf_counter()
        result = lp_main(plan, rank, model, transport)
        out = _result_dict(result)
        out["stats"]["build_s"] = built - started
    except BaseException as exc:  # a rank that cannot even build reports a crash
        rec = failure_record("crash", f"rank {rank}: {type(exc).__name__}: {exc}")
        error = {"kind": "crash", "message": f"rank {rank}: {type(exc).__name__}: {exc}", "lp": rank}
        out = {"index": rank, "record": rec.to_dict(), "stats": {}, "error": error}
    gathered = comm.gather(out, root=0)
    if rank == 0:
        tmp = Path(argv[1] + ".tmp")
        tmp.write_text(json.dumps({"results": gathered}, default=str))
        os.replace(tmp, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
