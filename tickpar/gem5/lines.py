"""Read a gem5 event trace line by line: the stock ``Event`` debug trace or the insert log.

Two formats, both streamed (plain text or ``.gz``; a file is never read whole):

``event`` (stock gem5, ``--debug-flags=Event``)
    ``<tick>: [Event: ]<name>: <description> <instance> <action> @ <when>`` where ``action`` is
    ``scheduled``, ``rescheduled``, ``descheduled`` or ``executed`` (gem5's ``Event::trace``,
    printed through ``Trace::Logger`` with its ``"%7d: "`` tick prefix; ``Event: `` appears with
    the ``FmtFlag`` flag).  ``instance`` is the object's instance counter (debug builds) or its
    address (other builds).
``insert-log``
    ``parentPtr,parentName,childPtr,childName,curTick,when`` per ``EventQueue::insert()`` while an
    event runs, ``childPtr,childName,curTick,when`` when none does.

:func:`read_trace` yields one :class:`TraceLine` per event line and counts what it skips: gem5's
banner, lines of other debug flags (stock format), blank lines.  Bad input raises
:class:`TraceError` naming the file, the line and what was expected.  A last line cut mid-way (no
newline and unparsable) is dropped with a warning instead.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FORMATS", "MAX_TICK", "TraceError", "TraceLine", "TraceReader", "detect_format", "read_trace"]

#: The formats :func:`read_trace` takes (``auto`` detects one of the other two from the first event line).
FORMATS = ("auto", "event", "insert-log")
#: gem5's ``MaxTick``: the ``when`` of the simulation-limit event when ``simulate()`` has no limit.
MAX_TICK = 2**64 - 1

ACTIONS = ("scheduled", "rescheduled", "descheduled", "executed")

_STOCK = re.compile(
    r"^\s*(?P<tick>\d+): (?:Event: )?(?P<name>.+?): (?P<desc>.*?) ?(?P<inst>\S+) "
    r"(?P<action>scheduled|rescheduled|descheduled|executed) @ (?P<when>\d+)\s*$"
)
_STOCK_NO_TICK = re.compile(r"^\s*(?:Event: )?\S.*: .* (?:scheduled|rescheduled|descheduled|executed) @ \d+\s*$")
_OTHER_FLAG = re.compile(r"^\s*\d+: \S")
_PTR = re.compile(r"^(0x[0-9a-fA-F]+|\d+)$")


class TraceError(ValueError):
    """Bad trace input: ``file:line: what is wrong, what was expected`` (one line)."""


@dataclass(frozen=True, slots=True)
class TraceLine:
    """One event line, normalised over both formats.

    ``action``: one of :data:`ACTIONS` (the insert log says ``inserted``, which is a schedule or a
    reschedule: the importer decides).  ``parent``/``parent_name``: the running event (insert log
    only; ``None`` when none ran).  ``tick``: gem5's ``curTick`` when the line was printed.
    """

    lineno: int
    tick: int
    action: str
    ptr: str
    name: str
    when: int
    parent: str | None = None
    parent_name: str | None = None


@dataclass
class TraceReader:
    """What one read skipped and warned about (filled while :func:`read_trace` runs)."""

    path: str
    format: str = "auto"
    lines: int = 0
    events: int = 0
    skipped_banner: int = 0
    skipped_other: int = 0
    warnings: list[str] = field(default_factory=list)


def _open(path: Path) -> Iterator[str]:
    with path.open("rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
    stream = (
        gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="")
        if gz
        else path.open(encoding="utf-8", errors="replace", newline="")
    )
    with stream:
        yield from stream


def detect_format(line: str) -> str | None:
    """The format an event line is in, or ``None`` if it is neither (banner, other debug output)."""
    fields = line.strip().split(",")
    if len(fields) in (4, 6) and _PTR.match(fields[0]) and fields[-1].isdigit() and fields[-2].isdigit():
        return "insert-log"
    if _STOCK.match(line):
        return "event"
    return None


def _bad(path: Path, lineno: int, what: str) -> TraceError:
    return TraceError(f"{path}:{lineno}: {what}")


def _insert_line(fields: list[str], lineno: int, path: Path) -> TraceLine:
    if len(fields) == 6:
        parent, parent_name, ptr, name, tick, when = fields
    elif len(fields) == 4:
        ptr, name, tick, when = fields
        parent = parent_name = None
    else:
        raise _bad(path, lineno, f"{len(fields)} comma-separated fields: the insert log has 4 or 6")
    if not (tick.isdigit() and when.isdigit()):
        raise _bad(path, lineno, f"curTick {tick!r} and when {when!r} must be non-negative integers")
    if not _PTR.match(ptr) or (parent is not None and not _PTR.match(parent)):
        raise _bad(path, lineno, f"event pointer {parent if parent is not None else ptr!r}: expected 0x<hex>")
    return TraceLine(lineno, int(tick), "inserted", ptr, name, int(when), parent, parent_name)


def read_trace(path: str | Path, fmt: str = "auto", reader: TraceReader | None = None) -> Iterator[TraceLine]:
    """Yield the event lines of ``path`` in file order (see the module docstring)."""
    if fmt not in FORMATS:
        raise TraceError(f"trace format {fmt!r} is not allowed: one of {', '.join(FORMATS)}")
    p = Path(path)
    if not p.is_file():
        raise TraceError(f"{p}: no such trace file")
    info = reader if reader is not None else TraceReader(str(p))
    info.format = fmt
    pending_bad: tuple[int, str] | None = None
    try:
        for lineno, text in enumerate(_open(p), start=1):
            info.lines = lineno
            if pending_bad is not None:  # a bad line that is not the last one: a real error
                raise _bad(p, pending_bad[0], pending_bad[1])
            line = text.rstrip("\r\n")
            if not line.strip():
                continue
            if info.format == "auto":
                found = detect_format(line)
                if found is None:
                    if _STOCK_NO_TICK.match(line):
                        raise _bad(p, lineno, "an Event line without its tick: rerun gem5 without FmtTicksOff")
                    info.skipped_banner += 1
                    continue
                info.format = found
            if info.format == "insert-log":
                fields = line.split(",")
                if len(fields) not in (4, 6):
                    if info.events == 0:
                        info.skipped_banner += 1  # gem5's start-up banner before the first insertion
                        continue
                    what = f"{len(fields)} comma-separated fields: the insert log has 4 or 6"
                    if not text.endswith("\n"):
                        pending_bad = (lineno, what)
                        continue
                    raise _bad(p, lineno, what)
                try:
                    out = _insert_line(fields, lineno, p)
                except TraceError:
                    if not text.endswith("\n"):
                        pending_bad = (lineno, "cut")
                        continue
                    raise
            else:
                m = _STOCK.match(line)
                if m is None:
                    if _STOCK_NO_TICK.match(line):
                        raise _bad(p, lineno, "an Event line without its tick: rerun gem5 without FmtTicksOff")
                    if not text.endswith("\n") and info.events:
                        pending_bad = (lineno, "cut")
                        continue
                    if info.events == 0:
                        info.skipped_banner += 1
                        continue
                    if _OTHER_FLAG.match(line):  # another debug flag's line, interleaved
                        info.skipped_other += 1
                        continue
                    expected = "'<tick>: <name>: <description> <instance> <action> @ <when>'"
                    raise _bad(p, lineno, f"not an Event line: expected {expected}, got {line[:80]!r}")
                out = TraceLine(lineno, int(m["tick"]), m["action"], m["inst"], m["name"], int(m["when"]))
            info.events += 1
            yield out
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise TraceError(f"{p}:{info.lines + 1}: the file cannot be read ({exc}): a corrupt or cut .gz?") from None
    if pending_bad is not None:
        info.warnings.append(f"{p}:{pending_bad[0]}: the last line is cut mid-way: dropped")
    if info.events == 0:
        raise TraceError(
            f"{p}: no event lines in {info.lines} line(s): expected the stock Event trace or the insert log"
            f" (format={fmt})"
        )
