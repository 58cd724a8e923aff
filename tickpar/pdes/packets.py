"""The packet kinds LPs exchange (the first element of every packet).

``(DATA, messages, time)``: the messages for the receiver and the sender's
time figure (its local next time under window sync, its promise under
null-message sync).  ``(TOKEN, count, black)``: Safra's termination token.
``(STOP,)``: global quiescence detected.  ``(ABORT, error)``: the sender
failed.  ``(CLOSE,)``: the sender sends nothing more.  ``(READY,)``: the
sender is built and started (the start barrier of every run).

Optimistic (Time Warp) LPs (:mod:`tickpar.pdes.timewarp`, :mod:`tickpar.pdes.gvt`):
``(MSG, messages)``: messages sent speculatively, each ``(link id, when,
payload, source key)``.  ``(ANTI, sources)``: anti-messages, each cancelling
the message with that source key.  ``(MARK, round)``: the sender's cut for a
GVT round (on every channel).  ``(REPORT, round, key)``: an LP's smallest key
at its cut and in its channels, to LP 0.  ``(GVT, round, key)``: the round's
global virtual time, from LP 0.  ``(GVT_REQUEST,)``: the sender is idle and
asks LP 0 for a round; ``(CLOSE,)`` ends a run, from every other LP to LP 0.
"""

from __future__ import annotations

__all__ = ["ABORT", "ANTI", "CLOSE", "DATA", "GVT", "GVT_REQUEST", "MARK", "MSG", "READY", "REPORT", "STOP", "TOKEN"]

DATA, TOKEN, STOP, ABORT, CLOSE, READY = range(6)
MSG, ANTI, MARK, REPORT, GVT, GVT_REQUEST = range(6, 12)
