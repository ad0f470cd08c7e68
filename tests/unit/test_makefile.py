"""The Makefile's install layers: the demo installs the base only; `make test` adds the rest.

Checked with ``make -n`` (what make would run) in a copy of the files the stamps depend on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _checkout(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml", "requirements-infra.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    for plugin in (ROOT / "plugins").glob("*/pyproject.toml"):
        target = tmp_path / plugin.relative_to(ROOT)
        target.parent.mkdir(parents=True)
        shutil.copy(plugin, target)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    return tmp_path


def _stamp(checkout: Path, *names: str) -> None:
    """Mark layers installed, newer than every file they depend on."""
    for name in names:
        stamp = checkout / ".venv" / f".installed-{name}"
        stamp.touch()
        os.utime(stamp, (2_000_000_000, 2_000_000_000))


def _plan(checkout: Path, target: str) -> str:
    done = subprocess.run(
        ["make", "-n", target, "CHROMIUM=/bin/sh"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_demo_installs_the_base_without_torch(tmp_path: Path) -> None:
    plan = _plan(_checkout(tmp_path), "demo")
    assert "pip install -qq --disable-pip-version-check -e '.[local]' " in plan
    assert "embeddings" not in plan and "dev" not in plan
    assert "pawl demo" in plan


def test_test_after_a_demo_install_adds_the_embeddings_extra_and_dev_tools(
    tmp_path: Path,
) -> None:
    checkout = _checkout(tmp_path)
    _stamp(checkout, "base")
    plan = _plan(checkout, "test")
    assert "-e '.[local]' " not in plan  # the base layer is not reinstalled
    assert "-e '.[embeddings]'" in plan
    assert "-e '.[local,dev,embeddings]'" in plan
    assert "-r requirements-infra.txt" in plan


def test_install_embeddings_alone_and_nothing_when_everything_is_installed(
    tmp_path: Path,
) -> None:
    checkout = _checkout(tmp_path)
    _stamp(checkout, "base")
    plan = _plan(checkout, "install-embeddings")
    assert "-e '.[embeddings]'" in plan and "dev" not in plan
    _stamp(checkout, "embeddings", "dev")
    assert "pip install" not in _plan(checkout, "install")
