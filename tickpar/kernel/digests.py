"""Per-component event digests that distinct values and distinct types never share.

A component folds one *record* per processed event, ``(when, event id,
payload)``, into a running 64-bit ``digest`` (:mod:`tickpar.kernel.model` does it on
the hot path); the oracle then hashes ``(count, digest, state)``.  Python's
``hash`` alone would not do: ``hash(-1) == hash(-2)``, ints hash modulo
``2**61 - 1`` (so ``0`` and ``2**61 - 1`` agree), and ``1``, ``1.0`` and
``True`` hash alike.  Here each record reaches the running hash only through
*injective lanes*:

* **Fast records** (PHOLD's and most payloads): a plain ``int`` payload and a
  tick both in ``[0, 2**60)``.  Python hashes such an int to itself, so the
  record is folded as ``hash((digest, when, eid, payload))`` with every lane
  distinct for distinct values (``bool`` is not ``int`` here: ``True`` takes
  the slow path).  The model inlines this for payloads and ticks below
  ``2**30 - 1`` (one CPython digit: the range test costs a few specialised
  compares) and calls :func:`fold_record` for the rest.
* **Tuple records** (multicore's packets and most message payloads): a flat
  tuple whose items are all plain ``int`` in ``[0, 2**60)``, with a tick in
  that range, folds as ``hash((digest, when, eid, TUPLE_LANE, payload))``:
  the payload tuple hashes each item through its own lane, and the record is
  a 5-tuple whose fourth lane (``-1``) no fast record's payload takes.  It
  saves a slow record's encoding and BLAKE2b call (docs/measurements/2026-12-02-small-costs.md).
* **Slow records** (any other payload or tick): the payload and tick are
  written in a type-tagged, length-prefixed byte encoding (:func:`encode`:
  distinct values and distinct types give distinct bytes), hashed with
  BLAKE2b to a 61-bit lane ``h``, and folded as ``hash((digest, SLOW, eid,
  h))``.  ``SLOW = 2**60`` is a tick no fast record carries, so the two kinds
  never mix.
* **Event ids** (``eid``, :func:`event_id`): the event's name id (51 bits,
  checked unique per model by :meth:`~tickpar.kernel.model.Model.name_id`) and its
  priority, packed: a lane of its own, below ``2**60``.

What is left is chance: CPython's tuple hash (an xxHash-style mix) is a
bijection in each lane for fixed others, so two sequences that differ in one
field of one record always get different digests; sequences that differ in
several places collide with probability about ``2**-61``, and a slow lane
with BLAKE2b's ``2**-61``.  Ints, tuples and BLAKE2b hash the same in every
process and under every ``PYTHONHASHSEED`` (only ``str``/``bytes`` hashing is
randomised, and no ``str`` reaches ``hash`` here), on every 64-bit CPython
since 3.8 (the tuple hash's current form).

Payload types (:func:`encode`): ``int`` (any size and sign; ``int``
subclasses other than ``bool``, such as ``IntEnum``, as their int value),
``bool``, ``float`` (by its IEEE-754 bits: ``-0.0`` and ``0.0`` differ),
``str``, ``bytes``, ``None``, and tuples of those, nested.  Anything else is a
``TypeError`` naming the type.
"""

from __future__ import annotations

import struct
from hashlib import blake2b
from typing import Any

__all__ = ["FAST_LIMIT", "NAME_ID_BITS", "SLOW", "TUPLE_LANE", "encode", "event_id", "fold_record", "slow_lane"]

FAST_LIMIT_BITS = 60
FAST_LIMIT = 1 << FAST_LIMIT_BITS
"""Ticks and int payloads below this (and >= 0) are fast records: their own hash lane."""
SLOW = FAST_LIMIT
"""The tick lane of every slow record: no fast record has it."""
TUPLE_LANE = -1
"""The lane that marks a tuple record; no int payload of a fast record is negative."""
NAME_ID_BITS = 51
_PRIO_SLOT = 9  # priorities -129 (direct calls) .. 127, stored + 129
_LANE_MODULUS = (1 << 61) - 1  # ints in [0, 2**61 - 1) hash to themselves
_pack_double = struct.Struct("<d").pack


def event_id(name_id: int, priority: int) -> int:
    """The lane of an event name (its :meth:`~tickpar.kernel.model.Model.name_id`) and priority (-129 .. 127)."""
    if not 0 <= name_id < 1 << NAME_ID_BITS or not -129 <= priority <= 127:
        raise ValueError(f"event id out of range: name id {name_id}, priority {priority}")
    return (name_id << _PRIO_SLOT) | (priority + 129)


def _put(out: bytearray, value: Any) -> None:
    kind = type(value)
    if kind is int or (isinstance(value, int) and kind is not bool):
        size = (int(value).bit_length() + 8) // 8  # room for the sign bit
        out += b"i"
        out += size.to_bytes(8, "little")
        out += int(value).to_bytes(size, "little", signed=True)
    elif kind is bool:
        out += b"T" if value else b"F"
    elif kind is float or isinstance(value, float):
        out += b"d"
        out += _pack_double(value)
    elif kind is tuple or isinstance(value, tuple):
        out += b"("
        out += len(value).to_bytes(8, "little")
        for item in value:
            _put(out, item)
    elif value is None:
        out += b"N"
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        out += b"s"
        out += len(data).to_bytes(8, "little")
        out += data
    elif isinstance(value, bytes):
        out += b"b"
        out += len(value).to_bytes(8, "little")
        out += value
    else:
        raise TypeError(
            f"cannot digest a payload of type {kind.__name__}: allowed int, float, bool, str, bytes, None and tuples"
        )


def encode(value: Any) -> bytes:
    """The type-tagged byte encoding of ``value``: injective over the payload types (module docstring)."""
    out = bytearray()
    _put(out, value)
    return bytes(out)


def slow_lane(when: int, payload: Any) -> int:
    """The 61-bit lane of a slow record's ``(when, payload)``."""
    data = blake2b(encode((when, payload)), digest_size=8, person=b"tickpar-record").digest()
    return int.from_bytes(data, "little") % _LANE_MODULUS


def fold_record(digest: int, when: int, eid: int, payload: Any) -> int:
    """``digest`` after one record; the model inlines the fast case, this handles all three."""
    if -1 < when < FAST_LIMIT:
        kind = type(payload)
        if kind is int:
            if -1 < payload < FAST_LIMIT:
                return hash((digest, when, eid, payload))
        elif kind is tuple:
            for item in payload:
                if type(item) is not int or not -1 < item < FAST_LIMIT:
                    break
            else:  # a flat tuple of fast ints: each item its own lane, TUPLE_LANE marks the kind
                return hash((digest, when, eid, TUPLE_LANE, payload))
    return hash((digest, SLOW, eid, slow_lane(when, payload)))
