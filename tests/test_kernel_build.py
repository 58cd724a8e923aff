"""The kernel's two builds (pure Python and mypyc-compiled, see setup.py): which one runs, and what
the compiled one must not change.

``make test`` runs the suite with ``TICKPAR_EXPECT_KERNEL=pure`` and ``make test-compiled`` with
``TICKPAR_EXPECT_KERNEL=compiled``: a compiled build that silently fell back to Python (or a stray
extension module shadowing the checkout's source) fails here instead of passing as the other build.
The rest of this file holds the semantic traps of compiling: each test fails if the compiled build
differs from the interpreted one in a way the other kernel tests would not notice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tickpar.cli import main
from tickpar.kernel import kernel_build
from tickpar.kernel.eventq import BatchQueue, Deferred, Event, EventQueue, op_live


def test_the_kernel_build_is_the_one_the_run_asked_for() -> None:
    """kernel_build() names the build the event queue module really is."""
    from tickpar.kernel import eventq

    build = kernel_build()
    assert build in ("pure", "compiled")
    assert (build == "pure") == eventq.__file__.endswith(".py")
    expected = os.environ.get("TICKPAR_EXPECT_KERNEL")
    if expected is None:
        pytest.skip("TICKPAR_EXPECT_KERNEL not set (make test and make test-compiled set it)")
    assert build == expected, (
        f"expected the {expected} kernel, this process runs the {build} one ({eventq.__file__}); "
        "a stray compiled module in the checkout? `make clean` or delete tickpar/kernel/*.so"
    )


def test_run_records_and_list_shows_the_kernel_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tickpar run --out` records the build in field `kernel`; `tickpar list` prints it."""
    out_file = tmp_path / "run.json"
    assert main(["run", "-w", "phold", "-p", "lps=2", "-p", "end_tick=200", "--out", str(out_file)]) == 0
    assert json.loads(out_file.read_text())["kernel"] == kernel_build()
    capsys.readouterr()
    assert main(["list"]) == 0
    assert f"kernel: {kernel_build()}" in capsys.readouterr().out
    assert main(["list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernel"] == kernel_build()


def test_a_deferred_op_is_known_by_identity_through_commit() -> None:
    """The op a deferred schedule logs is the very object its event holds, so commit inserts it.

    mypyc unboxes a tuple typed as such into a C struct and boxes a new tuple at each use: the
    event's op and the logged op would then be equal but not identical, ``op_live`` false, and
    commit would drop the insertion without a word (tick-barrier diverged silently that way).
    """
    queue = BatchQueue()
    ran: list[int] = []
    event = Event(lambda: ran.append(queue.cur_tick), name="e")
    sink = Deferred(limit_key=0)
    queue.defer_to(sink)
    queue.schedule(event, 5)
    message = Event(lambda: ran.append(-queue.cur_tick), name="m")
    queue.post(message, 7, None)
    queue.defer_to(None)
    assert len(sink.ops) == 2
    assert all(op_live(op) for op in sink.ops)
    assert queue.commit(sink.ops, sink.size_delta) == 2
    assert len(queue) == 2
    queue.run()
    assert ran == [5, -7]


def test_post_hands_a_subclass_schedule_the_tick_object_it_got() -> None:
    """post() falls back to an overriding schedule with the caller's ``when`` itself (an int subclass stays one)."""

    class Marked(int):
        pass

    seen: list[type] = []

    class Watching(EventQueue):
        __slots__ = ()

        def schedule(self, event: Event, when: int) -> None:
            seen.append(type(when))
            super().schedule(event, int(when))

    queue = Watching()
    event = Event(name="e")
    queue.post(event, Marked(3), 42)
    assert seen == [Marked]
    assert event.source == 42 and event.when == 3 and event.scheduled


def test_events_hash_by_identity() -> None:
    """Events are hashable (sets, dict keys) and equal only to themselves, in both builds."""
    a, b = Event(name="x"), Event(name="x")
    assert len({a, b, a}) == 2
    assert a != b and a == a


@pytest.mark.parametrize("order", ["gem5", "canonical"])
@pytest.mark.parametrize("queue_class", [EventQueue, BatchQueue])
def test_post_is_stamp_then_schedule_in_every_case(order: str, queue_class: type[EventQueue]) -> None:
    """post(e, when, src) leaves the queue as ``e.source = src; schedule(e, when)`` does, edge cases included:
    a tick in the past and a double schedule (checks off: violations, a second entry), ties at one key."""

    def drive(use_post: bool) -> tuple[list[tuple[str, int, int | None]], list[str], list[tuple[str, int]]]:
        queue = queue_class("q", order=order, checks=False)
        ran: list[tuple[str, int]] = []
        events = [Event((lambda i=i: ran.append((f"e{i}", queue.cur_tick))), name=f"e{i}") for i in range(4)]
        plan = [(0, 10, 100), (1, 10, 101), (2, 10, None), (3, 4, 102), (1, 12, 103)]  # e1 twice: a double schedule
        queue.schedule(Event(name="clock"), 5)
        queue.service_one()  # cur_tick 5: the tick-4 post is in the past
        for index, when, source in plan:
            event = events[index]
            if use_post:
                queue.post(event, when, source)
            else:
                event.source = source
                queue.schedule(event, when)
        state = [(e.name, e.when, e.source) for e in queue.pending()]
        violations = [v.describe() for v in queue.violations]
        queue.run()
        return state, violations, ran

    posted = drive(True)
    assert posted == drive(False)
    _state, violations, ran = posted
    assert len(violations) == 2 and len(ran) == 5  # the past tick and the double schedule, all five run
