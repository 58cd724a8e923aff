"""Declared parameters: coercion from CLI strings and config values, and one-line errors that say what is allowed."""

from __future__ import annotations

import math

import pytest

from tickpar.kernel.params import Param, ParamError, parse_assignments, resolve

WHAT = "workload demo parameter"
SPECS = {
    "lps": Param(int, 16, "number of LPs", min=1, max=256),
    "remote": Param(float, 0.25, "fraction sent away", min=0.0, max=1.0),
    "fast": Param(bool, False, "go fast"),
    "mode": Param(str, "a", "the mode", choices=("a", "b")),
    "limit": Param(int, None, "optional limit", min=0, nullable=True),
    "free": Param(float, 1.5, "unbounded"),
}


def one_line_error(spec: Param, name: str, value: object) -> str:
    with pytest.raises(ParamError) as info:
        spec.coerce(name, value, WHAT)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_int_coercion() -> None:
    """Ints come from ints, integral floats and strings, including scientific notation ("1e2")."""
    p = SPECS["lps"]
    assert [p.coerce("lps", v, WHAT) for v in (3, 3.0, "3", " 7 ", "1e2", "2.5e1")] == [3, 3, 3, 7, 100, 25]
    assert all(type(p.coerce("lps", v, WHAT)) is int for v in (3.0, "1e2"))


@pytest.mark.parametrize("value", ["abc", "2.5", 2.5, True, "1.5e0", "1e400", "", [1]])
def test_int_rejects_non_integers(value: object) -> None:
    """Non-integral or non-numeric values for an int are one-line errors naming the value and the range
    (never silently truncated)."""
    text = one_line_error(SPECS["lps"], "lps", value)
    assert text.startswith(f"{WHAT} lps={value!r} ")
    assert "int in [1, 256]" in text


def test_range_errors_name_value_and_range() -> None:
    """Values outside [min, max] are ParamErrors naming the parameter, the value and the allowed range."""
    expected = "workload demo parameter lps='0' is out of range: int in [1, 256]"
    assert one_line_error(SPECS["lps"], "lps", "0") == expected
    assert "lps=257" in one_line_error(SPECS["lps"], "lps", 257)
    assert "float in [0, 1]" in one_line_error(SPECS["remote"], "remote", "1.5")
    assert "int in [0, inf] or none" in one_line_error(SPECS["limit"], "limit", -1)
    assert SPECS["lps"].coerce("lps", 1, WHAT) == 1 and SPECS["lps"].coerce("lps", "256", WHAT) == 256


def test_float_coercion_and_nan() -> None:
    """Floats come from numbers and numeric strings; NaN is never allowed (it would slip past any range check)."""
    p = SPECS["remote"]
    assert p.coerce("remote", "0.5", WHAT) == 0.5 and p.coerce("remote", 1, WHAT) == 1.0
    assert SPECS["free"].coerce("free", "1e3", WHAT) == 1000.0
    assert "remote='nan'" in one_line_error(p, "remote", "nan")
    assert "free=nan" in one_line_error(SPECS["free"], "free", math.nan)
    assert "remote=True" in one_line_error(p, "remote", True)
    assert SPECS["free"].coerce("free", "-inf", WHAT) == -math.inf


def test_bool_coercion() -> None:
    """Bools accept true/false, yes/no, on/off, 1/0 (any case) and real bools; anything else is an error."""
    p = SPECS["fast"]
    for text in ("true", "TRUE", "yes", "on", "1", 1, True):
        assert p.coerce("fast", text, WHAT) is True
    for text in ("false", "No", "off", "0", 0, False):
        assert p.coerce("fast", text, WHAT) is False
    assert one_line_error(p, "fast", "maybe") == "workload demo parameter fast='maybe' is not allowed: true or false"
    assert "fast=2" in one_line_error(p, "fast", 2)


def test_choices_and_str() -> None:
    """A str parameter with choices accepts only those, and the error lists them."""
    p = SPECS["mode"]
    assert p.coerce("mode", "b", WHAT) == "b"
    assert one_line_error(p, "mode", "c") == "workload demo parameter mode='c' is not allowed: one of a, b"
    assert "mode=3" in one_line_error(p, "mode", 3)


def test_nullable() -> None:
    """A nullable parameter accepts None, "none" and "null"; others refuse None with a one-line error."""
    p = SPECS["limit"]
    assert p.coerce("limit", None, WHAT) is None and p.coerce("limit", "None", WHAT) is None
    assert p.coerce("limit", "null", WHAT) is None and p.coerce("limit", "5", WHAT) == 5
    expected = "workload demo parameter lps=None is not allowed: int in [1, 256]"
    assert one_line_error(SPECS["lps"], "lps", None) == expected
    assert "lps='none'" in one_line_error(SPECS["lps"], "lps", "none")


def test_resolve_fills_defaults_and_validates() -> None:
    """resolve() overlays given values on the defaults, each coerced, and returns every declared name."""
    out = resolve(SPECS, {"lps": "4", "fast": "yes"}, WHAT)
    assert out == {"lps": 4, "remote": 0.25, "fast": True, "mode": "a", "limit": None, "free": 1.5}
    assert resolve(SPECS, None, WHAT) == {name: spec.default for name, spec in SPECS.items()}
    with pytest.raises(ParamError, match="remote='2'"):
        resolve(SPECS, {"remote": "2"}, WHAT)


def test_resolve_unknown_name_lists_allowed() -> None:
    """An undeclared name is a one-line ParamError naming it and every allowed name."""
    with pytest.raises(ParamError) as info:
        resolve(SPECS, {"lsp": 3}, WHAT)
    text = str(info.value)
    assert text == "unknown workload demo parameter 'lsp': allowed are fast, free, limit, lps, mode, remote"
    with pytest.raises(ParamError, match=r"allowed are \(none\)"):
        resolve({}, {"x": 1}, "strategy s option")


def test_parse_assignments() -> None:
    """key=value items become a dict (whitespace stripped, '=' allowed in the value); malformed items are errors."""
    assert parse_assignments(["a=1", " b = x=y ", "c="], "--param") == {"a": "1", "b": "x=y", "c": ""}
    assert parse_assignments(None, "--param") == {}
    for bad in ("foo", "=1", " =2"):
        with pytest.raises(ParamError) as info:
            parse_assignments([bad], "--option")
        assert str(info.value) == f"--option {bad!r} is not of the form key=value"


def test_describe_and_allowed() -> None:
    """describe() is JSON-ready and carries type, default, help and whichever bounds are declared."""
    assert SPECS["lps"].describe() == {"type": "int", "default": 16, "help": "number of LPs", "min": 1, "max": 256}
    assert SPECS["mode"].describe()["choices"] == ["a", "b"]
    assert SPECS["limit"].describe()["nullable"] is True
    assert SPECS["free"].allowed() == "float"
    assert Param(float, 0.0, "h", max=2.5).allowed() == "float in [-inf, 2.5]"
