"""How the kernel encodes an event's place in the queue as integers: heap keys, ties, source keys.

One home for the bit layouts, so that the kernel (:mod:`tickpar.kernel.eventq`) and
the strategies that reorder or replay insertions agree without re-deriving them.

* **Key**: ``(when, priority)`` packed into one int, ``when << PRIO_BITS |
  (priority + PRIO_OFFSET)``; comparing keys compares ``(when, priority)``
  (gem5 priorities are int8, so the offset makes them non-negative).
* **Source key** (canonical order): ``source_id << SRC_BITS | seq``, the
  ``seq``-th insertion made by component ``source_id``.
* **Tie** (within one key; smaller runs first):

  - gem5 order: ``-insertion_number`` (LIFO: the newest insertion first);
  - canonical order: the event's source key, or ``UNSOURCED_BASE +
    insertion_number`` for an event nobody stamped (before every sourced one,
    FIFO among themselves).

  Zero-delay children that an engine runs locally before the real queue sees
  them get ties from :func:`child_tie`: they stay newer than every real
  insertion (gem5 order) and keep canonical FIFO rules.
"""

from __future__ import annotations

__all__ = [
    "PRIO_BITS",
    "PRIO_OFFSET",
    "SRC_BITS",
    "UNSOURCED_BASE",
    "canonical_source",
    "child_tie",
    "insertion_tie",
    "key_priority",
    "key_when",
    "pack_key",
    "source_parts",
]

PRIO_OFFSET = 128
"""gem5 priorities are int8; the key stores ``priority + PRIO_OFFSET`` (0..255)."""
PRIO_BITS = 8
SRC_BITS = 40
"""Bits of a source key that hold the source's sequence number."""
UNSOURCED_BASE = -(1 << 62)
"""Canonical ties of unsourced insertions start here: below every source key."""

_PRIO_MASK = (1 << PRIO_BITS) - 1
_SEQ_MASK = (1 << SRC_BITS) - 1
_CHILD_GEM5 = -(1 << 62)  # below every -insertion_number a run can reach
_CHILD_UNSOURCED = UNSOURCED_BASE + (1 << 61)  # after older unsourced insertions, before sourced ones


def pack_key(when: int, priority: int) -> int:
    """The heap key of ``(when, priority)``."""
    return (when << PRIO_BITS) + priority + PRIO_OFFSET


def key_when(key: int) -> int:
    """The tick of a packed key."""
    return key >> PRIO_BITS


def key_priority(key: int) -> int:
    """The priority of a packed key."""
    return (key & _PRIO_MASK) - PRIO_OFFSET


def canonical_source(source_id: int, seq: int) -> int:
    """The canonical source key of the ``seq``-th insertion made by source ``source_id``."""
    return (source_id << SRC_BITS) | seq


def source_parts(source: int) -> tuple[int, int]:
    """``(source_id, seq)`` of a canonical source key."""
    return source >> SRC_BITS, source & _SEQ_MASK


def insertion_tie(canonical: bool, source: int | None, seq: int) -> int:
    """The tie of the insertion numbered ``seq`` (global, increasing) of an event stamped ``source``."""
    if not canonical:
        return -seq
    return UNSOURCED_BASE + seq if source is None else source


def child_tie(canonical: bool, source: int | None, n: int) -> int:
    """The tie of the ``n``-th zero-delay child an engine runs locally, ordered as the real queue would."""
    if not canonical:
        return _CHILD_GEM5 - n
    return _CHILD_UNSOURCED + n if source is None else source
