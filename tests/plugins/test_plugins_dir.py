"""``PAWL_PLUGINS_DIR``: one-off plugin files and packages, loaded after the installed
plugins, reported like entry points; a broken file is skipped and reported; and
``pawl plugins`` shows what each adds and which built-in it overrides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from chalicelib import wiring
from chalicelib.plugins.manager import PluginHost
from chalicelib.plugins.scorer_contract import ItemContext, ScoringEnv
from chalicelib.scoring import plugin as builtin_scorers
from chalicelib.settings import reset_settings
from pawl.cli import main as cli

LOUD = '''
from pawl.plugins import ItemContext, scorer


@scorer("contains", calls_out=False)
def loud_contains(item: ItemContext, value: str) -> bool:
    """Replaces the built-in: matches only when shouted."""
    return value.upper() in (item.output or "")
'''

PACKAGE_INIT = "from .rule import fresh_only\n"
PACKAGE_RULE = """
from pawl.plugins import baseline_validator


@baseline_validator
def fresh_only(baseline) -> str | None:
    return "stale" if baseline.metadata.get("stale") else None
"""


@pytest.fixture
def plugins_dir(tmp_path: Path) -> Path:
    (tmp_path / "loud.py").write_text(LOUD)
    (tmp_path / "broken.py").write_text("def oops(:\n")
    (tmp_path / "json.py").write_text("SHADOWED = True\n")  # must not become `json`
    (tmp_path / "_helper.py").write_text("raise RuntimeError('never imported')\n")
    (tmp_path / "not-a-name.py").write_text("")
    package = tmp_path / "rules"
    package.mkdir()
    (package / "__init__.py").write_text(PACKAGE_INIT)
    (package / "rule.py").write_text(PACKAGE_RULE)
    return tmp_path


def _entry(host: PluginHost, name: str) -> dict[str, object]:
    [found] = [dict(e) for e in host.report.loaded if e["name"] == name]
    return found


def test_directory_plugins_load_after_the_installed_ones_and_win(plugins_dir: Path) -> None:
    host = PluginHost([builtin_scorers], load_entry_points=False, plugins_dir=plugins_dir)
    loud = _entry(host, "loud")
    assert loud["version"] == "local" and loud["source"] == str(plugins_dir / "loud.py")
    assert loud["scorers"] == ["contains"] and loud["overrides"] == ["scorer contains"]
    contains = host.scorer("contains")
    config = contains.config_model.model_validate({"type": "contains", "value": "hi"})
    env = ScoringEnv(project_id="proj_test")
    assert contains.score(config, ItemContext([], "HI there", None, {}), env).passed is True
    assert contains.score(config, ItemContext([], "hi there", None, {}), env).passed is False
    assert _entry(host, "rules")["hooks"] == ["pawl_validate_baseline"]
    assert not hasattr(json, "SHADOWED") and _entry(host, "json")["hooks"] == []


def test_a_broken_file_is_skipped_and_reported(plugins_dir: Path) -> None:
    host = PluginHost([builtin_scorers], load_entry_points=False, plugins_dir=plugins_dir)
    failed = {f["name"]: f["error"] for f in host.report.failed}
    assert set(failed) == {"broken", "not-a-name"}
    assert failed["broken"].startswith("SyntaxError")
    assert "not a Python module name" in failed["not-a-name"]
    loaded = {e["name"] for e in host.report.loaded}
    assert {"loud", "rules", "json"} <= loaded and "_helper" not in loaded


def test_a_missing_directory_is_reported(tmp_path: Path) -> None:
    host = PluginHost([], load_entry_points=False, plugins_dir=tmp_path / "absent")
    [failure] = host.report.failed
    assert "is not a directory" in failure["error"]


@pytest.fixture
def dir_setting(plugins_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("PAWL_PLUGINS_DIR", str(plugins_dir))
    reset_settings()
    yield plugins_dir
    monkeypatch.delenv("PAWL_PLUGINS_DIR")
    reset_settings()
    wiring.install_plugins()


def test_the_setting_reaches_the_host_and_pawl_plugins_reports_it(
    dir_setting: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wiring.install_plugins(wiring.new_plugin_host())
    code = cli.main(["plugins"])
    out = capsys.readouterr().out
    assert code == 1  # a directory plugin failed to load
    assert f"  loud  local  from {dir_setting / 'loud.py'}" in out
    assert "      scorers: contains\n      overrides built-in: scorer contains" in out
    assert "failed to load:\n" in out and "  broken: SyntaxError" in out
    assert "      agents: echo, http, lambda, model, python" in out
