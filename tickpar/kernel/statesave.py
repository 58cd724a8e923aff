"""Saving and restoring model state, for strategies that roll back (the ``optimistic`` strategy, Time Warp).

An engine that runs events speculatively saves, before each event, the state
of the component the event belongs to (and of every component a direct call
enters), and puts it back when the event is rolled back.  What is saved
(:meth:`tickpar.kernel.model.Component.save`):

* the kernel's own fields of the component: ``when``, ``count``, its digest,
  its source sequence number, its trace length, the payloads of its named
  events, and its RNG (see below);
* the component's *declared* state, :meth:`~tickpar.kernel.model.Component.save_state`:
  by default the attributes named in its ``state_attrs`` class attribute,
  saved by :func:`save_value`; without ``state_attrs``, every attribute the
  component set itself (not the kernel's), except references (see below).

How :func:`save_value` saves one value:

* ints, floats, bools, strs, bytes, ``None``, tuples, frozensets: kept as
  they are (immutable; a tuple is taken to hold immutable values);
* lists, dicts, sets, deques and bytearrays: copied, their items saved the
  same way (so a dict of lists is copied two levels deep);
* an object with ``save_state()``/``restore_state(saved)`` methods, or a
  ``state_attrs`` class attribute (the names of its attributes that change):
  saved through them and restored *in place*, so every reference to it stays
  valid (a port's packet queue that an event's handler is bound to);
* references: components, links, events, models, functions and bound
  methods, modules and classes: kept, never copied (they are structure);
* anything else is a ``TypeError`` naming the attribute (give the class
  ``state_attrs`` or the two methods), except in the fallback without
  ``state_attrs``, which keeps it as a reference.

Restoring rebinds each attribute to its saved copy (a snapshot is restored at
most once, and never after a later one: restoring save ``k`` discards every
save taken after it), so a container must not be shared with anything
outside the component's state.  Incremental saves fit these rules: a
``save_state`` may return a mark in an undo log (multicore's tag arrays do);
attributes named ``_saved_*`` are such bookkeeping, not state.

The RNG: ``random.Random.getstate()`` copies 625 ints, too much for every
event.  The first save turns the component's ``random.Random`` into
a :class:`TrackedRandom` in place (same object, same sequence), which counts
the Mersenne Twister words it draws; a save is then ``(base state, words since
it)``, and a restore is ``setstate(base)`` plus drawing the words again
(coast-forward).  A new base is taken every :data:`REBASE_WORDS` words.  The
word counts are checked against this interpreter's ``random`` module once
(:func:`rng_tracking_works`); if they disagree, saves fall back to
``getstate()``.

:func:`fingerprint` turns a component's whole attribute tree into comparable
data: the rollback-safety check compares it before an event and after the
event was run and rolled back, to find state the save did not cover.
"""

from __future__ import annotations

import random
import sys
from collections import deque
from collections.abc import Callable
from operator import attrgetter
from types import BuiltinFunctionType, BuiltinMethodType, FunctionType, MethodType, ModuleType
from typing import Any

from tickpar.kernel.eventq import Event

__all__ = [
    "REBASE_WORDS",
    "TrackedRandom",
    "fingerprint",
    "register_reference",
    "restore_attrs",
    "restore_rng",
    "restore_value",
    "rng_tracking_works",
    "save_attrs",
    "save_rng",
    "save_value",
    "saved_bytes",
]

#: Values kept as they are (immutable).
_KEEP = frozenset({int, float, bool, str, bytes, type(None), tuple, frozenset, complex, range})
#: Types that are structure, never state: kept as references (components, links and models are registered
#: by :mod:`tickpar.kernel.model`, which imports this module).
_REFERENCE: list[type] = [
    Event,
    FunctionType,
    MethodType,
    BuiltinFunctionType,
    BuiltinMethodType,
    ModuleType,
    type,
]
_reference_types: tuple[type, ...] = tuple(_REFERENCE)

#: Words drawn from a tracked RNG after which the next save takes a new base state.
REBASE_WORDS = 256


def register_reference(cls: type) -> None:
    """Treat instances of ``cls`` as structure: saved states keep references to them, never copies."""
    global _reference_types
    if cls not in _REFERENCE:
        _REFERENCE.append(cls)
        _reference_types = tuple(_REFERENCE)


class _InPlace:
    """A saved object that is restored in place: the object and what its own save returned."""

    __slots__ = ("obj", "saved")

    def __init__(self, obj: Any, saved: Any) -> None:
        self.obj = obj
        self.saved = saved


class _RngState:
    """A saved ``random.Random`` that is not a component's own (kept in a declared attribute)."""

    __slots__ = ("obj", "state")

    def __init__(self, obj: random.Random, state: Any) -> None:
        self.obj = obj
        self.state = state


