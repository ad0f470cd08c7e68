"""Plugins are found through the ``pawl`` entry-point group; a broken one is skipped, not fatal.

``pawl-regex-scorer`` (``plugins/``) is pip-installed into the environment like any
third-party distribution. Broken plugins are real distributions too: a ``.dist-info``
directory with an ``entry_points.txt``, put on ``sys.path`` for the test.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.errors import ValidationFailed
from chalicelib.plugins.manager import PluginHost, plugins
from chalicelib.scoring.contract import ItemContext, Scorer, ScoringEnv
from chalicelib.scoring.validation import CatalogValidationEnv, validate_scorers


@pytest.fixture(autouse=True)
def fresh_host() -> Any:
    wiring.install_plugins()
    yield
    wiring.install_plugins()


def entry(report: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [found] = [e for e in report if e["name"] == name]
    return found


def install_fake_distribution(
    root: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]
) -> None:
    """Lay out an installed distribution by hand: modules plus ``<dist>-<ver>.dist-info``."""
    info = root / f"{dist.replace('-', '_')}-0.0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0.1\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[pawl]\n{lines}")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(source)


def test_example_plugin_is_discovered_through_its_entry_point() -> None:
    [ep] = [e for e in importlib.metadata.entry_points(group="pawl") if e.name == "regex"]
    assert ep.value == "pawl_regex_scorer.plugin"

    host = wiring.new_plugin_host()
    loaded = entry(host.report.loaded, "regex")
    assert loaded == {
        "name": "regex",
        "version": importlib.metadata.version("pawl-regex-scorer"),
        "source": "pawl-regex-scorer",
        "hooks": ["pawl_register_scorers"],
        "scorers": ["regex"],
        "agents": [],
        "sinks": [],
        "overrides": [],
    }
    assert entry(host.report.loaded, "chalicelib.webhooks.sink")["hooks"] == ["pawl_deliver_event"]
    assert host.report.failed == []


def test_plugin_scorer_is_served_by_the_facade() -> None:
    scorer = plugins().scorer("regex")
    assert isinstance(scorer, Scorer) and "regex" in plugins().scorer_types()
    config = scorer.config_model.model_validate(
        {"type": "regex", "pattern": r"^\d+$", "full_match": True}
    )
    item = ItemContext(input=[], output="2026", expected=None, item_metadata={})
    outcome = scorer.score(config, item, ScoringEnv(project_id="proj_x"))
    assert (outcome.score, outcome.passed) == (1.0, True)


def test_plugin_config_is_validated_like_a_builtin_in_an_eval() -> None:
    env = CatalogValidationEnv(project_id="proj_x", phase="create", agent_output_schema=None)
    good = [{"type": "regex", "pattern": "ok", "flags": ["IGNORECASE"]}]
    assert validate_scorers(good, env) == [{**good[0], "full_match": False}]
    cases = [
        ([{"type": "exact_match"}, {"type": "regex", "pattern": "("}], "scorers.1.pattern"),
        ([{"type": "regex", "pattern": "a", "full_match": "yes"}], "scorers.0.full_match"),
        ([{"type": "regex", "pattern": "a", "case": True}], "scorers.0.case"),
        ([{"type": "regex", "pattern": "a"}, {"type": "regex", "pattern": "b"}], "scorers.1.type"),
    ]
    for scorers, field in cases:
        with pytest.raises(ValidationFailed) as refused:
            validate_scorers(scorers, env)
        assert refused.value.meta["field"] == field


def test_without_entry_points_the_plugin_is_absent() -> None:
    host = wiring.new_plugin_host(load_entry_points=False)
    assert "regex" not in host.scorer_types()
    assert all(e["source"] == "builtin" for e in host.report.loaded)


def test_the_built_ins_are_the_plugins_wiring_hands_over() -> None:
    # The manager imports no built-in by name: a host given none has no scorer and no
    # adapter, and the composition root's list is exactly what a default host reports.
    bare = PluginHost(load_entry_points=False)
    assert bare.scorer_types() == [] and bare.adapter_types() == [] and bare.report.loaded == []
    host = wiring.new_plugin_host(load_entry_points=False)
    names = [module.__name__ for module in wiring.builtin_plugins()]
    assert [e["name"] for e in host.report.loaded] == names
    assert {"exact_match", "llm_judge"} <= set(host.scorer_types())
    assert "http" in host.adapter_types()


def test_broken_plugins_are_reported_and_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake_distribution(
        tmp_path,
        "pawl-broken-plugins",
        {
            "explodes": "pawl_explodes_on_import",
            "missing": "pawl_no_such_module",
            "typo": "pawl_misspelt_hook",
        },
        {
            "pawl_explodes_on_import": "raise RuntimeError('boom at import')\n",
            "pawl_misspelt_hook": (
                "from chalicelib.plugins import hookimpl\n\n"
                "@hookimpl\n"
                "def pawl_register_scorerz():\n"
                "    return []\n"
            ),
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    host = wiring.new_plugin_host()

    failed = {f["name"]: f["error"] for f in host.report.failed}
    assert set(failed) == {"explodes", "missing", "typo"}
    assert failed["explodes"] == "RuntimeError: boom at import"
    assert failed["missing"].startswith("ModuleNotFoundError")
    assert "pawl_register_scorerz" in failed["typo"]
    loaded = {e["name"] for e in host.report.loaded}
    assert "regex" in loaded and not loaded & set(failed)
    assert host.scorer("regex").type == "regex"  # the healthy plugin still works
