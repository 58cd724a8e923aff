"""Declared parameters: one table per workload or strategy, with types, defaults and ranges.

Workload parameters and strategy options are declared as :class:`Param` tables
(ROSS's ``TWOPT_*`` table, in Python).  :func:`resolve` turns user input (CLI
strings or config values) into a complete, validated dict, and every bad value
becomes a one-line :class:`ParamError` naming the value and what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Param", "ParamError", "parse_assignments", "resolve"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class ParamError(ValueError):
    """A parameter or option value that is not allowed (the message is one line)."""


@dataclass(frozen=True)
class Param:
    """One declared parameter: ``type`` is int, float, bool or str."""

    type: type
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None
    nullable: bool = False

    def allowed(self) -> str:
        """What values are allowed, in words."""
        if self.choices is not None:
            text = "one of " + ", ".join(str(c) for c in self.choices)
        elif self.type is bool:
            text = "true or false"
        elif self.min is not None or self.max is not None:
            lo = "-inf" if self.min is None else _fmt(self.min)
            hi = "inf" if self.max is None else _fmt(self.max)
            text = f"{self.type.__name__} in [{lo}, {hi}]"
        else:
            text = self.type.__name__
        return text + (" or none" if self.nullable else "")

    def coerce(self, name: str, value: Any, what: str) -> Any:
        """Return ``value`` converted to this parameter's type, or raise ParamError."""
        if value is None or (isinstance(value, str) and value.lower() in {"none", "null"} and self.nullable):
            if self.nullable:
                return None
            raise ParamError(f"{what} {name}=None is not allowed: {self.allowed()}")
        try:
            converted = self._convert(value)
        except (TypeError, ValueError):
            raise ParamError(f"{what} {name}={value!r} is not allowed: {self.allowed()}") from None
        if self.choices is not None and converted not in self.choices:
            raise ParamError(f"{what} {name}={value!r} is not allowed: {self.allowed()}")
        if (self.min is not None and converted < self.min) or (self.max is not None and converted > self.max):
            raise ParamError(f"{what} {name}={value!r} is out of range: {self.allowed()}")
        return converted

    def _convert(self, value: Any) -> Any:
        if self.type is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
                return value.lower() in _TRUE
            raise ValueError(value)
        if self.type is int:
            if isinstance(value, bool):
                raise ValueError(value)
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError(value)
                return int(value)
            if isinstance(value, str) and "e" in value.lower():
                number = float(value)  # "1e3"; "1.5e0" or "1e400" must not be truncated or overflow
                if not number.is_integer():
                    raise ValueError(value)
                return int(number)
            return int(value)
        if self.type is float:
            if isinstance(value, bool):
                raise ValueError(value)
            number = float(value)
            if number != number:  # NaN compares false with any bound, so it would pass every range check
                raise ValueError(value)
            return number
        if self.type is str:
            if not isinstance(value, str):
                raise ValueError(value)
            return value
        raise TypeError(f"unsupported parameter type {self.type}")

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (for ``tickpar list --json`` and the config schema)."""
        out: dict[str, Any] = {"type": self.type.__name__, "default": self.default, "help": self.help}
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.nullable:
            out["nullable"] = True
        return out


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def resolve(specs: Mapping[str, Param], given: Mapping[str, Any] | None, what: str) -> dict[str, Any]:
    """Defaults overlaid with ``given``, each value validated; unknown names are errors.

    ``what`` names the owner in messages, e.g. ``"workload phold parameter"``.
    """
    given = dict(given or {})
    unknown = sorted(set(given) - set(specs))
    if unknown:
        allowed = ", ".join(sorted(specs)) or "(none)"
        raise ParamError(f"unknown {what} {unknown[0]!r}: allowed are {allowed}")
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        out[name] = spec.coerce(name, given[name], what) if name in given else spec.default
    return out


def parse_assignments(items: list[str] | None, flag: str) -> dict[str, str]:
    """Parse ``["k=v", ...]`` from the CLI; a malformed item is a one-line ParamError."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParamError(f"{flag} {item!r} is not of the form key=value")
        out[key.strip()] = value.strip()
    return out