def save_value(value: Any, where: str = "value", strict: bool = True) -> Any:
    """A copy of ``value`` that :func:`restore_value` can put back (see the module docstring for the rules).

    ``where`` names the value in errors; ``strict=False`` keeps unknown objects as references.
    """
    t = type(value)
    if t in _KEEP:
        return value
    if t is list:
        return [x if type(x) in _KEEP else save_value(x, where, strict) for x in value]
    if t is dict:
        return {k: (x if type(x) in _KEEP else save_value(x, where, strict)) for k, x in value.items()}
    if t is set:
        return set(value)
    if t is deque:
        return deque([x if type(x) in _KEEP else save_value(x, where, strict) for x in value], value.maxlen)
    if t is bytearray:
        return bytearray(value)
    if isinstance(value, _reference_types):
        return value
    saver = getattr(value, "save_state", None)
    if saver is not None and callable(saver):
        return _InPlace(value, saver())
    attrs = getattr(t, "state_attrs", None)
    if attrs is not None:
        return _InPlace(value, save_attrs(value, attrs, where))
    if isinstance(value, random.Random):
        return _RngState(value, value.getstate())
    if not strict:
        return value
    raise TypeError(
        f"{where} holds a {t.__name__}, which declares no state: give {t.__name__} a `state_attrs` class "
        "attribute (the names of its attributes that change) or save_state()/restore_state(saved) methods"
    )


def restore_value(saved: Any) -> Any:
    """The live value for a :func:`save_value` copy (objects saved in place are restored and returned)."""
    t = type(saved)
    if t in _KEEP:
        return saved
    if t is list or t is deque:
        for i, x in enumerate(saved):
            if type(x) not in _KEEP:
                saved[i] = restore_value(x)
        return saved
    if t is dict:
        for k, x in saved.items():
            if type(x) not in _KEEP:
                saved[k] = restore_value(x)
        return saved
    if t is _InPlace:
        obj = saved.obj
        restorer = getattr(obj, "restore_state", None)
        if restorer is not None and getattr(obj, "save_state", None) is not None:
            restorer(saved.saved)
        else:
            restore_attrs(obj, type(obj).state_attrs, saved.saved)
        return obj
    if t is _RngState:
        saved.obj.setstate(saved.state)
        return saved.obj
    return saved  # sets, bytearrays (copies) and references


_GETTERS: dict[tuple[str, ...], Callable[[Any], Any]] = {}


def save_attrs(obj: Any, names: tuple[str, ...], where: str = "") -> list[Any]:
    """The saved values of ``obj``'s attributes ``names``, in order (one :func:`save_value` each)."""
    getter = _GETTERS.get(names)
    if getter is None:
        getter = _GETTERS[names] = attrgetter(*names) if names else (lambda obj: ())
    values = getter(obj)
    if len(names) == 1:
        values = (values,)
    prefix = where or type(obj).__name__
    return [v if type(v) in _KEEP else save_value(v, f"{prefix}.{name}") for name, v in zip(names, values, strict=True)]


def restore_attrs(obj: Any, names: tuple[str, ...], saved: list[Any]) -> None:
    """Put back attributes saved by :func:`save_attrs`."""
    for name, value in zip(names, saved, strict=True):
        setattr(obj, name, value if type(value) in _KEEP else restore_value(value))


# -- the RNG --------------------------------------------------------------------------------------
_base_random = random.Random.random
_base_getrandbits = random.Random.getrandbits
_base_setstate = random.Random.setstate
_base_seed = random.Random.seed


class TrackedRandom(random.Random):
    """A ``random.Random`` that counts the Mersenne Twister words it draws since a base state.

    ``random()`` draws two words, ``getrandbits(k)`` ``ceil(k / 32)`` (none for
    ``k = 0``); every other method draws through these two.  A component's RNG
    becomes one in place on its first save (:func:`save_rng`); its sequence is
    unchanged.
    """

    _tw_base: Any
    _tw_words: int

    def random(self) -> float:
        self._tw_words += 2
        return _base_random(self)

    def getrandbits(self, k: int) -> int:
        if k > 0:
            self._tw_words += (k + 31) >> 5
        return _base_getrandbits(self, k)

    def seed(self, *args: Any, **kwargs: Any) -> None:
        _base_seed(self, *args, **kwargs)
        self.rebase()

    def setstate(self, state: Any) -> None:
        _base_setstate(self, state)
        self.rebase()

    def rebase(self) -> None:
        """Take the current state as the new base."""
        self._tw_base = self.getstate()
        self._tw_words = 0


_tracking_checked: bool | None = None


def rng_tracking_works() -> bool:
    """Whether :class:`TrackedRandom`'s word counts match this interpreter's ``random`` (checked once)."""
    global _tracking_checked
    if _tracking_checked is None:
        a = random.Random(12345)
        b = random.Random(12345)
        a.__class__ = TrackedRandom
        a.rebase()
        for k in (1, 5, 31, 32, 33, 64, 65, 100):
            a.getrandbits(k)
        a.random()
        a.randrange(10**12)
        a.expovariate(0.5)
        a.randint(0, 7)
        a.gauss(0.0, 1.0)
        a.choice([1, 2, 3])
        b.setstate(a._tw_base)
        for _ in range(a._tw_words):
            _base_getrandbits(b, 32)
        _tracking_checked = a.getstate()[:2] == b.getstate()[:2]
    return _tracking_checked


