"""``tickpar trace-fit`` (tickpar.gem5.fit): the distance, the search's determinism, recovering a known shape,
the YAML it prints (which must run), and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from tickpar.cli import main
from tickpar.gem5 import EXAMPLE_COMPONENTS, EXAMPLE_TRACE
from tickpar.gem5.emit import emit_trace
from tickpar.gem5.fit import STATISTICS, compare, distance, fit_trace, shape_name, shape_yaml, statistic_values
from tickpar.gem5.fit.space import SPACES, Axis
from tickpar.gem5.fit.statistics import CLIP
from tickpar.kernel.params import resolve
from tickpar.plugins import RunSpec
from tickpar.plugins.registry import get_registry

#: A small search: a dozen candidates of a few hundred events (well under a second each).
SMALL = {"max_candidates": 12, "max_events": 400, "progress": None}
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "gem5-traces"
REAL_RUN = SHARED / "tg-random-2core.events.txt.gz"


def _stats(**values: float | None) -> dict[str, float | None]:
    base: dict[str, float | None] = {s.name: 2.0 for s in STATISTICS}
    base.update(values)
    return base


# -- the distance --------------------------------------------------------------------------------------------


def test_distance_is_zero_for_equal_profiles_and_symmetric_in_ratio() -> None:
    trace = _stats()
    assert distance(trace, trace) == 0.0
    up, down = _stats(available_parallelism=4.0), _stats(available_parallelism=1.0)
    assert distance(trace, up) == pytest.approx(distance(trace, down))  # twice or half: the same distance
    assert distance(trace, up) > 0


def test_distance_squashes_a_statistic_out_of_reach() -> None:
    """A factor of a million weighs little more than a factor of 10: at most CLIP, never drowning the rest."""
    trace = _stats(delay_within_q75=1e9)
    far, farther = _stats(delay_within_q75=1e4), _stats(delay_within_q75=1e3)
    weight = next(s.weight for s in STATISTICS if s.name == "delay_within_q75")
    total = sum(s.weight for s in STATISTICS)
    assert distance(trace, far) <= math.sqrt(weight * CLIP**2 / total)
    assert distance(trace, far) < distance(trace, farther)


def test_missing_statistics_count_as_far_or_not_at_all() -> None:
    trace = _stats(delay_across_q50=None)
    assert distance(trace, _stats(delay_across_q50=None)) == 0.0  # missing on both sides: left out
    assert distance(trace, _stats()) > 0  # missing on one side: as far as it gets
    rows = {r["name"]: r for r in compare(_stats(zero_delay_cross_share=0.0), _stats(zero_delay_cross_share=0.0))}
    assert rows["zero_delay_cross_share"]["relative_difference"] == 0.0  # the floor keeps 0 against 0 finite
    assert rows["zero_delay_cross_share"]["reached"]


def test_the_statistics_are_read_from_a_profile() -> None:
    profile = {
        "events_per_tick": {"mean": 1.5},
        "zero_delay_cross_share": 0.02,
        "schedule_delay": {"within": {"q25": 1.0, "q50": 2.0, "q75": 3.0}, "across": None},
        "available_parallelism": 50.0,
        "bounds": {"tick-barrier": {"2": 1.3, "16": 1.5, "64": 1.5}, "conservative": {"2": 1.1, "16": 1.2, "64": 1.3}},
    }
    values = statistic_values(profile)
    assert values["events_per_tick"] == 1.5 and values["delay_across_q50"] is None
    assert values["tick_barrier_16"] == 1.5 and values["conservative_64"] == 1.3


def test_axes_know_their_neighbours_and_the_grid_is_ordered() -> None:
    axis = Axis("x", (1, 2, 4), grid=(1, 4))
    assert axis.neighbours(1) == [2] and axis.neighbours(2) == [1, 4]
    with pytest.raises(ValueError, match="rungs of the ladder"):
        Axis("y", (1, 2), grid=(3,))
    space = SPACES["multicore"]
    grid = list(space.grid({"cores": 2}))
    assert all("cores" not in p for p in grid) and len(grid) == len({json.dumps(p) for p in grid})
    assert grid == list(space.grid({"cores": 2}))


# -- the search ----------------------------------------------------------------------------------------------


def _fit_example(**kw: Any) -> dict[str, Any]:
    return fit_trace(EXAMPLE_TRACE, components=EXAMPLE_COMPONENTS, **(SMALL | kw))


def test_the_fit_is_deterministic() -> None:
    """Twice, and with two worker processes, the same candidates in the same order and the same shape."""
    first, second = _fit_example(), _fit_example(jobs=2)
    assert first["shape"] == second["shape"] and first["distance"] == second["distance"]
    strip = [(c["params"], c["distance"]) for c in first["search"]["candidates"]]
    assert strip == [(c["params"], c["distance"]) for c in second["search"]["candidates"]]
    assert first["search"]["evaluated"] == SMALL["max_candidates"] and first["search"]["stopped"] == "budget"
    assert len(first["statistics"]) == len(STATISTICS)


def test_a_fit_of_an_emitted_multicore_run_recovers_its_shape(tmp_path: Path) -> None:
    """An emitted 2-core run with 500-tick links: searching cores and link latency finds both."""
    truth = {"cores": 2, "requests_per_core": 80, "think_cycles": 0, "link_latency": 500}
    params = resolve(get_registry().workload("multicore").params, truth, "workload multicore parameter")
    path = tmp_path / "truth.event.txt"
    _lines, mapping = emit_trace(RunSpec("multicore", params, 1), path)
    pins = {k: params[k] for k in ("think_cycles", "working_set_kib", "l2_banks", "max_outstanding", "clock")}
    result = fit_trace(path, components=mapping, fixed=pins | {"direct_calls": False}, max_candidates=30,
                       progress=None)  # fmt: skip
    assert result["shape"]["cores"] == 2 and result["shape"]["link_latency"] == 500
    assert result["distance"] < 0.15
    assert {"available_parallelism", "events_per_tick", "tick_barrier_16", "conservative_16"}.isdisjoint(
        u["name"] for u in result["unreached"]
    )


def test_the_printed_shape_parses_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fit.json"
    code = main(["trace-fit", str(EXAMPLE_TRACE), "--components", str(EXAMPLE_COMPONENTS), "--max-candidates", "6",
                 "--max-events", "300", "--jobs", "1", "--json", str(out)])  # fmt: skip
    printed, err = capsys.readouterr()
    assert code == 0, err
    assert "trace-fit: [  1/6]" in err  # progress goes to stderr
    result = json.loads(out.read_text())
    assert printed.count(shape_yaml(result).strip()) == 1
    shapes = yaml.safe_load(shape_yaml(result))
    assert list(shapes) == [shape_name(EXAMPLE_TRACE)] == ["fit-multicore-2core"]
    assert shapes[result["name"]] == result["shape"]
    assert {r["name"] for r in result["statistics"]} == {s.name for s in STATISTICS}
    assert {"trace_profile", "fitted_profile", "search", "unreached", "params"} <= set(result)
    argv = ["run", "-w", "multicore"]
    for key, value in shapes[result["name"]].items():
        argv += ["-p", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    code = main(argv)
    assert code == 0, capsys.readouterr().err


@pytest.mark.skipif(not REAL_RUN.is_file(), reason=f"no shared gem5 traces in {SHARED}")
def test_a_real_multicore_run_fits_end_to_end() -> None:
    """A real gem5 run (2 traffic generators): its zero-delay schedules are a statistic multicore cannot reach,
    and the result says why."""
    result = fit_trace(REAL_RUN, max_candidates=4, max_events=500, progress=None)
    assert result["trace_profile"]["events"] > 10_000 and result["search"]["events"] == 500
    why = {u["name"]: u["why"] for u in result["unreached"]}
    assert "never schedules onto another component at delay 0" in why["zero_delay_cross_share"]


# -- bad input -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/no/such/trace.txt"], "no/such/trace.txt"),
        (["EXAMPLE", "--workload", "phold"], "--workload 'phold' is not allowed: trace-fit searches multicore"),
        (["EXAMPLE", "--max-candidates", "0"], "--max-candidates 0 is not allowed"),
        (["EXAMPLE", "--max-events", "5"], "--max-events 5 is not allowed"),
        (["EXAMPLE", "-p", "bogus=1"], "unknown workload multicore parameter 'bogus'"),
        (["EXAMPLE", "-p", "cores=0"], "cores"),
        (["EXAMPLE", "--format", "csv"], "--format 'csv' is not allowed"),
        (["EXAMPLE", "--name", "a b"], "--name 'a b' is not allowed"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["trace-fit", *(str(EXAMPLE_TRACE) if a == "EXAMPLE" else a for a in args), "--jobs", "1"]
    code = main(argv)
    _out, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tickpar: error: ") and message in lines[0], err


# -- the pipeline's fit job and the "Synthetic against real" page ----------------------------------------------


def test_the_fit_job_and_the_page(tmp_path: Path) -> None:
    """rules/synthetic.smk's two jobs: a fit per run (a run that cannot be fitted records its error), then
    the page: a table per run beside the sweep's multicore shapes, the cores figure and the PDF pages."""
    import matplotlib.pyplot as plt

    from tickpar.gem5.fit.__main__ import main as fit_main
    from tickpar.gem5.profile import profile_workload
    from tickpar.report.synthetic import pdf_pages, run_table, write_page

    fits, profiles = tmp_path / "fits", tmp_path / "profiles"
    common = ["--max-candidates", "6", "--max-events", "300", "--jobs", "1"]
    assert fit_main(["--run", "example", "--trace", str(EXAMPLE_TRACE), "--components", str(EXAMPLE_COMPONENTS),
                     *common, "--out", str(fits / "example.fit.json")]) == 0  # fmt: skip
    assert fit_main(["--run", "gone", "--trace", str(tmp_path / "gone.txt"), *common,
                     "--out", str(fits / "gone.fit.json")]) == 0  # fmt: skip
    assert "no such trace file" in json.loads((fits / "gone.fit.json").read_text())["error"]
    profiles.mkdir()
    tiny = profile_workload("multicore", {"cores": 2, "requests_per_core": 20})
    (profiles / "multicore.tiny.profile.json").write_text(json.dumps(tiny))
    paths = write_page(fits, profiles, {"example": 2, "gone": None}, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert [r["run"] for r in data["runs"]] == ["example", "gone"] and "error" in data["runs"][1]
    run = data["runs"][0]
    assert run["shape_name"] == "fit-example" and set(run["distances"]) == {"fitted", "multicore.tiny"}
    table = run_table(run)
    assert list(table.columns) == ["real run", "fitted (fit-example)", "multicore.tiny"]
    assert len(table) == len(STATISTICS) + 1 and table.index[-1] == "distance to the real run"
    real = run["statistics"]["real"]
    assert run["figure"]["real"]["available parallelism"] == pytest.approx(real["available_parallelism"])
    page = paths["html"].read_text()
    assert "Synthetic against real" in page and "<table" in page and "not fitted" in page
    assert paths["figure"].stat().st_size > 1000
    figs = pdf_pages(path=paths["json"])
    assert len(figs) == 4  # the cores figure, its numbers, a page per run
    for fig in figs:
        plt.close(fig)
    assert pdf_pages(path=tmp_path / "none.json") == []  # no page without the pipeline's data


def test_the_clis_fit_defaults_are_the_searchs() -> None:
    """The parser writes trace-fit's budget itself (building it must not import the fit into a cell)."""
    from tickpar import cli
    from tickpar.gem5.fit import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_EVENTS

    assert (cli.FIT_MAX_CANDIDATES, cli.FIT_MAX_EVENTS) == (DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_EVENTS)
