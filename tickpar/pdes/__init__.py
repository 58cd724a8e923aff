"""Parallel discrete-event simulation (PDES): the machinery of the partitioned strategies.

One module per job:

* :mod:`~tickpar.pdes.partition`: components -> LPs, from the coupling graph;
* :mod:`~tickpar.pdes.plan`: the :class:`~tickpar.pdes.plan.Plan` every LP agrees on, and the
  partitioner's weights (``partition_weights``: events per component of a profiled prefix, the same
  events per conservative window (``windows``), or count; ``events`` is the default)
  (assignment, lookahead, channels);
* :mod:`~tickpar.pdes.adaptive`: the partition of ``conservative``'s ``schedule=adaptive`` (``K >= P``
  LPs, as fine as the coupling allows without a shorter lookahead; the native engine hands them to the
  workers every window);
* :mod:`~tickpar.pdes.stamps`: gem5-order insertion stamps and cross-LP tie counts;
* :mod:`~tickpar.pdes.transport`: threads, socket (processes) and MPI transports;
* :mod:`~tickpar.pdes.packets`: the packet kinds LPs exchange;
* :mod:`~tickpar.pdes.lp`: the logical process (queue, outboxes, serving, start barrier);
* :mod:`~tickpar.pdes.sync`: the synchronisation policies, by name:
  :mod:`~tickpar.pdes.window` (YAWNS window barrier),
  :mod:`~tickpar.pdes.nullmsg` (Chandy–Misra–Bryant null messages) with
  :mod:`~tickpar.pdes.safra` (Safra's termination detection), and
  :mod:`~tickpar.pdes.quantum` (gem5's fixed quantum barrier, relaxed beyond
  the lookahead; the ``quantum`` strategy), and
  :mod:`~tickpar.pdes.timewarp` (Time Warp: optimistic LPs that save state,
  roll back on stragglers, send anti-messages and commit below GVT; the
  ``optimistic`` strategy) with :mod:`~tickpar.pdes.gvt` (global virtual
  time from a consistent cut over the FIFO channels);
* :mod:`~tickpar.pdes.errors`: LP errors across process boundaries;
* :mod:`~tickpar.pdes.launch`: threads, worker processes and MPI ranks;
* :mod:`~tickpar.pdes.mpi_rank`: the entry point of one MPI rank
  (``python -m tickpar.pdes.mpi_rank``).

A strategy (``strategies/conservative.py``, ``strategies/optimistic.py``) makes a plan with
:func:`~tickpar.pdes.plan.make_plan` and runs it with a launcher; the launched
LPs run the policy the plan names.

Layer ``pdes``.  May import: ``tickpar.plugins``, ``tickpar.verify``, ``tickpar.kernel``,
``tickpar.host``.
"""

__all__: list[str] = []
