"""One MPI rank of a partitioned run: ``python -m tickpar.pdes.mpi_rank JOB.json OUT.json``.

:func:`tickpar.pdes.launch.run_mpi` starts ``mpiexec -n N <python> -m
tickpar.pdes.mpi_rank JOB OUT`` with the ``mpiexec`` that sits next to the
Python interpreter (MPICH from PyPI puts it in the virtual environment's
``bin/``).  ``JOB`` holds the run spec and the :class:`~tickpar.pdes.plan.Plan`
(the partition every rank must agree on); rank ``i`` builds the whole model from
the spec (a pure function of it), runs LP ``i`` on
:class:`~tickpar.pdes.transport.MPITransport`, and the results are gathered on
rank 0, which writes ``OUT``: ``{"results": [{"index", "record", "stats",
"error"}, ...]}``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Run this rank's LP of the job in ``argv[0]``; rank 0 writes every rank's result to ``argv[1]``."""
    if len(argv) != 2:
        print("usage: python -m tickpar.pdes.mpi_rank JOB.json OUT.json", file=sys.stderr)
        return 2
    from mpi4py import MPI

    from tickpar.pdes.launch import run_partition, usable_cores
    from tickpar.pdes.plan import Plan
    from tickpar.pdes.transport import MPITransport
    from tickpar.plugins import RunSpec

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    job = json.loads(Path(argv[0]).read_text())
    plan = Plan.from_dict(job["plan"])
    if comm.Get_size() != plan.parts:
        if rank == 0:
            print(f"tickpar.pdes.mpi_rank: {comm.Get_size()} ranks for {plan.parts} LPs", file=sys.stderr)
        return 2
    transport = MPITransport(comm, yield_cpu=comm.Get_size() > usable_cores())
    result = run_partition(RunSpec.from_dict(job["spec"]), plan, rank, transport)
    out: dict[str, Any] = {
        "index": result.index,
        "record": result.record.to_dict(with_traces=True),
        "stats": result.stats,
        "error": result.error,
    }
    gathered = comm.gather(out, root=0)
    if rank == 0:
        tmp = Path(argv[1] + ".tmp")
        tmp.write_text(json.dumps({"results": gathered}, default=str))
        os.replace(tmp, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
