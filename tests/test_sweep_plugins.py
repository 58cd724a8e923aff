"""A sweep config's ``plugins``: plugin files or folders found for the sweep and its jobs as if they were on
TICKPAR_PLUGINS (tickpar.pipeline.sweep.use_plugin_paths), e.g. config/native-plugin.yaml's example native
strategy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tickpar.plugins.registry
from tickpar.pipeline.sweep import SweepError, load_config_file, load_sweep, use_plugin_paths

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def clean_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TICKPAR_PLUGINS", raising=False)
    yield
    monkeypatch.delenv("TICKPAR_PLUGINS", raising=False)
    tickpar.plugins.registry.get_registry(refresh=True)


def test_the_native_plugin_config_sweeps_the_example_on_the_native_engine(
    clean_plugins: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    path = ROOT / "config" / "native-plugin.yaml"
    sweep = load_sweep(load_config_file(path), str(path))
    assert str((ROOT / "examples" / "native-strategies").resolve()) in os.environ["TICKPAR_PLUGINS"]
    cells = [c for c in sweep.cells if c.strategy == "bin-parallel"]
    assert cells and {c.engine for c in cells} == {"native"}
    assert {c.workers for c in cells} >= {2}
    assert "bin-parallel" in tickpar.plugins.registry.get_registry().strategies


def test_a_plugin_path_that_does_not_exist_is_one_line(clean_plugins: None, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SweepError, match=r"plugins: 'nowhere' does not exist .*: a plugin file or folder"):
        use_plugin_paths(["nowhere"])
    with pytest.raises(SweepError, match="a list of plugin files or folders"):
        use_plugin_paths("nowhere")


def test_plugin_paths_go_first_and_keep_what_the_user_set(clean_plugins: None, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    (tmp_path / "mine").mkdir()
    (tmp_path / "theirs").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TICKPAR_PLUGINS", str(tmp_path / "theirs"))
    use_plugin_paths(["mine", "mine"])
    assert os.environ["TICKPAR_PLUGINS"].split(os.pathsep) == [str(tmp_path / "mine"), str(tmp_path / "theirs")]