class _RngMark:
    """A save of a :class:`TrackedRandom`: its base state (shared by many saves), the words since, gauss_next."""

    __slots__ = ("base", "gauss", "words")

    def __init__(self, base: Any, words: int, gauss: Any) -> None:
        self.base = base
        self.words = words
        self.gauss = gauss


def save_rng(rng: random.Random) -> Any:
    """A save of ``rng`` (turned into a :class:`TrackedRandom` in place on the first call, when it can be)."""
    if type(rng) is not TrackedRandom:
        if type(rng) is not random.Random or not rng_tracking_works():
            return _RngState(rng, rng.getstate())
        rng.__class__ = TrackedRandom
        rng.rebase()  # type: ignore[attr-defined]
    words = rng._tw_words  # type: ignore[attr-defined]
    if words > REBASE_WORDS:
        rng.rebase()  # type: ignore[attr-defined]
        words = 0
    return _RngMark(rng._tw_base, words, rng.gauss_next)  # type: ignore[attr-defined]


def restore_rng(rng: random.Random, saved: Any) -> None:
    """Put ``rng`` back to a :func:`save_rng` save: its base state, then the words drawn after it again."""
    if type(saved) is _RngState:
        _base_setstate(rng, saved.state)
        if type(rng) is TrackedRandom:
            rng.rebase()
        return
    base, words, gauss = saved.base, saved.words, saved.gauss
    if rng._tw_base is not base or rng._tw_words != words:  # type: ignore[attr-defined]
        _base_setstate(rng, base)
        for _ in range(words):
            _base_getrandbits(rng, 32)
        rng._tw_base = base  # type: ignore[attr-defined]
        rng._tw_words = words  # type: ignore[attr-defined]
    rng.gauss_next = gauss


# -- sizes --------------------------------------------------------------------------------------------
def saved_bytes(value: Any, _seen: set[int] | None = None) -> int:
    """The bytes a saved state holds (``sys.getsizeof`` over its containers and saved objects).

    References (components, events, links, ...) are not counted, nor an RNG
    save's base state (one is shared by every save until the next base) or
    what a list subclass keeps outside its items (an undo log's link to the
    next segment).
    """
    seen = set() if _seen is None else _seen
    if id(value) in seen or isinstance(value, _reference_types):
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, (tuple, list, deque, set, frozenset)):
        size += sum(saved_bytes(x, seen) for x in value)
    elif isinstance(value, dict):
        size += sum(saved_bytes(k, seen) + saved_bytes(x, seen) for k, x in value.items())
    elif type(value) is _InPlace:
        size += saved_bytes(value.saved, seen)
    elif type(value) is _RngState:
        size += saved_bytes(value.state, seen)
    return size


# -- fingerprints (the rollback-safety check) ----------------------------------------------------------------
def fingerprint(value: Any, _seen: set[int] | None = None) -> Any:
    """``value``'s whole tree as comparable data: references by identity, objects by their attributes.

    Two fingerprints are equal exactly when every value reachable through
    containers and plain objects is equal (dicts in their order, sets as sets);
    components, links, events, models and functions count by identity, RNGs by
    their state.
    """
    t = type(value)
    if t in _KEEP and t is not tuple:
        return value
    if t is tuple or t is list or t is deque:
        return (t.__name__, tuple(fingerprint(x, _seen) for x in value))
    if t is dict:
        return ("dict", tuple((fingerprint(k, _seen), fingerprint(x, _seen)) for k, x in value.items()))
    if t is set or t is frozenset:
        return (t.__name__, frozenset(value))
    if t is bytearray:
        return ("bytearray", bytes(value))
    if isinstance(value, random.Random):
        return ("rng", value.getstate())
    if isinstance(value, _reference_types):
        return ("ref", t.__name__, id(value))
    seen = _seen if _seen is not None else set()
    if id(value) in seen:
        return ("cycle", id(value))
    seen.add(id(value))
    try:
        return ("obj", t.__name__, tuple((name, fingerprint(x, seen)) for name, x in _attributes(value)))
    finally:
        seen.discard(id(value))


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    """An object's attributes (its ``__dict__`` and its slots, in a stable order), but a save's own
    bookkeeping: attributes named ``_saved_*`` (an undo log) are not state."""
    out = [(k, v) for k, v in getattr(obj, "__dict__", {}).items() if not k.startswith("_saved_")]
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name in ("__dict__", "__weakref__") or name.startswith("_saved_") or not hasattr(obj, name):
                continue
            out.append((name, getattr(obj, name)))
    return out
