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


def test_list_json(capsys: pytest.CaptureFixture[str], plugin_env: pytest.MonkeyPatch) -> None:
    """`tickpar list --json` prints valid JSON with every strategy and workload, their parameters and sources."""
    code, out, _ = run_cli(capsys, "list", "--json")
    assert code == 0
    info = json.loads(out)
    assert set(info) == {"strategies", "workloads"}
    assert info["strategies"]["sequential"]["options"]["checks"]["type"] == "bool"
    lps = info["workloads"]["phold"]["params"]["lps"]
    assert lps["type"] == "int" and (lps["min"], lps["max"]) == (1, 256) and isinstance(lps["default"], int)
    assert info["workloads"]["phold"]["source"].endswith("phold.py")


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
    while a golden of another seed makes the same check diverge (exit 1)."""
    golden = tmp_path / "golden.json"
    assert run_cli(capsys, "golden", *SMALL, "--out", str(golden))[0] == 0
    saved = record(golden)
    assert saved["oracle"]["traces"] and saved["strategy"] == "sequential"
    code, out, _ = run_cli(capsys, "check", *SMALL, "--golden", str(golden))
    assert code == 0 and "verdict: exact" in out
    code, out, _ = run_cli(capsys, "check", *SMALL, "--seed", "9", "--golden", str(golden))
    assert code == 1 and "verdict: diverged" in out


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
