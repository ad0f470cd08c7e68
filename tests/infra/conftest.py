"""Package the app once per test session (shared by xdist workers) and lint it once.

``make package`` in a copy of the project: the copy is what a clean clone holds (tracked
sources only, no venv), and packaging it never rewrites the worktree's committed policy
files, which ``test_generated.py`` compares with the generator's output.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[2]
#: What `chalice package` reads from a project (plus its dependency cache, if any).
#: All of pawl/ is copied, laptop side too: the zip must leave out what a clean clone holds.
PROJECT_PARTS = ["app.py", "chalicelib", "pawl", "requirements.txt", ".chalice/config.json"]
STAGE = "dev"


@dataclass(frozen=True)
class Packaged:
    project: Path
    out: Path
    template: dict[str, Any]
    merge: dict[str, Any]
    lint_output: str
    lint_exit: int

    @property
    def resources(self) -> dict[str, Any]:
        return dict(self.template["Resources"])

    def of_type(self, resource_type: str) -> dict[str, Any]:
        return {k: v for k, v in self.resources.items() if v["Type"] == resource_type}


def _copy_project(target: Path) -> None:
    for part in PROJECT_PARTS:
        source = PROJECT / part
        destination = target / part
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, destination)
    cache = PROJECT / ".chalice" / "deployments"
    if cache.is_dir():  # chalice's zip of the requirements, keyed by their hash
        shutil.copytree(cache, target / ".chalice" / "deployments")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PYTHONPATH": str(cwd),
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/root"),
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _package(root: Path) -> None:
    project = root / "project"
    _copy_project(project)
    out = root / "dist"
    done = _run([sys.executable, "-m", "chalicelib.infra", "package", "--stage", STAGE,
                 "--out", str(out)], project)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lint = _run([str(Path(sys.executable).with_name("cfn-lint")), str(out / "sam.json")], project)
    (root / "lint.json").write_text(
        json.dumps({"exit": lint.returncode, "output": lint.stdout + lint.stderr})
    )
    (root / "done").write_text("ok")


@pytest.fixture(scope="session")
def packaged(tmp_path_factory: pytest.TempPathFactory, testrun_uid: str) -> Iterator[Packaged]:
    # Under xdist every worker has its own basetemp below one shared parent; the lock makes
    # the first worker package and the others reuse its output.
    root = tmp_path_factory.getbasetemp().parent / f"pawl-package-{testrun_uid}"
    root.mkdir(exist_ok=True)
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "done").exists():
            _package(root)
        fcntl.flock(lock, fcntl.LOCK_UN)
    out = root / "dist"
    lint = json.loads((root / "lint.json").read_text())
    yield Packaged(
        project=root / "project",
        out=out,
        template=json.loads((out / "sam.json").read_text()),
        merge=json.loads((out / "merge-template.json").read_text()),
        lint_output=lint["output"],
        lint_exit=lint["exit"],
    )
