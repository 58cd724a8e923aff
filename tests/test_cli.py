"""The command line, run in-process through ``tickpar.cli.main``: list, run, check, golden, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tickpar.cli import main
from tickpar.plugins.registry import get_registry

SMALL = ["-w", "phold", "-p", "lps=4", "-p", "end_tick=3000"]  # a few hundred events: fast


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def record(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def test_list_text(capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch) -> None:
    """`tickpar list` prints strategies and workloads with their summaries and parameters."""
    code, out, err = run_cli(capsys, "list")
    assert code == 0 and err == ""
    assert out.index("strategies:") < out.index("sequential") < out.index("workloads:") < out.index("phold")
    assert "lps=" in out and "checks=" in out and "[1, 256]" in out
    assert "statistic mean_hops: mean hop count of the received events" in out


def test_list_json(capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch) -> None:
    """`tickpar list --json` prints valid JSON with every strategy and workload, their parameters and sources."""
    code, out, _ = run_cli(capsys, "list", "--json")
    assert code == 0
    info = json.loads(out)
    assert set(info) == {"strategies", "workloads", "broken", "kernel"} and info["broken"] == {}
    assert info["kernel"] in ("pure", "compiled")
    assert info["strategies"]["sequential"]["options"]["checks"]["type"] == "bool"
    lps = info["workloads"]["phold"]["params"]["lps"]
    assert lps["type"] == "int" and (lps["min"], lps["max"]) == (1, 256) and isinstance(lps["default"], int)
    assert info["workloads"]["phold"]["source"].endswith("phold.py")
    assert set(info["workloads"]["multicore"]["statistics"]) == {"sim_ticks", "mean_load_latency", "l1_hit_rate"}


def test_list_shows_the_engines_of_every_strategy(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch
) -> None:
    """`tickpar list --json` gives every strategy its `engines` (its class's, python first), and the text lists them
    under each strategy: the built-ins the C++ engine also has run on python and native, the others on python."""
    code, out, _ = run_cli(capsys, "list", "--json")
    assert code == 0
    strategies = json.loads(out)["strategies"]
    registry = get_registry()
    for name, entry in strategies.items():
        assert entry["engines"] == list(registry.strategy(name).engines), name
    assert strategies["sequential"]["engines"] == ["python", "native"]
    assert strategies["optimistic"]["engines"] == ["python"]
    code, out, _ = run_cli(capsys, "list")
    after = out[out.index("  optimistic:") :].splitlines()
    assert after[1].strip() == "engines: python"


def test_run_writes_a_complete_record(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`tickpar run -w phold --out F` prints one summary line and writes a self-describing JSON record."""
    out_file = tmp_path / "sub" / "cell.json"
    code, out, err = run_cli(capsys, "run", "-w", "phold", "--out", str(out_file))
    assert code == 0 and err == ""
    assert out.count("\n") == 1 and "sequential on phold" in out
    rec = record(out_file)
    required = {
        "workload", "params", "strategy", "options", "workers", "seed", "order", "work", "events", "final_tick",
        "digest", "wall_s", "events_per_s", "stats", "env", "versions",
    }  # fmt: skip
    assert required <= set(rec)
    assert (rec["workload"], rec["strategy"], rec["workers"], rec["seed"], rec["order"], rec["work"]) == (
        "phold", "sequential", 1, 1, "gem5", "none",
    )  # fmt: skip
    defaults = {name: spec.default for name, spec in get_registry().workload("phold").params.items()}
    assert rec["params"] == defaults and rec["options"] == {"checks": True}
    assert rec["events"] > 1000 and 0 < rec["final_tick"] <= rec["params"]["end_tick"]
    assert len(rec["digest"]) == 16 and rec["digest"] in out
    assert rec["wall_s"] > 0 and rec["events_per_s"] > 0
    assert rec["stats"]["events"] == rec["events"]
    assert {"python", "gil_enabled", "cpu_model", "cores"} <= set(rec["env"])
    assert isinstance(rec["env"]["gil_enabled"], bool)
    assert "tickpar" in rec["versions"]
    assert [p.name for p in out_file.parent.iterdir()] == ["cell.json"]  # atomic write: no temporary left


def test_seed_determines_digest(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The same seed gives the same digest in two runs; another seed gives another digest."""
    digests = []
    for i, seed in enumerate(("5", "5", "6")):
        path = tmp_path / f"r{i}.json"
        assert run_cli(capsys, "run", *SMALL, "--seed", seed, "--out", str(path))[0] == 0
        digests.append(record(path)["digest"])
    assert digests[0] == digests[1] != digests[2]


def test_check_is_exact(capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`tickpar check -w phold` exits 0 and prints 'verdict: exact'; its record carries the verdict."""
    out_file = tmp_path / "check.json"
    code, out, err = run_cli(capsys, "check", "-w", "phold", "--order", "canonical", "--out", str(out_file))
    assert code == 0 and err == ""
    assert "verdict: exact" in out
    rec = record(out_file)
    assert rec["verdict"]["kind"] == "exact" and rec["order"] == "canonical"


def test_golden_then_check_against_it(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`tickpar golden --out F` saves a traced reference; `check --golden F` reuses it and gets exact,
    while a golden of another cell (here another seed) is bad input (exit 2), never a broken promise."""
    golden = tmp_path / "golden.json"
    assert run_cli(capsys, "golden", *SMALL, "--out", str(golden))[0] == 0
    saved = record(golden)
    assert saved["oracle"]["traces"] and saved["strategy"] == "sequential"
    code, out, _ = run_cli(capsys, "check", *SMALL, "--golden", str(golden))
    assert code == 0 and "verdict: exact" in out
    code, _out, err = run_cli(capsys, "check", *SMALL, "--seed", "9", "--golden", str(golden))
    assert code == 2 and "the golden record of another cell (seed 1, this cell's 9)" in err


def test_run_with_timeout_uses_a_child_process(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`run --timeout 30` runs the cell in a child process and records the same digest as an in-process run."""
    child, inline = tmp_path / "child.json", tmp_path / "inline.json"
    assert run_cli(capsys, "run", *SMALL, "--timeout", "30", "--out", str(child))[0] == 0
    assert run_cli(capsys, "run", *SMALL, "--out", str(inline))[0] == 0
    a, b = record(child), record(inline)
    assert a["failure"] is None and a["digest"] == b["digest"] and a["events"] == b["events"] > 0


def test_run_trace_keeps_traces(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`run --trace` keeps every component's trace in the record; without it the record has none."""
    traced, plain = tmp_path / "t.json", tmp_path / "p.json"
    assert run_cli(capsys, "run", *SMALL, "--trace", "--out", str(traced))[0] == 0
    assert run_cli(capsys, "run", *SMALL, "--out", str(plain))[0] == 0
    traces = record(traced)["oracle"]["traces"]
    assert set(traces) == {f"lp{i}" for i in range(4)}
    assert sum(len(t) for t in traces.values()) == record(traced)["events"]
    assert "traces" not in record(plain)["oracle"]
    assert record(traced)["digest"] == record(plain)["digest"]


BAD_INPUTS = {
    "unknown workload": (["run", "-w", "nope"], "unknown workload 'nope'"),
    "bad param value": (["run", "-w", "phold", "-p", "lps=0"], "lps='0'"),
    "non-numeric param": (["run", "-w", "phold", "-p", "lps=many"], "lps='many'"),
    "unknown param": (["run", "-w", "phold", "-p", "nodes=3"], "unknown workload phold parameter 'nodes'"),
    "param cross-check": (["run", "-w", "phold", "-p", "lps=1"], "needs lps >= 2"),
    "bad option": (["run", "-w", "phold", "-o", "depth=3"], "unknown strategy sequential option 'depth'"),
    "bad option value": (["run", "-w", "phold", "-o", "checks=perhaps"], "checks='perhaps'"),
    "unknown strategy": (["run", "-w", "phold", "-s", "warp"], "unknown strategy 'warp'"),
    "bad order": (["run", "-w", "phold", "--order", "fifo"], "order 'fifo' is not allowed"),
    "bad work": (["run", "-w", "phold", "--work", "heavy"], "work 'heavy' is not allowed"),
    "bad --param format": (["run", "-w", "phold", "--param", "foo"], "--param 'foo' is not of the form key=value"),
    "bad --option format": (["check", "-w", "phold", "-o", "checks"], "--option 'checks' is not of the form"),
    "workers=0": (["run", "-w", "phold", "--workers", "0"], "workers=0 is not allowed"),
    "too many workers": (["run", "-w", "phold", "--workers", "2"], "at most 1"),
    "negative timeout": (["run", "-w", "phold", "--timeout", "-1"], "--timeout -1"),
    "negative seed": (["run", "-w", "phold", "--seed", "-3"], "seed=-3"),
    "non-int workers": (["run", "-w", "phold", "--workers", "two"], "invalid int value: 'two'"),
    "missing workload": (["run"], "the following arguments are required: --workload"),
    "unknown command": (["fly"], "invalid choice: 'fly'"),
    "no command": ([], "required: command"),
    "unreadable golden": (["check", "-w", "phold", "--golden", "/nonexistent/golden.json"], "--golden"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_exit_2(
    case: str, capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Bad input exits with status 2 and exactly one line on stderr (naming the problem), no traceback, no output
    file."""
    argv, expected = BAD_INPUTS[case]
    out_file = tmp_path / "never.json"
    if argv[:1] in (["run"], ["check"]):
        argv = [*argv, "--out", str(out_file)]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith("tickpar: error: ") and expected in lines[0]
    assert "Traceback" not in err + out
    assert not out_file.exists()


def test_not_a_record_as_golden(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A --golden file that is JSON but not a tickpar record is one line of bad input."""
    bogus = tmp_path / "bogus.json"
    bogus.write_text(json.dumps({"hello": 1}))
    code, _, err = run_cli(capsys, "check", *SMALL, "--golden", str(bogus))
    assert code == 2 and len(err.splitlines()) == 1 and "not a tickpar record" in err


def test_cell_options_are_defined_once_and_round_trip() -> None:
    """The CLI (short aliases) and the pyperf script (long options only) share tickpar.cellargs: argv written
    back by cell_argv parses to the same cell."""
    import argparse

    from tickpar.cellargs import add_cell_options, cell_argv, cell_from_args

    cli, script = argparse.ArgumentParser(), argparse.ArgumentParser()
    add_cell_options(cli)
    add_cell_options(script, short=False)
    given = cli.parse_args(["-w", "phold", "-p", "lps=4", "-s", "sequential", "-n", "1", "--seed", "3"])
    again = script.parse_args(cell_argv(given))
    assert vars(again) == vars(given)
    assert cell_from_args(again).to_dict() == cell_from_args(given).to_dict()
    with pytest.raises(SystemExit):  # pyperf owns -p -n -w -o: the script's parser must not take them
        script.parse_args(["-w", "phold"])


def test_timing_does_not_import_the_cli() -> None:
    """No import cycle: tickpar.perf.timing needs tickpar.cellargs, never tickpar.cli."""
    import subprocess
    import sys

    code = "import sys, tickpar.perf.timing; sys.exit('tickpar.cli' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# -- promises and exit codes ---------------------------------------------------------------------------------

PROMISER_SRC = """
from tickpar.plugins import Promise, Strategy, StrategyResult, base_stats
from tickpar.kernel.simloop import start_single_queue
from tickpar.verify.oracle import collect


class Promiser(Strategy):
    \"\"\"Sync: none.
Lookahead: none.
Ownership: one worker.
Determinism: deterministic.
Promise: race, wrongly: it runs gem5's loop.
\"\"\"

    name = "wrong-promise"
    summary = "gem5's loop that promises a race (a broken promise, for the tests)"
    max_workers = 1

    def promise(self, spec, workers, options):
        return Promise("race", (), "a deliberately wrong promise")

    def run(self, spec, workers, options):
        model, queue = start_single_queue(spec)
        queue.run()
        record = collect(model, violations=queue.violations)
        return StrategyResult(record, {**base_stats(workers), "events": record.events})
"""


def test_check_prints_the_promise_and_whether_it_was_kept(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`tickpar check` prints `promise: <what> (<traits>): kept|BROKEN`; the record has promise.kept; exit 0 for
    exact, 1 for a non-exact verdict as promised, 3 for a broken promise."""
    out_file = tmp_path / "cell.json"
    code, out, _ = run_cli(capsys, "check", *SMALL, "-s", "sequential", "--out", str(out_file))
    assert code == 0 and "\npromise: exact (contract): kept\n" in out
    assert record(out_file)["promise"]["kept"] is True
    code, out, _ = run_cli(capsys, "check", *SMALL, "-s", "split", "-n", "2", "--out", str(out_file))
    assert code == 1 and "verdict: diverged" in out and "\npromise: diverged (long_run): kept\n" in out
    assert record(out_file)["promise"]["verdicts"] == ["diverged"]
    plugin_env.setenv("TICKPAR_PLUGINS", str(_write(tmp_path / "promiser.py", PROMISER_SRC)))
    get_registry(refresh=True)
    code, out, _ = run_cli(capsys, "check", *SMALL, "-s", "wrong-promise", "--out", str(out_file))
    assert code == 3 and "verdict: exact" in out and "\npromise: race (contract): BROKEN\n" in out
    assert record(out_file)["promise"]["kept"] is False


def test_exit_codes_are_documented() -> None:
    """The README's exit-status table lists every code the CLI uses, with its meaning."""
    from tickpar.cli import EXIT_CODES
    from tickpar.host.paths import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text()
    for code in EXIT_CODES:
        assert f"| {code} |" in readme, code


# -- plugin bugs: one line, exit 2 ----------------------------------------------------------------------------

BUGGY_SRC = """
from tickpar.kernel.model import Component
from tickpar.plugins import Workload


class Peer(Component):
    def init(self):
        if self.name == "a":
            self.send(self.link, 1)

    def on_msg(self, n):
        if n < 50:
            self.send(self.link, n + 1, 1)


class Buggy(Workload):
    name = "buggy"
    summary = "a workload with a bug in build() or stats(), for the tests"
    statistics = {{"messages": "messages received"}}

    def build(self, model, params):
        a, b = Peer(model, "a"), Peer(model, "b")
        a.link = model.link(a, b, "{handler}", 3)
        b.link = model.link(b, a, "on_msg", 3)
        model.end_tick = None

    def stats(self, record):
        return {{"messages": {stats}}}
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tickpar: error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", ["run", "check"])
def test_model_build_error_names_the_plugin_file_and_line(
    command: str, capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A misspelled handler in model.link: one line naming the plugin's file and line of the call, exit 2."""
    path = _write(tmp_path / "buggy.py", BUGGY_SRC.format(handler="on_mgs", stats="record.events"))
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    get_registry(refresh=True)
    code, _out, err = run_cli(capsys, command, "-w", "buggy", "-s", "sequential")
    line = _one_error_line(err)
    assert code == 2
    assert f"{path}:23 (in build)" in line and "b has no handler 'on_mgs'" in line


@pytest.mark.parametrize("command", ["run", "check"])
def test_stats_error_names_the_plugin_line_and_the_run_counts(
    command: str, capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A bug in stats(): one line with the plugin's file and line and the counts of the finished run, exit 2."""
    path = _write(tmp_path / "buggy.py", BUGGY_SRC.format(handler="on_msg", stats="1 / 0"))
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    get_registry(refresh=True)
    code, _out, err = run_cli(capsys, command, "-w", "buggy", "-s", "sequential", "--timeout", "60")
    line = _one_error_line(err)
    assert code == 2
    assert f"{path}:28 (in stats)" in line and "ZeroDivisionError" in line
    assert "finished run of 50 events to tick 199" in line


def test_syntax_error_in_one_plugin_file_spares_the_others(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A plugin file with a syntax error: `run -w phold` still works (one warning line naming the file and
    line), `list` shows it, and asking for a plugin it may hold says why it is missing (exit 2)."""
    broken = _write(tmp_path / "mesh.py", "from tickpar.plugins import Workload\n\nclass Mesh(Workload:\n")
    plugin_env.setenv("TICKPAR_PLUGINS", str(broken))
    get_registry(refresh=True)
    code, out, err = run_cli(capsys, "run", *SMALL)
    assert code == 0 and "phold" in out
    assert err.count("\n") == 1 and "warning" in err and f"{broken}:3" in err and "SyntaxError" in err
    code, out, err = run_cli(capsys, "list")
    assert code == 0 and err == "" and "broken plugins (skipped):" in out and str(broken) in out
    code, _out, err = run_cli(capsys, "list", "--json")
    assert str(broken) in json.loads(_out)["broken"]
    code, _out, err = run_cli(capsys, "run", "-w", "mesh")
    assert code == 2 and "unknown workload 'mesh'" in err and f"{broken}:3" in err.splitlines()[-1]


def test_workload_missing_build_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A workload class without build(): one line naming the file, the class and the missing method, exit 2."""
    src = "from tickpar.plugins import Workload\n\nclass NoBuild(Workload):\n    name = 'nobuild'\n    summary = 'x'\n"
    path = _write(tmp_path / "nobuild.py", src)
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    get_registry(refresh=True)
    code, _out, err = run_cli(capsys, "run", "-w", "nobuild")
    line = err.splitlines()[-1]
    assert code == 2 and line.startswith("tickpar: error: ")
    assert str(path) in line and "class NoBuild" in line and "lacks build()" in line
