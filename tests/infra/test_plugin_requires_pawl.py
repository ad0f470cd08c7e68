"""A plugin that declares ``pawl>=X,<Y`` deploys: Chalice's packager (which pip-downloads
``requirements.txt`` and its dependencies) resolves ``pawl`` to the package step's wheel.

Offline: pip is told ``--no-index``, so only the directories the requirements file names
count. (Online, without that wheel, pip would take the unrelated ``pawl`` 0.1.1 on PyPI when
a plugin's range admits it, and fail with "Could not satisfy" when it does not.)
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from chalice.deploy.packager import DependencyBuilder, NoSuchPackageError
from chalice.utils import OSUtils

from chalicelib.infra import lambda_pawl
from tests.infra.conftest import PROJECT, STAGE, _copy_project, _run

pytestmark = pytest.mark.slow  # pip runs in subprocesses


#: The plugin's module: what it sees of pawl in Lambda.
PLUGIN_MODULE = (
    b"import importlib.metadata\n\nimport pawl\n\nPAWL = importlib.metadata.version('pawl')\n"
)


def _plugin_wheel(dest: Path, requires: str) -> None:
    """A one-module plugin's wheel, as `pip wheel` of its project would make it."""
    info = "demo_scorer-0.1.0.dist-info"
    files = {
        "demo_scorer.py": PLUGIN_MODULE,
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: demo-scorer\nVersion: 0.1.0\nRequires-Dist: {requires}\n"
        ).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": b"[pawl]\ndemo = demo_scorer\n",
        f"{info}/RECORD": b"",
    }
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest / "demo_scorer-0.1.0-py3-none-any.whl", "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)


def _committed_find_links() -> list[str]:
    lines = (PROJECT / "requirements.txt").read_text().splitlines()
    return [line for line in lines if line.startswith("--find-links")]


def _project(tmp_path: Path, requires: str, with_pawl_wheel: bool = True) -> Path:
    """requirements.txt as a deployer writes it: pawl's committed lines plus the plugin."""
    project = tmp_path / "project"
    _plugin_wheel(project / "plugin-dist", requires)
    if with_pawl_wheel:
        lambda_pawl.build_wheel(PROJECT, project / lambda_pawl.WHEEL_DIR)
    lines = [*_committed_find_links(), "--find-links plugin-dist", "--no-index", "demo-scorer"]
    (project / "requirements.txt").write_text("\n".join(lines) + "\n")
    return project


@pytest.fixture(autouse=True)
def _only_the_named_directories(monkeypatch: pytest.MonkeyPatch) -> None:
    """No index, no machine-wide find-links or constraints: the requirements file alone."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT"):
        monkeypatch.delenv(name, raising=False)


def _build(project: Path, site: Path) -> None:
    DependencyBuilder(OSUtils()).build_site_packages(
        "cp311", str(project / "requirements.txt"), str(site)
    )


def test_the_committed_requirements_name_the_wheel_directory() -> None:
    assert _committed_find_links() == [f"--find-links {lambda_pawl.WHEEL_DIR.as_posix()}"]


def test_a_plugin_requiring_a_pawl_range_gets_this_pawl(tmp_path: Path) -> None:
    version = lambda_pawl.read_version(PROJECT / "pawl")
    major, minor = (int(part) for part in version.split(".")[:2])
    project = _project(tmp_path, f"pawl>={major}.{minor},<{major + 1}")
    site = tmp_path / "site"
    _build(project, site)
    found = importlib.metadata.distributions(path=[str(site)])
    versions = {d.metadata["Name"]: d.version for d in found}
    assert versions == {"demo-scorer": "0.1.0", "pawl": version}
    shipped = {p.relative_to(site / "pawl").as_posix() for p in (site / "pawl").rglob("*")}
    modules = lambda_pawl.LAMBDA_PAWL_MODULES
    assert shipped == {m for m in modules if (PROJECT / "pawl" / m).exists()}


def test_a_plugin_needing_a_newer_pawl_fails_the_package_naming_the_requirement(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path, "pawl>=99")
    with pytest.raises(NoSuchPackageError, match="requirement: pawl>=99"):
        _build(project, tmp_path / "site")


def test_without_the_package_step_s_wheel_pawl_cannot_be_satisfied(tmp_path: Path) -> None:
    """What plain `chalice package` does with such a plugin: pip finds no `pawl`."""
    project = _project(tmp_path, "pawl>=0.2", with_pawl_wheel=False)
    with pytest.raises(NoSuchPackageError):
        _build(project, tmp_path / "site")


def test_make_package_deploys_the_plugin_with_this_pawl(tmp_path: Path) -> None:
    """The whole package step on a clean copy whose requirements.txt lists the plugin: the zip
    holds one pawl (this one), the plugin, and the plugin finds both where Lambda looks. The
    service's own requirements are left out (test_lambda_zip packages them): pip fetches
    only the two wheels here, from those directories alone."""
    project = tmp_path / "project"
    _copy_project(project)
    _plugin_wheel(project / "plugin-dist", "pawl>=0.2,<1")
    lines = [
        *_committed_find_links(),
        "--find-links plugin-dist",
        "--no-index",
        "demo-scorer==0.1.0",
    ]
    (project / "requirements.txt").write_text("\n".join(lines) + "\n")
    out = tmp_path / "dist"
    done = _run([sys.executable, "-m", "chalicelib.infra", "package", "--stage", STAGE,
                 "--out", str(out)], project)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(out / "deployment.zip") as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "task")
    assert len(names) == len(set(names))
    version = lambda_pawl.read_version(PROJECT / "pawl")
    assert sorted({n.split("/")[0] for n in names if n.startswith("pawl")}) == [
        "pawl",
        f"pawl-{version}.dist-info",
    ]
    assert not [n for n in names if n.startswith(("pawl/cli", "pawl/local", "pawl/demo"))]
    script = (
        "import importlib.metadata, demo_scorer\n"
        "assert 'demo' in importlib.metadata.entry_points(group='pawl').names\n"
        "print(demo_scorer.PAWL)\n"
    )
    imported = subprocess.run(
        [sys.executable, "-S", "-c", script],
        cwd=tmp_path / "task",
        env={"PYTHONPATH": str(tmp_path / "task")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (imported.returncode, imported.stdout.strip()) == (0, version), imported.stderr
