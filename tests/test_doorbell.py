"""``tickpar.host.doorbell``: a ring counter whose waiter spins, then blocks, and never loses a ring."""

from __future__ import annotations

import threading

import pytest

from tickpar.host import doorbell
from tickpar.host.doorbell import SPIN_S, Doorbell, spin_budget


@pytest.mark.parametrize("spin_s", [0.0, 0.001])
def test_wait_past_returns_the_new_count_and_times_out_without_a_ring(spin_s: float) -> None:
    bell = Doorbell(spin_s)
    assert bell.wait_past(0, timeout=0.01) is None
    bell.ring()
    assert bell.wait_past(0, timeout=0.01) == 1
    assert bell.wait_past(1, timeout=0.01) is None


@pytest.mark.parametrize("spin_s", [0.0, 0.0005, 1.0])
def test_ping_pong_between_two_threads_sees_every_ring_once(spin_s: float) -> None:
    # The hand-off tick-barrier makes per batch: ring the partner, wait for its answer.  A lost ring
    # deadlocks (the timeout fails the test); a ring seen twice makes the counts disagree.
    ping, pong = Doorbell(spin_s), Doorbell(spin_s)
    rounds = 300
    answered: list[int] = []

    def partner() -> None:
        seen = 0
        for _ in range(rounds):
            seen = ping.wait_past(seen, timeout=10.0)
            assert seen is not None
            answered.append(seen)
            pong.ring()

    t = threading.Thread(target=partner)
    t.start()
    seen = 0
    for _ in range(rounds):
        ping.ring()
        seen = pong.wait_past(seen, timeout=10.0)
        assert seen is not None
    t.join(10.0)
    assert answered == list(range(1, rounds + 1))
    assert seen == rounds


def test_spin_only_where_threads_run_in_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doorbell, "gil_disabled", lambda: True)
    assert spin_budget(True) == SPIN_S
    assert spin_budget(False) == 0.0  # unpinned: the waiter may share its partner's core
    monkeypatch.setattr(doorbell, "gil_disabled", lambda: False)
    assert spin_budget(True) == 0.0  # under the GIL a spinner holds the lock its partner needs


def test_negative_spin_is_a_one_line_error() -> None:
    with pytest.raises(ValueError, match=r"spin_s=-1 is not allowed"):
        Doorbell(-1)
