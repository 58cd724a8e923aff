"""Which component (gem5 SimObject) an event belongs to, from its name.

gem5 names a SimObject's events after it: ``Event::name()`` of an ``EventFunctionWrapper`` is
``<simobject>.wrapped_function_event``, a port's packet queue is
``<simobject>.<port>-RespPacketQueue.wrapped_function_event``, and an event with no name of its
own is ``Event_<instance>``.  The rules, in order (:func:`component_of`):

1. a mapping file (:func:`load_mapping`), ``REGEX -> COMPONENT`` per line, first match wins
   (``COMPONENT`` may use the regex's groups, ``\\1``); it overrides every rule below;
2. ``.wrapped_function_event`` / ``.wrapped_event`` is stripped, and a last segment that is a
   port's queue (``<port>-<Kind>PacketQueue``) is stripped with its port: what is left is the
   SimObject;
3. otherwise a dotted name is ``<simobject>.<event>``: the last segment is the event;
4. a literal name with a space (``O3CPU tick``, ``AtomicSimpleCPU tick``) belongs to the component
   named by its first word (the CPU);
5. anything else (``Event_57``) is a component of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["ComponentRules", "component_of", "load_mapping"]

_WRAPPED = (".wrapped_function_event", ".wrapped_event")
_PORT_QUEUE = re.compile(r"-\w*PacketQueue$")


def component_of(name: str) -> str:
    """The component of event ``name`` by the built-in rules 2-5 (see the module docstring)."""
    for suffix in _WRAPPED:
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            head, dot, last = base.rpartition(".")
            if dot and _PORT_QUEUE.search(last):
                return head
            return base.split(" ", 1)[0]
    if " " in name:
        return name.split(" ", 1)[0]
    head, dot, _last = name.rpartition(".")
    if dot and head:
        return head
    return name


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
    """:func:`component_of` with a mapping file's overrides in front; memoised per name."""

    def __init__(self, mapping: Iterable[tuple[re.Pattern[str], str]] = ()) -> None:
        self.mapping = list(mapping)
        self._seen: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        found = self._seen.get(name)
        if found is None:
            found = self._resolve(name)
            self._seen[name] = found
        return found

    def _resolve(self, name: str) -> str:
        for regex, template in self.mapping:
            m = regex.search(name)
            if m is not None:
                return m.expand(template)
        return component_of(name)
