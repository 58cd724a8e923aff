"""A gem5 run's own event cost from its stats.txt (tickpar.gem5.stats): parsing, traced or untraced,
weights, the replay's metered work and ``trace-profile --gem5-stats`` (issue #44)."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

import pytest

from tickpar.cli import main
from tickpar.gem5 import EXAMPLE_COMPONENTS, EXAMPLE_TRACE, import_trace
from tickpar.gem5.stats import (
    BEGIN_MARK,
    StatsError,
    component_events,
    event_cost,
    load_weights,
    read_stats,
    stats_kind,
)
from tickpar.kernel.params import ParamError
from tickpar.native.record import record
from tickpar.runner import resolve_cell

ROOT = Path(__file__).resolve().parents[1]
#: The real gem5 runs live beside the checkout (never copied into it); TICKPAR_GEM5_TRACES moves them.
SHARED = Path(os.environ.get("TICKPAR_GEM5_TRACES", ROOT.parent / "shared" / "gem5-traces"))
SHARED_RUNS = sorted(p.name.removesuffix(".events.txt.gz") for p in SHARED.glob("*.events.txt.gz")) if SHARED.is_dir() \
    else []
needs_shared = pytest.mark.skipif(not SHARED_RUNS, reason=f"no shared gem5 runs in {SHARED}")

END = "---------- End Simulation Statistics   ----------"


def stats_text(
    sim_ticks: int = 20_000_000, rate: float | None = 853861589, seconds: str = "0.02", dumps: int = 1
) -> str:
    """A gem5 stats.txt: ``dumps`` sections, the first with these figures, each later one with 10x the ticks."""
    out = []
    for k in range(dumps):
        ticks = sim_ticks * 10**k
        out += [
            "",
            BEGIN_MARK,
            f"simSeconds                                   {ticks / 1e12:.6f}                       # seconds",
            f"simTicks                                     {ticks}                       # Number of ticks simulated",
            f"finalTick                                    {ticks}                       # Number of ticks from ...",
            "simFreq                                  1000000000000                       # ticks per second",
            f"hostSeconds                                      {seconds}                       # Real time elapsed",
        ]
        if rate is not None:
            out.append(f"hostTickRate                                {rate:.0f}                       # ticks/s")
        out += [
            "board.memory.mem_ctrl.readReqs                  1234                       # Number of read requests",
            "board.cache_hierarchy.l2cache.overallMissRate::total     nan                       # miss rate",
            "",
            END,
        ]
    return "\n".join(out) + "\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as out:
            out.write(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture(scope="module")
def example():
    """The bundled 2-core example trace, imported with its components."""
    return import_trace(EXAMPLE_TRACE, "auto", EXAMPLE_COMPONENTS)


# -- stats.txt --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["run.untraced.stats.txt", "run.untraced.stats.txt.gz"])
def test_read_stats_takes_the_first_dump_and_host_time_from_the_tick_rate(tmp_path: Path, name: str) -> None:
    stats = read_stats(write(tmp_path, name, stats_text(dumps=3)))
    assert (stats.sim_ticks, stats.sim_freq, stats.dumps) == (20_000_000, 1e12, 3)
    assert stats.host_seconds == 0.02 and stats.sim_seconds == pytest.approx(2e-5)
    host_s, how = stats.host_time()
    assert how == "simTicks/hostTickRate"
    assert host_s == pytest.approx(20_000_000 / 853861589, rel=1e-12)  # more digits than hostSeconds' 0.02


@pytest.mark.parametrize("rate", [None, 0])
def test_without_a_tick_rate_host_seconds_is_used_and_warned(tmp_path: Path, example, rate) -> None:
    path = write(tmp_path, "run.untraced.stats.txt", stats_text(rate=rate, seconds="0.50"))
    assert read_stats(path).host_time() == (0.5, "hostSeconds")
    cost = event_cost(path, example)
    assert cost.host_time_from == "hostSeconds" and cost.mean_us == pytest.approx(0.5e6 / example.events)
    assert any("hostSeconds (2 decimals)" in w for w in cost.warnings)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("missing.txt", None, "no such file: expected a gem5 stats.txt"),
        ("trace.txt", "      0: system.cpu.tickEvent: generic 0x10 executed @ 0\n", "no '" + BEGIN_MARK),
        ("nokeys.txt", f"{BEGIN_MARK}\nsimSeconds 0.1 # x\n{END}\n", "has no simTicks, simFreq, hostTickRate"),
        ("badvalue.txt", f"{BEGIN_MARK}\nsimTicks many # x\n{END}\n", "simTicks 'many' is not a number"),
        ("zero.txt", stats_text(rate=0, seconds="0.00"), "hostTickRate and hostSeconds are missing or 0"),
        ("binary.txt", b"\xff\xfe\x00garbage", "the file cannot be read"),
        ("corrupt.txt.gz", b"\x1f\x8b\x08\x00garbage", "the file cannot be read"),
    ],
)
def test_bad_stats_are_one_line_naming_the_file(tmp_path: Path, example, name: str, text, expected: str) -> None:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text)
    with pytest.raises(StatsError) as err:
        event_cost(path, example)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)) and expected in message
    assert isinstance(err.value, ValueError)


# -- traced or untraced ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("stats", "trace", "kind"),
    [
        ("runs/tg.untraced.stats.txt", "runs/tg.events.txt.gz", "untraced"),
        ("other/UNTRACED-stats.txt", "runs/tg.events.txt.gz", "untraced"),  # the name says so, wherever it is
        ("runs/tg.stats.txt", "runs/tg.events.txt.gz", "traced"),  # STEM.stats.txt beside STEM.<...>
        ("runs/tg.stats.txt.gz", "runs/tg.insert-log.txt", "traced"),
        ("m5out/stats.txt", "m5out/events.txt.gz", "traced"),  # gem5's -d OUT layout
        ("runs/stats.txt", "m5out/events.txt.gz", "unknown"),  # another run's directory
        ("runs/tg.stats.txt", "runs/tg2.events.txt.gz", "unknown"),  # another stem
        ("runs/tg-quiet.txt", "runs/tg.events.txt.gz", "unknown"),
    ],
)
def test_the_traced_or_untraced_rule(tmp_path: Path, stats: str, trace: str, kind: str) -> None:
    got, why = stats_kind(tmp_path / stats, tmp_path / trace)
    assert got == kind and why


def test_the_traced_runs_own_stats_warn_and_unknown_ones_are_assumed_untraced(tmp_path: Path, example) -> None:
    trace = tmp_path / "run.events.txt.gz"
    trace.write_bytes(EXAMPLE_TRACE.read_bytes())
    imported = import_trace(trace, "auto", EXAMPLE_COMPONENTS)
    traced = event_cost(write(tmp_path, "run.stats.txt", stats_text()), imported)
    assert traced.kind == "traced" and "tracing inflates host time" in traced.describe()
    assert any("tracing inflates host time" in w for w in traced.warnings)
    unknown = event_cost(write(tmp_path, "elsewhere.txt", stats_text()), imported)
    assert unknown.kind == "unknown" and "unknown (assumed untraced)" in unknown.describe()
    assert any("assumed untraced" in w for w in unknown.warnings)
    span = imported.end_tick - imported.first_tick  # no warning that the dump covers other ticks than the trace
    untraced = event_cost(write(tmp_path, "run.untraced.stats.txt", stats_text(sim_ticks=span)), imported)
    assert untraced.kind == "untraced" and untraced.warnings == ()


# -- the cost and its record -------------------------------------------------------------------------------
def test_the_cost_is_host_time_over_the_replayed_events(tmp_path: Path, example) -> None:
    path = write(tmp_path, "mc.untraced.stats.txt", stats_text())
    cost = event_cost(path, example)
    host_s = 20_000_000 / 853861589
    assert cost.events == example.events == sum(component_events(example).values())
    assert cost.mean_us == pytest.approx(host_s * 1e6 / example.events)
    assert cost.per_component_us is None and cost.cost_us("anything") == cost.mean_us
    line = cost.describe()
    assert "\n" not in line
    assert re.fullmatch(
        rf"[\d.]+ us/event: host time 0\.0234 s \(simTicks/hostTickRate\) of mc\.untraced\.stats\.txt over "
        rf"{example.events:,} events \(untraced run\)",
        line,
    ), line
    record = json.loads(json.dumps(cost.to_json()))
    assert record["description"] == line and record["source"] == str(path) and record["kind"] == "untraced"
    keys = ("mean_us", "per_component_us", "host_s", "host_time_from", "events", "sim_ticks", "weights", "warnings")
    assert set(keys) <= set(record)


def test_a_span_other_than_the_dumps_is_warned(tmp_path: Path, example) -> None:
    cost = event_cost(write(tmp_path, "mc.untraced.stats.txt", stats_text(sim_ticks=10**12)), example)
    assert any("the host time is not the traced events' own" in w for w in cost.warnings)
    span = example.end_tick - example.first_tick
    fitting = event_cost(write(tmp_path, "fit.untraced.stats.txt", stats_text(sim_ticks=span)), example)
    assert fitting.warnings == ()


# -- weights ----------------------------------------------------------------------------------------------
def test_weights_split_the_mean_and_keep_it(tmp_path: Path, example) -> None:
    counts = component_events(example)
    cpu = next(c for c in counts if "cpu" in c)
    weights = write(
        tmp_path,
        "w.txt",
        f"# the CPUs' events cost 4x, the rest 1x\n\n^{re.escape(cpu)}$ -> 4\ncpu -> 2.5\nnever-a-component -> 3\n",
    )
    stats = write(tmp_path, "mc.untraced.stats.txt", stats_text())
    plain = event_cost(stats, example)
    cost = event_cost(stats, example, weights)
    per = cost.per_component_us
    assert per is not None and set(counts) <= set(per)
    assert cost.mean_us == plain.mean_us
    total = sum(n * per[c] for c, n in counts.items())
    assert total == pytest.approx(cost.mean_us * cost.events, rel=1e-12)  # the run's mean stays the run's
    others = [c for c in counts if "cpu" not in c]
    assert per[cpu] == pytest.approx(4 * per[others[0]])  # the first match wins
    assert all(per[c] == pytest.approx(2.5 * per[others[0]]) for c in counts if "cpu" in c and c != cpu)
    assert any(f"{weights}:5:" in w and "matches no component" in w for w in cost.warnings)
    assert cost.weights == str(weights) and "by the weights in w.txt" in cost.describe()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("cpu 2", "expected 'REGEX -> WEIGHT'"),
        ("-> 2", "expected 'REGEX -> WEIGHT'"),
        ("cpu ->", "expected 'REGEX -> WEIGHT'"),
        ("cpu -> 0", "weight '0' is not allowed: a number > 0"),
        ("cpu -> -1", "weight '-1' is not allowed"),
        ("cpu -> heavy", "weight 'heavy' is not allowed"),
        ("cpu -> inf", "weight 'inf' is not allowed"),
        ("cpu[ -> 2", "bad regex 'cpu['"),
    ],
)
def test_bad_weight_lines_are_one_line_with_file_and_line(tmp_path: Path, line: str, expected: str) -> None:
    path = write(tmp_path, "w.txt", f"# ok\nmem -> 2\n{line}\n")
    with pytest.raises(StatsError) as err:
        load_weights(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}:3: ") and expected in message


def test_a_missing_weights_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(StatsError, match=r"no such file: expected a weights file"):
        load_weights(tmp_path / "none.txt")


# -- the replay spends it ---------------------------------------------------------------------------------
def metered(params: dict) -> tuple[float, dict[str, float]]:
    """Total work the sequential replay asks for (metered, never timed), and per component."""
    spec = resolve_cell("gem5trace", params, "sequential", {}, 1, 1).spec
    rec = record(spec)
    per: dict[str, float] = {}
    for k, work in enumerate(rec.occ_work):
        comp = rec.components[rec.obj_comp[rec.occ_obj[k]]]
        per[comp] = per.get(comp, 0.0) + work
    return sum(rec.occ_work), per


def test_the_replay_spends_the_runs_cost(tmp_path: Path, example) -> None:
    stats = write(tmp_path, "mc.untraced.stats.txt", stats_text())
    host_us = 20_000_000 / 853861589 * 1e6
    total, _per = metered({"gem5_stats": str(stats)})
    assert total == pytest.approx(host_us, rel=1e-9)
    weights = write(tmp_path, "w.txt", "cpu -> 5\n")
    total_w, per_w = metered({"gem5_stats": str(stats), "cost_weights": str(weights)})
    assert total_w == pytest.approx(host_us, rel=1e-9)  # the weights move work between components only
    cost = event_cost(stats, example, weights)
    counts = component_events(example)
    for comp, work in per_w.items():
        assert work == pytest.approx(counts[comp] * cost.per_component_us[comp], rel=1e-9)


def test_a_prefix_spends_the_whole_runs_cost_per_event(tmp_path: Path, example) -> None:
    stats = write(tmp_path, "mc.untraced.stats.txt", stats_text())
    cost = event_cost(stats, example)
    params = {"gem5_stats": str(stats), "events": 500}
    spec = resolve_cell("gem5trace", params, "sequential", {}, 1, 1).spec
    rec = record(spec)
    assert len(rec.occ_work) < example.events
    assert all(work == pytest.approx(cost.mean_us, rel=1e-12) for work in rec.occ_work)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"gem5_stats": "{stats}", "work_us": 1.0}, "work_us=1.0 and gem5_stats={stats}: give one"),
        ({"cost_weights": "{weights}"}, "cost_weights={weights} needs gem5_stats"),
        ({"gem5_stats": "{missing}"}, "{missing}: no such file: expected a gem5 stats.txt"),
        ({"gem5_stats": "{stats}", "cost_weights": "{bad}"}, "{bad}:1: expected 'REGEX -> WEIGHT'"),
    ],
)
def test_workload_params_are_one_line_errors(tmp_path: Path, params: dict, expected: str) -> None:
    names = {
        "stats": str(write(tmp_path, "s.untraced.stats.txt", stats_text())),
        "weights": str(tmp_path / "w.txt"),
        "missing": str(tmp_path / "missing.txt"),
        "bad": str(write(tmp_path, "bad.txt", "no arrow\n")),
    }
    params = {k: v.format(**names) if isinstance(v, str) else v for k, v in params.items()}
    with pytest.raises(ParamError) as err:
        resolve_cell("gem5trace", params, "sequential", {}, 1, 1)
    message = str(err.value)
    assert "\n" not in message and message.startswith("workload gem5trace: ")
    want = expected
    for name, path in names.items():
        want = want.replace("{" + name + "}", path)
    assert want in message, message


def test_the_workload_describes_its_cost(tmp_path: Path) -> None:
    from tickpar.plugins.registry import get_registry

    stats = write(tmp_path, "mc.untraced.stats.txt", stats_text())
    spec = resolve_cell("gem5trace", {"gem5_stats": str(stats)}, "sequential", {}, 1, 1).spec
    described = get_registry().workload("gem5trace")().describe(spec.params)
    assert described["event_cost"]["source"] == str(stats) and "us/event" in described["event_cost"]["description"]
    plain = resolve_cell("gem5trace", {"work_us": 0.5}, "sequential", {}, 1, 1).spec
    assert get_registry().workload("gem5trace")().describe(plain.params) == {"event_cost": None, "work_us": 0.5}


# -- trace-profile --gem5-stats -----------------------------------------------------------------------------
def test_trace_profile_prints_and_records_the_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stats = write(tmp_path, "mc.untraced.stats.txt", stats_text())
    weights = write(tmp_path, "w.txt", "cpu -> 5\n")
    out = tmp_path / "profile.json"
    args = ["trace-profile", str(EXAMPLE_TRACE), "--components", str(EXAMPLE_COMPONENTS), "--gem5-stats", str(stats)]
    assert main([*args, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "event cost: " in printed and "mc.untraced.stats.txt" in printed and "uniform event cost" in printed
    plain = json.loads(out.read_text())
    assert plain["cost"]["source"] == str(stats)
    assert plain["work_s"] == pytest.approx(20_000_000 / 853861589)  # the whole trace: the run's host time
    assert plain["weighted_parallelism"] == pytest.approx(plain["available_parallelism"])
    assert main([*args, "--cost-weights", str(weights), "--json", str(out)]) == 0
    assert "weighted by their component's cost" in capsys.readouterr().out
    weighted = json.loads(out.read_text())
    assert weighted["cost"]["weights"] == str(weights) and weighted["critical_path"] == plain["critical_path"]
    assert weighted["work_s"] == pytest.approx(plain["work_s"])
    assert weighted["bounds"] != plain["bounds"]  # the CPUs' heavier events change the limits
    for row in weighted["bounds"].values():
        assert row["1"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--cost-weights", "w.txt"], "--cost-weights w.txt needs --gem5-stats"),
        (["--gem5-stats", "missing.txt"], "missing.txt: no such file: expected a gem5 stats.txt"),
    ],
)
def test_trace_profile_bad_cost_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    extra = [str(tmp_path / a) if a.endswith(".txt") else a for a in extra]
    expected = expected.replace("w.txt", str(tmp_path / "w.txt")).replace("missing.txt", str(tmp_path / "missing.txt"))
    assert main(["trace-profile", str(EXAMPLE_TRACE), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err


# -- the shared gem5 runs ------------------------------------------------------------------------------------
def readme_costs() -> dict[str, float]:
    """The shared README's 'host µs per event, untraced' column, by file stem."""
    costs = {}
    for line in (SHARED / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        stem = re.fullmatch(r"`([\w-]+)`", cells[0])
        if stem and re.fullmatch(r"\d+\.\d\d", cells[-1]):
            costs[stem.group(1)] = float(cells[-1])
    return costs


@needs_shared
@pytest.mark.parametrize("stem", SHARED_RUNS)
def test_shared_runs_cost_what_the_readme_says(stem: str) -> None:
    trace = import_trace(SHARED / f"{stem}.events.txt.gz")
    path = SHARED / f"{stem}.untraced.stats.txt"
    cost = event_cost(path, trace)
    fields = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts and parts[0] in ("simTicks", "hostTickRate") and parts[0] not in fields:
            fields[parts[0]] = float(parts[1])
    assert cost.host_s == pytest.approx(fields["simTicks"] / fields["hostTickRate"], rel=1e-12)
    assert cost.kind == "untraced" and cost.warnings == ()
    expected = readme_costs().get(stem)
    if expected is None:
        pytest.skip(f"the README gives no cost for {stem}")
    # The README divides by every executed line, the replay serves a few fewer (gem5's exit events): 2 decimals.
    assert cost.mean_us == pytest.approx(expected, abs=0.006)


@needs_shared
def test_the_shared_traced_stats_warn_and_cost_more() -> None:
    stem = "tg-random-2core" if "tg-random-2core" in SHARED_RUNS else SHARED_RUNS[0]
    trace = import_trace(SHARED / f"{stem}.events.txt.gz")
    traced = event_cost(SHARED / f"{stem}.stats.txt", trace)
    untraced = event_cost(SHARED / f"{stem}.untraced.stats.txt", trace)
    assert traced.kind == "traced" and any("tracing inflates host time" in w for w in traced.warnings)
    assert traced.mean_us > 2 * untraced.mean_us


@needs_shared
def test_the_shared_replay_meters_the_runs_host_time() -> None:
    stem = "tg-random-2core" if "tg-random-2core" in SHARED_RUNS else SHARED_RUNS[0]
    stats = SHARED / f"{stem}.untraced.stats.txt"
    total, _per = metered({"trace": str(SHARED / f"{stem}.events.txt.gz"), "gem5_stats": str(stats)})
    assert total == pytest.approx(read_stats(stats).host_time()[0] * 1e6, rel=1e-9)
