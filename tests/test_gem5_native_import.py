"""The native gem5 importer (tickpar_native._gem5) gives the Python importer's ImportedTrace, field by field.

Every field, the rules counters (with their order), the reader's counters and warnings, and the same
TraceError text on bad input (tests/gem5_importers.py compares them), on: every trace tests/test_gem5_import.py
writes (its ``import_trace`` fixture runs each of its tests with both importers too), the shared real traces,
emitted phold and multicore traces in both formats (plain and .gz), edge cases of the two line formats, and
random traces.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import pytest
from gem5_importers import compare

from tickpar.gem5 import TraceError
from tickpar.gem5 import importer as importer_mod
from tickpar.gem5.emit import emit_trace
from tickpar.gem5.lines import MAX_TICK
from tickpar.runner import resolve_cell

_gem5 = pytest.importorskip("tickpar_native._gem5", reason="the native gem5 importer is not built")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "gem5-traces"
SHARED_TRACES = sorted(SHARED.glob("*.insert-log.txt")) if SHARED.is_dir() else []
#: gem5's own multi-core runs (stock Event traces); the fast suite compares the smaller ones
SHARED_STOCK = sorted(SHARED.glob("*.events.txt.gz")) if SHARED.is_dir() else []
LARGE_STOCK = ("tg-random-16core", "tg-random-32core", "tg-random-64core", "garnet-mesh-64node")


def write(tmp_path: Path, text: str | bytes, name: str = "trace.txt") -> Path:
    path = tmp_path / name
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


# -- the shared real traces and emitted ones ------------------------------------------------------------
@pytest.mark.skipif(not SHARED_TRACES, reason=f"no shared gem5 traces in {SHARED}")
@pytest.mark.parametrize("path", SHARED_TRACES, ids=[p.name for p in SHARED_TRACES])
@pytest.mark.parametrize("fmt", ["auto", "insert-log"])
@pytest.mark.parametrize("events", [0, 300])
def test_shared_traces(tmp_path: Path, path: Path, fmt: str, events: int) -> None:
    trace = compare(path, fmt, events=events)
    assert trace.events > 100
    gz = write(tmp_path, path.read_bytes(), path.name + ".gz")
    compare(gz, fmt, events=events)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=[pytest.mark.slow] if p.name.split(".")[0] in LARGE_STOCK else [])
        for p in SHARED_STOCK
    ],
    ids=[p.name for p in SHARED_STOCK],
)
def test_shared_multicore_stock_traces(path: Path) -> None:
    trace = compare(path)
    assert trace.exit_events and trace.rules["exit_event"] == 1


EMITTED = {
    "phold": {"lps": 6, "end_tick": 4000, "granularity": 20},
    "multicore": {"cores": 3, "requests_per_core": 150, "l2_banks": 2, "mem_ctrls": 1},
}


@pytest.mark.parametrize("workload", sorted(EMITTED))
@pytest.mark.parametrize("fmt", ["event", "insert-log"])
@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_emitted_traces(tmp_path: Path, workload: str, fmt: str, suffix: str) -> None:
    cell = resolve_cell(workload, EMITTED[workload], "sequential", {}, 1, 1)
    path = tmp_path / f"{workload}.{fmt}{suffix}"
    _lines, mapping = emit_trace(cell.spec, path, fmt)
    for read_as in ("auto", fmt):
        trace = compare(path, read_as, mapping)
        assert trace.events > 200
    compare(path, fmt, mapping, events=100)
    compare(path, fmt, mapping, events=1)


# -- edge cases of the line formats -------------------------------------------------------------------------
INSERT = "0x10,a.e,0,5\n0x20,b.e,0,5\n0x10,a.e,0x10,a.e,5,9\n0x10,a.e,0x20,b.e,9,9\n0x20,b.e,0x10,a.e,9,12\n"
STOCK = (
    "      5: a.e: generic 0x10 executed @ 5\n"
    "      5: a.e: generic 0x10 scheduled @ 9\n"
    "      9: a.e: generic 0x10 executed @ 9\n"
    "      9: b.e: generic 0x20 scheduled @ 9\n"
    "      9: b.e: generic 0x20 executed @ 9\n"
)
EDGES = {
    "crlf": INSERT.replace("\n", "\r\n"),
    "cr": INSERT.replace("\n", "\r"),
    "stock-cr": STOCK.replace("\n", "\r"),
    "cut-insert": INSERT + "0x10,a.e,0x1",
    "cut-insert-fields": INSERT + "0x10,a.e,0x10",
    "cut-stock": STOCK + "     12: a.e: gen",
    "cut-then-more": INSERT.replace("\n", "\r", 3),
    "cut-line-then-blank": INSERT + "0x10,a\r\n",
    "no-final-newline": INSERT.rstrip("\n"),
    "blank-lines": "\n \t\n" + INSERT.replace("\n", "\n\x0b\x1c\n"),
    "leading-space-insert": "  " + INSERT,
    "banner-with-commas": "a,b,c\nx,y\n" + INSERT,
    "banner-mid": INSERT + "not,an,insert\n" + INSERT.replace("0,5", "12,20"),
    "event-prefix": STOCK.replace(": a.e:", ": Event: a.e:"),
    "event-named-event": "      5: Event: generic 0x10 executed @ 5\n      5: Event: x: y 0x10 scheduled @ 7\n",
    "name-with-colons": STOCK.replace("a.e:", "sys.cpu: tick: a.e:"),
    "tabs-and-trailing": STOCK.replace(" executed @ 5", "\texecuted @ 5").replace("@ 9\n", "@ 9 \t\n"),
    "desc-empty": (
        "      5: a.e: 0x10 executed @ 5\n      5: a.e:  0x10 scheduled @ 9\n      9: a.e: x\t0x10 executed @ 9\n"
    ),
    "other-flags": STOCK.replace("\n", "\n     5: system.cpu: T0 : 0x400 : nop\n", 2),
    "stock-garbage": STOCK + "garbage 'quoted' \"both\" \\ \x01\x7f" + "x" * 100 + "\n" + STOCK,
    "stock-garbage-single": STOCK + "garbage 'only single'\n" + STOCK,
    "stock-no-tick": "a.e: generic 1 scheduled @ 10\n",
    "stock-no-tick-mid": STOCK + "a.e: generic 1 scheduled @ 10\n",
    "stock-rescheduled": STOCK
    + "      9: c.e: generic 0x30 scheduled @ 20\n      9: c.e: generic 0x30 rescheduled @ 15\n"
    + "     15: c.e: generic 0x30 executed @ 15\n      15: c.e: generic 0x30 descheduled @ 15\n",
    "stock-limit": STOCK.replace("@ 9\n", f"@ {MAX_TICK}\n", 1),
    "insert-limit-reused": INSERT + f"0x10,a.e,0x99,lim,12,{MAX_TICK}\n0x10,a.e,0x99,other,12,14\n0x99,x,14,20\n",
    "insert-pointer-reuse": INSERT + "0x20,b.e,0x30,c.e,12,30\n0x20,b.e,0x30,d.e,12,13\n0x30,d.e,0x30,c.e,13,13\n",
    "insert-back-in-time": INSERT + "0x10,a.e,0x10,a.e,7,8\n",
    "bad-ptr-4": INSERT + "zz,a.e,12,13\n",
    "bad-ptr-6-both": INSERT + "0xZ,a.e,zz,b.e,12,13\n",
    "bad-numbers": INSERT + "0x10,a.e,0x10,a.e,1x2,13\n",
    "bad-quote": INSERT + "0x10,a.e,0x10,a.e,it's,13\n",
    "nul-bytes": INSERT + "0x10,a\x00e,0x10,a.e,12,14\n",
    "empty-names": INSERT + "0x10,,0x40,,12,14\n",
    "ptr-decimal": INSERT + "16,a.e,0x10,a.e,12,14\n",
    "huge-when-max": INSERT + f"0x10,a.e,0x10,a.e,12,{MAX_TICK}\n",
    "only-banner": "gem5 Simulator System\n\n",
    "leading-zeros": INSERT + "0x10,a.e,0x10,a.e,0012,00014\n",
}


@pytest.mark.parametrize("name", sorted(EDGES))
@pytest.mark.parametrize("fmt", ["auto", "event", "insert-log"])
def test_edge_cases(tmp_path: Path, name: str, fmt: str) -> None:
    for suffix in (".txt", ".txt.gz"):
        path = write(tmp_path, EDGES[name], "trace" + suffix)
        for events in (0, 2, 3, -1, 10**30):
            try:
                compare(path, fmt, events=events)
            except TraceError:
                pass  # the same error from both: compare() checked it


LONG = "0x10,a.e,0,1\n" + "".join(f"0x10,a.e,0x10,a.e,{t},{t + 1}\n" for t in range(1, 3000))


def test_inputs_the_port_defers_to_python(tmp_path: Path) -> None:
    cases = {
        "non-ascii.txt": (INSERT + "0x10,a.é,0x10,a.e,12,14\n").encode(),
        "bad-utf8.txt": INSERT.encode() + b"0x10,a.\xff,0x10,a.e,12,14\n",
        "huge-tick.txt": (INSERT + f"0x10,a.e,0x10,a.e,{2**63},{2**63 + 1}\n").encode(),
        "beyond-max.txt": (INSERT + f"0x10,a.e,0x10,a.e,12,{2**64}\n").encode(),
        "garbage-after.txt.gz": gzip.compress(INSERT.encode()) + b"garbage",
        "cut.txt.gz": gzip.compress(LONG.encode())[:-20],
        "corrupt.txt.gz": gzip.compress(LONG.encode())[:300] + b"x" * 50 + gzip.compress(LONG.encode())[350:],
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert importer_mod.import_native(path, "auto", 0) is None, name
        try:
            compare(path, native_expected=False)
        except TraceError:
            pass


def test_gzip_members_and_padding(tmp_path: Path) -> None:
    half = len(INSERT) // 2
    cut = INSERT.rfind("\n", 0, half) + 1
    path = tmp_path / "multi.txt.gz"
    path.write_bytes(gzip.compress(INSERT[:cut].encode()) + gzip.compress(INSERT[cut:].encode()) + b"\0" * 7)
    compare(path)


def test_the_env_var_chooses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, INSERT)
    calls: list[str] = []
    real = importer_mod.import_native

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append("native")
        return real(*args, **kwargs)

    monkeypatch.setattr(importer_mod, "import_native", spy)
    for choice, expected in (("python", []), ("native", ["native"]), ("", ["native"])):
        monkeypatch.setenv("TICKPAR_GEM5_IMPORTER", choice)
        calls.clear()
        importer_mod.import_trace(path)
        assert calls == expected
    monkeypatch.setenv("TICKPAR_GEM5_IMPORTER", "rust")
    with pytest.raises(TraceError, match="TICKPAR_GEM5_IMPORTER='rust' is not allowed"):
        importer_mod.import_trace(path)


def test_native_required_but_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tickpar_native

    monkeypatch.setattr(tickpar_native, "_gem5", None)
    monkeypatch.setenv("TICKPAR_GEM5_IMPORTER", "native")
    with pytest.raises(TraceError, match="the native importer is not built"):
        importer_mod.import_trace(write(tmp_path, INSERT))
    monkeypatch.delenv("TICKPAR_GEM5_IMPORTER")
    assert importer_mod.import_trace(write(tmp_path, INSERT)).events > 0  # the Python importer


# -- random traces: every rule, in every order ------------------------------------------------------------------
def random_trace(rng: random.Random, fmt: str) -> str:
    ptrs = [f"0x{16 * i:x}" for i in range(1, rng.randint(2, 9))]
    names = ["a.e", "b.e", "c.wrapped_function_event", "d x", "Event_1"][: rng.randint(1, 5)]
    tick = 0
    lines = []
    for _ in range(rng.randint(1, 60)):
        if rng.random() < 0.3:
            tick += rng.choice([0, 1, 1, 2, 5])
        if rng.random() < 0.002:
            tick = max(0, tick - 1)  # a multi-queue trace
        ptr, name = rng.choice(ptrs), rng.choice(names)
        when = max(0, tick + rng.choice([0, 0, 1, 2, 3, 10, -1]))
        if rng.random() < 0.03:
            when = MAX_TICK
        if fmt == "insert-log":
            if rng.random() < 0.15:
                lines.append(f"{ptr},{name},{tick},{when}")
            else:
                lines.append(f"{rng.choice(ptrs)},{rng.choice(names)},{ptr},{name},{tick},{when}")
        else:
            action = rng.choice(["scheduled", "scheduled", "rescheduled", "descheduled", "executed", "executed"])
            at = tick if action == "executed" else when
            lines.append(f"{tick:7d}: {name}: generic {ptr} {action} @ {at}")
        if rng.random() < 0.003:
            lines.append(rng.choice(["junk line", "  3: sys: other flag", "1,2,3", ""]))
    text = "\n".join(lines)
    return text + ("\n" if rng.random() < 0.9 else "")


@pytest.mark.parametrize("seed", range(40))
def test_random_traces(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(25):
        fmt = rng.choice(["event", "insert-log"])
        path = write(tmp_path, random_trace(rng, fmt), f"t{i}.txt")
        for read_as, events in (("auto", 0), (fmt, 0), (fmt, rng.randint(1, 12))):
            try:
                compare(path, read_as, events=events)
            except TraceError:
                pass


TOKENS = [
    "5", "12", "007", ":", ": ", " ", "  ", "\t", "\x0b", "\x1c", "Event: ", "Event:", "Event", "a.e", "sys.cpu",
    "generic", "0x10", "0x", "zz", "executed", "scheduled", "rescheduled", "descheduled", "@", " @ ", "@ ", ",",
    "'", '"', "\\", "\x00", "x",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(8))
def test_random_lines(tmp_path: Path, seed: int) -> None:
    """One line of random tokens between valid ones: the regexes' matches, groups, skips and error texts."""
    rng = random.Random(seed)
    for i in range(150):
        fmt = rng.choice(["event", "insert-log"])
        valid = STOCK if fmt == "event" else INSERT
        junk = "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 14)))
        if rng.random() < 0.5:
            junk += rng.choice([" executed @ 9", " scheduled @ 12", " rescheduled @ 10 ", ",9,12", ",0x20,b.e,9,12"])
        text = (valid if rng.random() < 0.7 else "") + junk + "\n" + valid.replace("      9:", "     19:")
        path = write(tmp_path, text, f"l{i}.txt")
        for read_as in ("auto", fmt):
            try:
                compare(path, read_as)
            except TraceError:
                pass


def test_paths_are_named_as_given(tmp_path: Path) -> None:
    """The reader's errors name str(Path(path)); the importer's (curTick goes back) and ImportedTrace str(path)."""
    write(tmp_path, EDGES["insert-back-in-time"], "back.txt")
    write(tmp_path, INSERT + "zz,a.e,12,13\n", "bad.txt")
    for name in ("back.txt", "bad.txt"):
        with pytest.raises(TraceError):
            compare(f"{tmp_path}//./{name}")
    write(tmp_path, INSERT, "good.txt")
    trace = compare(f"{tmp_path}//./good.txt")
    assert trace.path.endswith("//./good.txt") and trace.reader.path == trace.path


def test_the_port_returns_exactly_the_importers_array_columns(tmp_path: Path) -> None:
    """The int64 buffers the C++ port returns are ImportedTrace's ARRAY_COLUMNS: one list of names, checked."""
    path = write(tmp_path, INSERT)
    out = _gem5.import_trace(str(path), str(path), str(path), "auto", 0)
    buffers = {key for key, value in out.items() if isinstance(value, bytes)}
    assert buffers == set(importer_mod.ARRAY_COLUMNS)
