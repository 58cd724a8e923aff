"""Synchronisation policies: what an LP runs when, and how the LPs agree that the run is over.

A policy is an object made per LP from the :class:`~tickpar.pdes.plan.Plan`
(``policy_class(plan)``) with:

* ``name`` and ``checks_lookahead`` (whether the LP's sink raises
  :class:`~tickpar.plugins.LookaheadError` for a message sent less than the
  lookahead ahead);
* ``run(lp)``: drive :class:`~tickpar.pdes.lp.LogicalProcess` to the end with
  its public primitives (serve up to a bound, take outboxes, send, wait,
  deliver); raise :class:`~tickpar.pdes.errors.Aborted` when a peer failed;
* ``abort(lp)``: tell the peers this LP failed (``lp.error``) and take part in
  the ending, so no peer waits for it;
* ``abandon(lp)``: a peer aborted during the start barrier: end quietly;
* optionally ``stats()``: the policy's own figures for this LP (a dict),
  added to the LP's result statistics (e.g. the quantum policy's late events).

:data:`SYNCS` names the policies a plan may ask for.  A new policy (e.g. gem5's
fixed-quantum barrier, :class:`~tickpar.pdes.quantum.QuantumSync`, a
:class:`~tickpar.pdes.window.WindowSync` with another ``window_end``) is one
class and one entry here; every transport and launcher
works with it unchanged.
"""

from __future__ import annotations

from typing import Any

from tickpar.pdes.lp import SyncPolicy
from tickpar.pdes.nullmsg import NullMessageSync
from tickpar.pdes.plan import Plan
from tickpar.pdes.quantum import QuantumSync
from tickpar.pdes.timewarp import OptimisticSync
from tickpar.pdes.window import WindowSync

__all__ = ["SYNCS", "SyncPolicy", "sync_policy"]


#: Policy name -> class (instantiated once per LP with the plan).
SYNCS: dict[str, Any] = {
    WindowSync.name: WindowSync,
    NullMessageSync.name: NullMessageSync,
    QuantumSync.name: QuantumSync,
    OptimisticSync.name: OptimisticSync,
}


def sync_policy(plan: Plan) -> SyncPolicy:
    """A fresh policy object for one LP of ``plan`` (``plan.sync`` names it)."""
    try:
        cls = SYNCS[plan.sync]
    except KeyError:
        raise ValueError(f"sync {plan.sync!r} is not allowed: choose one of {', '.join(SYNCS)}") from None
    return cls(plan)
