"""Safra's termination detection for null-message runs without an end tick.

Every LP counts data messages sent minus received and turns *black* when it
receives one.  LP 0, when passive, sends a white token with count 0 around the
ring ``0 -> 1 -> ... -> 0``; each passive LP adds its count, blackens the token
if it is black itself, turns white and passes it on.  When the token comes back
white, LP 0 is white, and the total count is zero, nothing is in flight and
every LP is passive: LP 0 broadcasts ``STOP``.  Otherwise it starts a new round.
"""

from __future__ import annotations

from tickpar.pdes.lp import LogicalProcess
from tickpar.pdes.packets import STOP, TOKEN

__all__ = ["SafraTermination"]


class SafraTermination:
    """One LP's part of Safra's algorithm (call :meth:`sent`/:meth:`received`, :meth:`on_token`, :meth:`passive`)."""

    def __init__(self) -> None:
        self.count = 0
        """Data messages sent minus received."""
        self.black = False
        self.token: tuple[int, bool] | None = None
        self.round_open = False

    def sent(self, n: int) -> None:
        self.count += n

    def received(self, n: int) -> None:
        self.count -= n
        self.black = True

    def on_token(self, count: int, black: bool) -> None:
        self.token = (count, black)

    def passive(self, lp: LogicalProcess) -> bool:
        """``lp`` has nothing to run: pass the token on (or, on LP 0, judge it); True when LP 0 stopped the run."""
        if lp.index == 0:
            if self.token is not None:
                count, black = self.token
                self.token = None
                self.round_open = False
                if not black and not self.black and count + self.count == 0:
                    for p in lp.peers:
                        lp.send(p, (STOP,))
                    return True
            if not self.round_open:
                lp.send(1, (TOKEN, 0, False))
                self.black = False
                self.round_open = True
        elif self.token is not None:
            count, black = self.token
            lp.send((lp.index + 1) % lp.parts, (TOKEN, count + self.count, black or self.black))
            self.black = False
            self.token = None
        return False
