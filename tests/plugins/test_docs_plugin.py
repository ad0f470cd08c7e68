"""Issue 25's bar for the plugin API: the scorer plugin of ``docs/plugins.md``, taken from
the page alone, is at most 15 lines of code, installs with pip into a throwaway venv,
shows in ``pawl plugins`` with its type, scores a run through the in-process app, and
passes ``mypy --strict``."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.plugins.manager import PluginHost
from tests.support.runs import all_results, make_suite

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "plugins.md"
SECTION = "## A complete scorer plugin"

pytestmark = pytest.mark.slow


def _blocks(language: str) -> list[str]:
    """The ``language`` code blocks of the page's complete-plugin section, in order."""
    text = DOCS.read_text()
    section = text[text.index(SECTION) : text.index("\n## ", text.index(SECTION) + 1)]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def _code_lines(source: str) -> int:
    """Lines that are code: not blank, not a comment, not a docstring."""
    lines = [line.strip() for line in source.splitlines()]
    return sum(1 for line in lines if line and not line.startswith(("#", '"""')))


def _run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The page's plugin, pip-installed into a venv that sees pawl's packages through a .pth;
    yields the venv's site-packages."""
    base = tmp_path_factory.mktemp("docs-plugin")
    [module] = _blocks("python")
    [pyproject] = _blocks("toml")
    project = base / "pawl-mentions"
    project.mkdir()
    (project / "pawl_mentions.py").write_text(module)
    (project / "pyproject.toml").write_text(pyproject)
    venv = base / "venv"
    _run(sys.executable, "-m", "venv", venv)
    site = Path(
        _run(
            venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"
        ).strip()
    )
    # This worktree's pawl first (and its example plugins), then the dev venv's packages.
    paths = [ROOT, ROOT / "plugins/pawl-regex-scorer", ROOT / "plugins/pawl-slack-sink"]
    paths.append(Path(sysconfig.get_path("purelib")))
    (site / "pawl-dev.pth").write_text("".join(f"{p}\n" for p in paths))
    _run(
        venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps",
        "--no-build-isolation", "--no-index", project,
    )  # fmt: skip
    yield site


def test_the_documented_plugin_is_at_most_15_lines_of_code() -> None:
    [module] = _blocks("python")
    assert _code_lines(module) <= 15


def test_it_shows_in_pawl_plugins_with_its_type(installed: Path) -> None:
    python = installed.parents[2] / "bin" / "python"
    out = _run(python, "-m", "pawl.cli", "plugins")
    assert "  mentions  0.1.0  from pawl-mentions\n" in out
    entry = out[out.index("  mentions  0.1.0") :]
    assert entry.splitlines()[2] == "      scorers: mentions"


def test_it_passes_mypy_strict(installed: Path, tmp_path: Path) -> None:
    [module] = _blocks("python")
    (tmp_path / "pawl_mentions.py").write_text(module)
    mypy = Path(sys.executable).parent / "mypy"
    done = subprocess.run(
        # pawl's own modules are checked by pawl's mypy run; here they are what an installed,
        # typed package is to its user: their types are used, their insides not reported.
        [str(mypy), "--strict", "--no-incremental", "--follow-imports=silent", "pawl_mentions.py"],
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def host_with_installed(installed: Path) -> Iterator[PluginHost]:
    """A plugin host of this process that discovers the venv's entry point (the installed
    distribution, not the page's source)."""
    sys.path.append(str(installed))
    importlib.invalidate_caches()
    try:
        host = wiring.new_plugin_host()
        wiring.install_plugins(host)
        yield host
    finally:
        wiring.install_plugins()
        sys.path.remove(str(installed))
        sys.modules.pop("pawl_mentions", None)


def test_it_scores_a_run(api: Any, project: Any, host_with_installed: PluginHost) -> None:
    entry = next(e for e in host_with_installed.report.loaded if e["name"] == "mentions")
    assert entry["scorers"] == ["mentions"] and entry["source"] == "pawl-mentions"
    scorer = {"type": "mentions", "word": "refund", "min_count": 2}
    cases: list[Any] = [("echo:refund? a Refund!", None), ("echo:one refund", None)]
    suite = make_suite(api, project, cases, scorers=[scorer])
    run = api.post(suite.runs_path, {"wait": True}).json
    assert run["status"] == "completed", run
    passed = {r["output"]: r["passed"] for r in all_results(api, suite, run["id"])}
    assert passed == {"refund? a Refund!": True, "one refund": False}

    body = {"project_id": project["id"], "name": "bad", "agent_id": suite.agent["id"]}
    body["dataset_id"] = suite.dataset["id"]
    for bad, field in [
        ({"min_count": "2", "word": "x"}, "scorers.0.min_count"),
        ({"word": " "}, "scorers.0.word"),
        ({"word": "x", "colour": "red"}, "scorers.0.colour"),
    ]:
        refused = api.post("/api/v1/evals", {**body, "scorers": [{"type": "mentions", **bad}]})
        assert refused.status == 400, refused
        assert refused.json["error"]["meta"]["field"] == field, refused.json
