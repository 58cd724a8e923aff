"""Which component (gem5 SimObject) an event object belongs to, from its name and instance.

gem5 names a SimObject's events after it: ``Event::name()`` of an ``EventFunctionWrapper`` is
``<simobject>.wrapped_function_event``, a port's packet queue is
``<simobject>.<port>-RespPacketQueue.wrapped_function_event``, and an event with no name of its
own is ``Event_<instance>``.  The rules, in order (:meth:`ComponentRules.place`; each is counted
under its name in :attr:`tickpar.gem5.importer.ImportedTrace.component_rules`):

``mapping``
    a mapping file (:func:`load_mapping`), ``REGEX -> COMPONENT`` per line, first match wins
    (``COMPONENT`` may use the regex's groups, ``\\1``); it overrides every rule below.  Each
    regex is tried against the event's name; for an event whose name does not say its SimObject
    (rule ``object``), then against ``<name>#<instance>`` too, so a rule may map instance numbers;
``port``
    ``.wrapped_function_event`` / ``.wrapped_event`` is stripped, and a last segment that is a
    port's packet queue is stripped with its port: what is left is the SimObject.  gem5 names a
    queue ``<port>-<label>`` (``cpu_side_port[1]-RespPacketQueue``, a cache's
    ``mem_side_port-MemSidePort``), and a SimObject's name never holds a dash;
``simobject``
    otherwise a dotted name is ``<simobject>.<event>`` (after stripping the wrapper suffix, the
    whole base is the SimObject): the SimObject is what the name says;
``object``
    a name that does not say its SimObject: a literal name with a space (Ruby's ``Consumer
    Event``, ``GarnetSyntheticTraffic tick``, ``O3CPU tick``, shared by every instance of a class)
    or a bare one (``Event_57``).  Each event object is a component of its own, named
    ``<name>#<instance>`` (``Event_<N>`` keeps its name, which already holds its instance); the
    replay's coupling then merges them as the trace shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["ComponentRules", "component_of", "is_exit_event_name", "load_mapping", "simobject_of"]

_WRAPPED = (".wrapped_function_event", ".wrapped_event")
_PORT_QUEUE = re.compile(r"-[^.]*$")  # <port>-<label>: a packet queue's name (packet_queue.cc)
_UNNAMED = re.compile(r"^Event_\d+$")


def is_exit_event_name(name: str) -> bool:
    """Whether ``name`` is an event without a name of its own (``Event_<N>``), as gem5's exit events are."""
    return _UNNAMED.match(name) is not None


def simobject_of(name: str) -> tuple[str, str] | None:
    """``(SimObject, rule)`` as event ``name`` says it, or ``None`` where it does not (rule ``object``)."""
    for suffix in _WRAPPED:
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            if " " in base:
                return None
            head, dot, last = base.rpartition(".")
            if dot and _PORT_QUEUE.search(last):
                return head, "port"
            return base, "simobject"
    if " " in name:
        return None
    head, dot, _last = name.rpartition(".")
    if dot and head:
        return head, "simobject"
    return None


def component_of(name: str, instance: str = "") -> str:
    """The component of event object ``(name, instance)`` by the built-in rules (see the module docstring)."""
    found = simobject_of(name)
    if found is not None:
        return found[0]
    return object_component(name, instance)


def object_component(name: str, instance: str) -> str:
    """The component of an event object whose name does not say its SimObject: the object itself."""
    if not instance or is_exit_event_name(name):
        return name
    for suffix in _WRAPPED:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return f"{name}#{instance}"


def load_mapping(path: str | Path) -> list[tuple[re.Pattern[str], str]]:
    """Read a mapping file: ``REGEX -> COMPONENT`` per line; ``#`` comments and blank lines skipped."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{p}: no such components mapping file")
    rules: list[tuple[re.Pattern[str], str]] = []
    for lineno, raw in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        regex, arrow, component = line.rpartition(" -> ")
        if not arrow or not regex.strip() or not component.strip():
            raise ValueError(f"{p}:{lineno}: expected 'REGEX -> COMPONENT', got {line!r}")
        try:
            rules.append((re.compile(regex.strip()), component.strip()))
        except re.error as exc:
            raise ValueError(f"{p}:{lineno}: bad regex {regex.strip()!r}: {exc}") from None
    return rules


class ComponentRules:
    """The rules of the module docstring: a mapping file's overrides in front, then the built-in ones."""

    def __init__(self, mapping: Iterable[tuple[re.Pattern[str], str]] = ()) -> None:
        self.mapping = list(mapping)
        self._by_name: dict[str, tuple[str, str] | None] = {}

    def __call__(self, name: str, instance: str = "") -> str:
        """The component of event object ``(name, instance)``."""
        return self.place(name, instance)[0]

    def place(self, name: str, instance: str = "") -> tuple[str, str]:
        """``(component, rule)`` of event object ``(name, instance)``; memoised per name where it can be."""
        if name in self._by_name:
            found = self._by_name[name]
        else:
            found = self._by_name[name] = self._by_name_only(name)
        if found is not None:
            return found
        qualified = f"{name}#{instance}"
        for regex, template in self.mapping:
            m = regex.search(qualified)
            if m is not None:
                return m.expand(template), "mapping"
        return object_component(name, instance), "object"

    def _by_name_only(self, name: str) -> tuple[str, str] | None:
        """What the name alone decides (a mapping rule that matches it, or the SimObject it says)."""
        for regex, template in self.mapping:
            m = regex.search(name)
            if m is not None:
                return m.expand(template), "mapping"
        return simobject_of(name)
