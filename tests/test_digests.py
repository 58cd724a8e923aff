"""Digests that distinct values and distinct types never share (issue 9 §2), the same in every process."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from tickpar.kernel.digests import FAST_LIMIT, encode, event_id, fold_record
from tickpar.kernel.eventq import EventQueue
from tickpar.kernel.model import Component, Model
from tickpar.verify.oracle import collect, component_digest

# Pairs Python's hash() cannot tell apart, and neighbours that must stay apart too.
LOOKALIKES: list[tuple[Any, Any]] = [
    (-1, -2),
    (0, 2**61 - 1),
    (5, 5 + 2**61 - 1),
    (1, 1.0),
    (1, True),
    (1.0, True),
    (0, False),
    (0, None),
    (0.0, -0.0),
    ((1, 2), (2, 1)),
    (((1,), 2), (1, (2,))),
    ((1, (2, (3,))), (1, (2, 3))),
    ((), ((),)),
    (2**100, -(2**100)),
    (2**100, 2**100 + 2**61 - 1),
    ("a", b"a"),
    ((1, True), (1, 1)),
    # tuple records (flat tuples of fast ints) against fast int records and against slow tuples
    ((5,), 5),
    ((0, 7), (0, 7.0)),
    ((3, 2**61 - 1 + 3), (3, 3)),
    ((1, 2, 3), (1, (2, 3))),
    ((), 0),
]


@pytest.mark.parametrize(("a", "b"), LOOKALIKES)
def test_lookalike_payloads_get_distinct_encodings_and_records(a: Any, b: Any) -> None:
    """Each pair encodes differently and, folded from the same state, gives different digests."""
    assert encode(a) != encode(b)
    eid = event_id(1234, 0)
    for state in (0, 99, -7):
        assert fold_record(state, 100, eid, a) != fold_record(state, 100, eid, b)


def test_records_keep_when_and_event_apart() -> None:
    """The tick and the event id are lanes of their own: changing either changes the record's fold."""
    base = fold_record(0, 10, event_id(1, 0), 3)
    assert base != fold_record(0, 11, event_id(1, 0), 3)
    assert base != fold_record(0, 10, event_id(2, 0), 3)
    assert base != fold_record(0, 10, event_id(1, 1), 3)
    assert fold_record(0, 0, 5, 1) != fold_record(0, 2**61 - 1, 5, 1)  # ticks beyond the fast lane
    assert fold_record(0, FAST_LIMIT - 1, 5, 1) != fold_record(0, FAST_LIMIT, 5, 1)


def test_sequences_keep_their_order() -> None:
    """Folding (a, b) and (b, a) gives different digests."""
    eid = event_id(7, 0)

    def run(payloads: list[Any]) -> int:
        digest = 0
        for payload in payloads:
            digest = fold_record(digest, 10, eid, payload)
        return digest

    assert run([1, 2]) != run([2, 1])
    assert run([(1, 2), 3]) != run([3, (1, 2)])


def test_unsupported_payload_is_a_one_line_type_error() -> None:
    """A payload outside the documented types is refused, naming its type."""
    with pytest.raises(TypeError, match="object"):
        encode(object())


class Echo(Component):
    """Receives one payload at tick 5 and keeps a final state."""

    def __init__(self, model: Model, name: str, payload: Any, final: Any) -> None:
        super().__init__(model, name)
        self.payload = payload
        self.final = final
        self.ev = self.event("go", self.on_go)

    def init(self) -> None:
        self.schedule(self.ev, 5, self.payload)

    def on_go(self, payload: Any) -> None:
        assert payload is self.payload

    def state(self) -> tuple[Any, ...]:
        return (self.final,)


def component_digests(payload: Any, final: Any = 0) -> str:
    model = Model(1)
    Echo(model, "echo", payload, final)
    queue = EventQueue()
    model.bind(queue)
    model.start()
    queue.run()
    return collect(model).components["echo"]["digest"]


@pytest.mark.parametrize(("a", "b"), LOOKALIKES)
def test_components_fed_lookalikes_get_distinct_digests(a: Any, b: Any) -> None:
    """A component that processed payload a and one that processed b never share the oracle's digest."""
    assert component_digests(a) != component_digests(b)


@pytest.mark.parametrize(("a", "b"), LOOKALIKES)
def test_lookalike_final_states_get_distinct_digests(a: Any, b: Any) -> None:
    """Same events, final states a and b: different component digests."""
    model = Model(1)
    one, two = Echo(model, "one", 0, a), Echo(model, "two", 0, b)
    assert component_digest(one) != component_digest(two)


def test_model_fast_path_matches_fold_record() -> None:
    """The model's inlined fast fold is fold_record's fast case (small payloads), so both lanes agree."""
    model = Model(1)
    echo = Echo(model, "echo", 17, 0)
    queue = EventQueue()
    model.bind(queue)
    model.start()
    queue.run()
    assert echo.digest == fold_record(0, 5, echo.ev.eid, 17)


SCRIPT = """
from tickpar.kernel.digests import event_id, fold_record
d = 0
for p in (-1, -2, 0, 2**61 - 1, 1, 1.0, True, (1, (2.5, -3)), "x", None, 2**200):
    d = fold_record(d, 10, event_id(99, 50), p)
print(d)
"""


def test_digests_are_identical_across_processes_and_hash_seeds() -> None:
    """The same records fold to the same digest in fresh interpreters with different PYTHONHASHSEED."""
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60, check=True
        )
        outputs.add(proc.stdout.strip())
    assert len(outputs) == 1 and outputs != {""}
