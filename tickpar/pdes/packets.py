"""The packet kinds LPs exchange (the first element of every packet).

``(DATA, messages, time)``: the messages for the receiver and the sender's
time figure (its local next time under window sync, its promise under
null-message sync).  ``(TOKEN, count, black)``: Safra's termination token.
``(STOP,)``: global quiescence detected.  ``(ABORT, error)``: the sender
failed.  ``(CLOSE,)``: the sender sends nothing more.  ``(READY,)``: the
sender is built and started (the start barrier of every run).
"""

from __future__ import annotations

__all__ = ["ABORT", "CLOSE", "DATA", "READY", "STOP", "TOKEN"]

DATA, TOKEN, STOP, ABORT, CLOSE, READY = range(6)
