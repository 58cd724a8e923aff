"""A progress bar for long runs on a terminal: simulated ticks against the end tick, events/s, ETA.

It never touches the hot loop: a daemon thread samples two callables (``tick()``
and, optionally, ``events()``) a few times a second and redraws one line on
stderr.  Off a terminal (pipelines, CI, logs) it prints nothing.  Hook it
around any loop whose progress can be read, e.g. in a strategy::

    from tickpar.host.progress import track

    with track(model.end_tick, lambda: queue.cur_tick, lambda: queue.serviced):
        while not queue.empty():
            ...

or for ``tickpar run`` around ``execute(cell)`` with a reader of the shared queue.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["ProgressBar", "format_bar", "track"]


def format_bar(done: float, total: float, elapsed: float, events: int | None = None, width: int = 28) -> str:
    """One line: ``[#####.....]  42%  tick 4200/10000  1.2e+05 ev/s  ETA 3s``."""
    frac = 0.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
    filled = round(frac * width)
    line = f"[{'#' * filled}{'.' * (width - filled)}] {frac:4.0%}  tick {int(done)}/{int(total)}"
    if events is not None and elapsed > 0:
        line += f"  {events / elapsed:.2g} ev/s"
    if 0 < frac < 1 and elapsed > 0:
        line += f"  ETA {elapsed * (1 - frac) / frac:.0f}s"
    return line


class ProgressBar:
    """Samples ``tick()`` (and ``events()``) every ``interval`` seconds and redraws a line on ``stream``."""

    def __init__(
        self,
        total: float,
        tick: Callable[[], float],
        events: Callable[[], int] | None = None,
        *,
        stream: TextIO | None = None,
        interval: float = 0.25,
        force: bool = False,
    ) -> None:
        self.total = total
        self.tick = tick
        self.events = events
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.enabled = force or bool(getattr(self.stream, "isatty", lambda: False)())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0

    def _draw(self, final: bool = False) -> None:
        try:
            done = float(self.tick())
            events = self.events() if self.events is not None else None
        except Exception:  # a reader racing the run it reads must never break it
            return
        line = format_bar(done, self.total, time.perf_counter() - self._started, events)
        self.stream.write("\r" + line + ("\n" if final else ""))
        self.stream.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._draw()

    def start(self) -> ProgressBar:
        self._started = time.perf_counter()
        if self.enabled:
            self._thread = threading.Thread(target=self._loop, name="tickpar-progress", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._draw(final=True)


@contextmanager
def track(
    total: float, tick: Callable[[], float], events: Callable[[], int] | None = None, **kwargs: object
) -> Iterator[ProgressBar]:
    """A :class:`ProgressBar` for the duration of a ``with`` block."""
    bar = ProgressBar(total, tick, events, **kwargs).start()  # type: ignore[arg-type]
    try:
        yield bar
    finally:
        bar.stop()
