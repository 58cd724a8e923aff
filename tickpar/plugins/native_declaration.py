"""Native strategy plugins' declarations: a ``.cpp`` file's JSON, read from its source, as a strategy class.

A native plugin (``native/include/tickpar/strategy.hpp``; docs/how-to/write-a-native-strategy.md) declares
what a Python strategy declares, in JSON inside one C++ raw string literal delimited ``tickpar``::

    static const char* const kDeclaration = R"tickpar({
      "name": "round-robin", "summary": "one line for tickpar list",
      "options": {"min_parallel": {"type": "int", "default": 2, "min": 2, "help": "..."}},
      "orders": ["gem5", "canonical"], "max_workers": null,
      "promise": [
        {"if": {"workers": 1}, "verdict": "exact", "because": "one worker: gem5's loop"},
        {"if": {"traits_absent": ["direct_calls"]}, "verdict": "exact", "because": "..."},
        {"verdict": ["exact", "race"], "because": "..."}
      ]
    })tickpar";

:func:`strategy_classes` turns it into a :class:`~tickpar.plugins.contracts.Strategy` subclass that the
registry lists like any other: its options are :class:`~tickpar.kernel.params.Param`\\ s (types ``bool``,
``int``, ``float``, ``str``, with ``default``, ``help`` and optional ``min``, ``max``, ``choices``), it runs on
the native engine only (``engines = ("native",)``; :mod:`tickpar.native.plugins` builds and loads it), and its
:meth:`~tickpar.plugins.contracts.Strategy.promise` is the first rule of ``promise`` whose ``if`` holds for the
cell (no rule: no promise; a cell in an order mode outside ``orders``: no promise).  A rule's ``if`` may test
``workers`` (an int: exactly; ``{"max": n}`` / ``{"min": n}``), ``order`` (a list), ``traits_present`` and
``traits_absent`` (lists of :data:`~tickpar.plugins.traits.TRAITS`; the traits it names are what the promise
rests on) and ``options`` (``{name: value}``, each equal); its ``verdict`` is one of
:data:`~tickpar.plugins.contracts.PROMISABLE`, a list of them, ``"not exact"`` or ``null``.

Every mistake in a declaration is one line naming the file (and line) and what is allowed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

from tickpar.kernel.params import Param
from tickpar.plugins.contracts import PROMISABLE, Promise, Strategy, StrategyResult
from tickpar.plugins.registry import PluginError
from tickpar.plugins.spec import RunSpec
from tickpar.plugins.traits import TRAITS

__all__ = ["DECLARATION_PATTERN", "DeclarationError", "NativeStrategy", "read_declaration", "strategy_classes"]

#: The declaration: one raw string literal delimited ``tickpar``.
DECLARATION_PATTERN = re.compile(r'R"tickpar\((.*?)\)tickpar"', re.DOTALL)
KEYS = {"name", "summary", "options", "orders", "max_workers", "promise"}
OPTION_TYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "str": str}
OPTION_KEYS = {"type", "default", "help", "min", "max", "choices"}
RULE_KEYS = {"if", "verdict", "because"}
CONDITIONS = {"workers", "order", "traits_present", "traits_absent", "options"}
ORDERS = ("gem5", "canonical")
NAME = re.compile(r"^[a-z][a-z0-9-]*$")


class DeclarationError(PluginError, ValueError):
    """A native plugin's declaration that cannot be used (one line, naming its file)."""

    #: The name the declaration gives itself, where it is readable: the registry answers a request for that
    #: name with this error's line (rather than "unknown strategy", followed by every broken plugin).
    plugin_name: str | None = None


