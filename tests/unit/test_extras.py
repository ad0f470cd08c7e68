"""A core install (no `local` extra: no moto, rich, PyYAML) keeps the API path, and a command
that needs the extra says what to install instead of a traceback."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pawl.cli.extras import EXTRA_MODULES, missing_extra_message, require
from pawl.cli.progress import PlainProgress, byte_progress, progress_line

ROOT = Path(__file__).resolve().parents[2]
#: Runs `pawl ARGS` in a fresh interpreter where the named top-level modules cannot import.
BLOCKING_MAIN = """
import importlib.abc, sys
blocked = set(sys.argv[1].split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from pawl.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _pawl_without(blocked: set[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKING_MAIN, ",".join(sorted(blocked)), *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_message_names_the_distribution_and_the_extra() -> None:
    error = ModuleNotFoundError("No module named 'yaml'", name="yaml")
    assert missing_extra_message("apply", error) == (
        "pawl apply: needs PyYAML, which is not installed: pip install 'pawl[local]'"
    )
    nested = ModuleNotFoundError("x", name="moto.dynamodb.models")
    assert "needs moto[server]" in (missing_extra_message("serve", nested) or "")


def test_a_missing_module_no_extra_provides_is_not_explained_away() -> None:
    assert missing_extra_message("run", ModuleNotFoundError("x", name="chalicelib.nope")) is None
    assert missing_extra_message("run", ModuleNotFoundError("x")) is None


def test_every_extra_module_is_in_the_local_extra() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    local = {spec.split("==")[0] for spec in extras["optional-dependencies"]["local"]}
    assert {distribution for distribution, _ in EXTRA_MODULES.values()} <= local
    core = {spec.split("==")[0].split("[")[0].lower() for spec in extras["dependencies"]}
    assert not core & {"moto", "rich", "pyyaml"}
    assert "jinja2" in core  # the console renders in Lambda


@pytest.mark.parametrize(
    ("blocked", "needs"), [({"yaml"}, "PyYAML"), ({"rich", "yaml", "moto"}, "rich")]
)
def test_plan_without_the_extra_says_what_to_install(
    tmp_path: Path, blocked: set[str], needs: str
) -> None:
    template = tmp_path / "suite.yaml"
    template.write_text("resources: {}\n")
    done = _pawl_without(blocked, "plan", str(template), "--server", "http://127.0.0.1:9")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"pawl plan: needs {needs}, which is not installed: pip install 'pawl[local]'"
    )


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_serve_and_demo_without_moto_say_so_before_starting_anything(
    tmp_path: Path, command: str
) -> None:
    report = ["--report", str(tmp_path / "r.html")] if command == "demo" else []
    done = _pawl_without({"moto"}, command, "--state-dir", str(tmp_path / "state"), *report)
    assert (done.returncode, done.stderr.strip()) == (
        2,
        f"pawl {command}: needs moto[server], which is not installed: pip install 'pawl[local]'",
    )
    assert not (tmp_path / "state").exists() and not (tmp_path / "r.html").exists()


def test_require_names_the_first_module_not_installed() -> None:
    require("json", "zipfile")
    with pytest.raises(ModuleNotFoundError) as raised:
        require("json", "pawl_no_such_module", "another_missing_one")
    assert raised.value.name == "pawl_no_such_module"


def test_plain_progress_prints_each_tenth_once() -> None:
    stream = io.StringIO()
    progress = PlainProgress(stream)
    task = progress.add_task("checking", total=1000)
    for done in (0, 50, 99, 100, 150, 1000, 1000):
        progress.update(task, completed=done)
    assert stream.getvalue().splitlines() == [
        "checking   0% (0 of 1,000 bytes)",
        "checking  10% (100 of 1,000 bytes)",
        "checking 100% (1,000 of 1,000 bytes)",
    ]


def test_an_empty_file_s_progress_is_complete() -> None:
    assert progress_line("importing", 0, 0) == "importing 100% (0 of 0 bytes)"


def test_progress_falls_back_to_plain_lines_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rich.progress", None)  # makes the import fail
    stream = io.StringIO()
    with byte_progress(stream) as progress:
        progress.update(progress.add_task("importing", total=10), completed=10)
    assert stream.getvalue() == "importing 100% (10 of 10 bytes)\n"
