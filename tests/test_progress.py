"""tickpar.host.progress: a terminal progress bar that samples a run without touching it."""

from __future__ import annotations

import io
import time

from tickpar.host.progress import ProgressBar, format_bar, track


def test_format_bar() -> None:
    """Fraction, ticks, rate and ETA on one line."""
    line = format_bar(250, 1000, 2.0, events=5000, width=8)
    assert line.startswith("[##......]  25%  tick 250/1000")
    assert "2.5e+03 ev/s" in line and "ETA 6s" in line
    assert format_bar(0, 0, 0.0).startswith("[........")


def test_silent_off_a_terminal() -> None:
    """Writing to a file or pipe prints nothing and starts no thread."""
    out = io.StringIO()
    with track(100, lambda: 50, stream=out) as bar:
        assert not bar.enabled
    assert out.getvalue() == ""


def test_draws_and_ends_with_a_newline() -> None:
    """Forced on, it redraws the line while the block runs and ends with the final state."""
    out = io.StringIO()
    state = {"tick": 0}
    bar = ProgressBar(10, lambda: state["tick"], stream=out, interval=0.01, force=True).start()
    for t in range(1, 11):
        state["tick"] = t
        time.sleep(0.005)
    bar.stop()
    text = out.getvalue()
    assert text.startswith("\r[") and text.endswith("\n")
    assert "100%  tick 10/10" in text.splitlines()[-1]