def read_declaration(path: Path) -> tuple[dict[str, Any], str]:
    """The declaration of the plugin source at ``path`` (checked) and its JSON text as written."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise DeclarationError(f"native plugin {path}: cannot read it: {exc}") from None
    found = list(DECLARATION_PATTERN.finditer(text))
    if len(found) != 1:
        raise DeclarationError(
            f"native plugin {path}: {'no' if not found else len(found)} declaration{'s' if found else ''}"
            ' R"tickpar({...})tickpar": give exactly one (docs/how-to/write-a-native-strategy.md)'
        )
    raw = found[0].group(1)
    first_line = text.count("\n", 0, found[0].start(1)) + 1
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DeclarationError(f"native plugin {path}:{first_line + exc.lineno - 1}: the declaration is not JSON:"
                               f" {exc.msg}") from None  # fmt: skip
    try:
        _check(data, f"native plugin {path}:{first_line}")
    except DeclarationError as exc:
        name = data.get("name") if isinstance(data, dict) else None
        exc.plugin_name = name if isinstance(name, str) else None
        raise
    return data, raw


def _check(data: Any, where: str) -> None:
    if not isinstance(data, dict):
        raise DeclarationError(f"{where}: the declaration must be a JSON object with {', '.join(sorted(KEYS))}")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise DeclarationError(f"{where}: unknown key {unknown[0]!r}: allowed are {', '.join(sorted(KEYS))}")
    for key in ("name", "summary", "promise"):
        if key not in data:
            raise DeclarationError(f"{where}: the declaration lacks {key!r}")
    if not isinstance(data["name"], str) or not NAME.match(data["name"]):
        raise DeclarationError(f"{where}: name {data['name']!r} is not allowed: lower-case letters, digits and -")
    if not isinstance(data["summary"], str) or not data["summary"].strip():
        raise DeclarationError(f"{where}: summary must be a non-empty string (one line for tickpar list)")
    orders = data.get("orders", list(ORDERS))
    if not isinstance(orders, list) or not orders or any(o not in ORDERS for o in orders):
        raise DeclarationError(f"{where}: orders {orders!r} is not allowed: a list of {', '.join(ORDERS)}")
    limit = data.get("max_workers")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise DeclarationError(f"{where}: max_workers {limit!r} is not allowed: an int >= 1 or null")
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise DeclarationError(f"{where}: options must be an object of name -> option")
    for name, spec in options.items():
        _param(name, spec, where)
    rules = data["promise"]
    if not isinstance(rules, list) or not rules:
        raise DeclarationError(f"{where}: promise must be a non-empty list of rules ({', '.join(sorted(RULE_KEYS))})")
    for i, rule in enumerate(rules):
        _check_rule(rule, f"{where}: promise rule {i + 1}", options)


def _param(name: str, spec: Any, where: str) -> Param:
    what = f"{where}: option {name!r}"
    if not isinstance(spec, dict):
        raise DeclarationError(f"{what} must be an object with {', '.join(sorted(OPTION_KEYS))}")
    unknown = sorted(set(spec) - OPTION_KEYS)
    if unknown:
        raise DeclarationError(f"{what}: unknown key {unknown[0]!r}: allowed are {', '.join(sorted(OPTION_KEYS))}")
    kind = OPTION_TYPES.get(spec.get("type"))
    if kind is None:
        raise DeclarationError(f"{what}: type {spec.get('type')!r} is not allowed: {', '.join(OPTION_TYPES)}")
    if "default" not in spec or not isinstance(spec.get("help"), str):
        raise DeclarationError(f"{what} needs a default and a help text")
    choices = spec.get("choices")
    param = Param(kind, spec["default"], spec["help"], min=spec.get("min"), max=spec.get("max"),
                  choices=tuple(choices) if isinstance(choices, list) else None)  # fmt: skip
    try:
        param.coerce(name, spec["default"], "default of option")
    except ValueError as exc:
        raise DeclarationError(f"{where}: {exc}") from None
    return param


def _check_rule(rule: Any, where: str, options: dict[str, Any]) -> None:
    if not isinstance(rule, dict) or "verdict" not in rule:
        raise DeclarationError(f"{where}: a rule is an object with a verdict (and if, because)")
    unknown = sorted(set(rule) - RULE_KEYS)
    if unknown:
        raise DeclarationError(f"{where}: unknown key {unknown[0]!r}: allowed are {', '.join(sorted(RULE_KEYS))}")
    try:
        Promise(_verdict(rule["verdict"]))
    except ValueError as exc:
        raise DeclarationError(f"{where}: {exc}") from None
    condition = rule.get("if", {})
    if not isinstance(condition, dict):
        raise DeclarationError(f"{where}: if must be an object of {', '.join(sorted(CONDITIONS))}")
    unknown = sorted(set(condition) - CONDITIONS)
    if unknown:
        allowed = ", ".join(sorted(CONDITIONS))
        raise DeclarationError(f"{where}: unknown condition {unknown[0]!r}: allowed are {allowed}")
    for key in ("traits_present", "traits_absent"):
        traits = condition.get(key, [])
        bad = [t for t in traits if t not in TRAITS] if isinstance(traits, list) else [traits]
        if bad:
            raise DeclarationError(f"{where}: {key} {bad[0]!r} is not a trait: allowed are {', '.join(TRAITS)}")
    for name in condition.get("options", {}):
        if name not in options:
            raise DeclarationError(f"{where}: condition on option {name!r}, which the declaration does not declare")
    order = condition.get("order", list(ORDERS))
    if not isinstance(order, list) or any(o not in ORDERS for o in order):
        raise DeclarationError(f"{where}: order {order!r} is not allowed: a list of {', '.join(ORDERS)}")
    workers = condition.get("workers")
    if workers is not None and not _workers_condition_ok(workers):
        raise DeclarationError(f"{where}: workers {workers!r} is not allowed: an int, or {{'min': n}} / {{'max': n}}")


def _workers_condition_ok(workers: Any) -> bool:
    if isinstance(workers, int) and not isinstance(workers, bool):
        return workers >= 1
    return isinstance(workers, dict) and bool(workers) and set(workers) <= {"min", "max"} and all(
        isinstance(v, int) and not isinstance(v, bool) for v in workers.values()
    )


def _verdict(value: Any) -> str | list[str] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ValueError(f"a promise of {value!r} is not allowed: a verdict ({', '.join(PROMISABLE)}), a list, "
                     "'not exact' or null")  # fmt: skip


def _holds(condition: dict[str, Any], spec: RunSpec, workers: int, options: dict[str, Any]) -> bool:
    want = condition.get("workers")
    if isinstance(want, int) and workers != want:
        return False
    if isinstance(want, dict) and not (want.get("min", workers) <= workers <= want.get("max", workers)):
        return False
    if spec.order not in condition.get("order", ORDERS):
        return False
    if any(options.get(k) != v for k, v in condition.get("options", {}).items()):
        return False
    traits = spec.traits() if ("traits_present" in condition or "traits_absent" in condition) else frozenset()
    if any(t not in traits for t in condition.get("traits_present", [])):
        return False
    return not any(t in traits for t in condition.get("traits_absent", []))


class NativeStrategy(Strategy):
    """A native plugin's strategy class (made by :func:`strategy_classes`; abstract until then)."""

    engines: ClassVar[tuple[str, ...]] = ("native",)
    #: The plugin's source file and its declaration (JSON text as written, and parsed).
    native_source: ClassVar[Path]
    declaration_text: ClassVar[str]
    promise_rules: ClassVar[list[dict[str, Any]]]

    def promise(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> Promise:
        """The first rule of the declaration's ``promise`` whose ``if`` holds (module docstring)."""
        if spec.order not in self.orders:
            return Promise(None, (), f"order {spec.order} is not one {self.name} guarantees")
        for rule in self.promise_rules:
            condition = rule.get("if", {})
            if _holds(condition, spec, workers, options):
                rests_on = [*condition.get("traits_present", []), *condition.get("traits_absent", [])]
                return Promise(_verdict(rule["verdict"]), tuple(rests_on), rule.get("because", f"{self.name}'s rule"))
        return Promise(None, (), f"no rule of {self.name}'s promise holds for this cell")

    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        raise ValueError(f"strategy {self.name} is a native plugin ({self.native_source}): run it with --engine native")


def strategy_classes(path: Path) -> list[type[Any]]:
    """The strategy class that the native plugin source at ``path`` declares (raises :class:`DeclarationError`)."""
    data, raw = read_declaration(path)
    where = f"native plugin {path}"
    options = {name: _param(name, spec, where) for name, spec in data.get("options", {}).items()}
    attrs = {
        "name": data["name"],
        "summary": data["summary"],
        "options": options,
        "orders": tuple(data.get("orders", ORDERS)),
        "max_workers": data.get("max_workers"),
        "native_source": path.resolve(),
        "declaration_text": raw,
        "promise_rules": list(data["promise"]),
        "__module__": __name__,
        "__doc__": f"Native strategy plugin {data['name']} ({path}).",
    }
    cls = type(f"Native_{data['name'].replace('-', '_')}", (NativeStrategy,), attrs)
    return [cls]
