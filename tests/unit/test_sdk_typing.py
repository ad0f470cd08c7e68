"""Code that uses ``import pawl`` type-checks under ``mypy --strict``, and mistakes do not.

A user's file, in its own directory, checked with the package on the path (py.typed makes
mypy read pawl's annotations rather than treat it as untyped).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pawl


def newest_run_ids(client: pawl.Client, eval_id: str) -> list[str]:
    runs: Iterator[dict[str, Any]] = client.iter_eval_runs(eval_id, view="summary")
    return [str(run["id"]) for run in runs]


def start(client: pawl.Client, eval_id: str) -> str:
    try:
        run = client.start_eval_run(eval_id, wait=False, baseline_run_id=None)
    except pawl.NotFoundError as exc:
        return f"{exc.status} {exc.code}: {exc.message} ({exc.field})"
    return str(run["status"])


async def names(client: pawl.AsyncClient) -> list[str]:
    evals: AsyncIterator[dict[str, Any]] = client.iter_evals(limit=10)
    return [str(ev["name"]) async for ev in evals]


def removed(client: pawl.Client, dataset_id: str) -> None:
    client.delete_dataset(dataset_id)  # returns None: nothing to use


print(pawl.__version__.split("."))
"""

BAD = """
import pawl

client = pawl.Client()
client.list_evals(limt=5)
client.list_eval_runs("eval_1", view="everything")
client.get_eval()
x: int = client.get_eval("eval_1")
"""


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "user_code.py").write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user_code.py"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_user_code_passes_mypy_strict(tmp_path: Path) -> None:
    done = _mypy(tmp_path, GOOD)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mistakes_are_caught_by_the_types(tmp_path: Path) -> None:
    done = _mypy(tmp_path, BAD)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'Unexpected keyword argument "limt"' in done.stdout
    assert '"view" to "list_eval_runs"' in done.stdout  # not one of the Literal's values
    assert 'Missing positional argument "eval_id"' in done.stdout
    assert "Incompatible types in assignment" in done.stdout
