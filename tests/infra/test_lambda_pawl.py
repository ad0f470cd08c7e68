"""The Lambda part of ``pawl``: only the listed modules, an installed distribution's metadata,
put into Chalice's zip in place of whatever ``pawl`` pip brought there."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import zipfile
from pathlib import Path

import pytest

from chalicelib.infra import lambda_pawl
from chalicelib.infra.lambda_pawl import LambdaPawlError

LAPTOP_FILES = ("cli/__init__.py", "cli/main.py", "local/runtime.py", "demo/ci.py", "transport.py")


def _project(tmp_path: Path, version: str = "0.2.0", plugins: bool = True) -> Path:
    """A project whose pawl/ holds the Lambda modules and laptop ones beside them."""
    pawl = tmp_path / "project" / "pawl"
    for name in LAPTOP_FILES:
        (pawl / name).parent.mkdir(parents=True, exist_ok=True)
        (pawl / name).write_text("import moto\n")
    (pawl / "__init__.py").write_text('"""pawl."""\n')
    (pawl / "_version.py").write_text(f'"""v."""\n\n__version__ = "{version}"\n')
    (pawl / "py.typed").write_text("")
    if plugins:
        (pawl / "plugins.py").write_text("HOOK = 1\n")
    return pawl.parent


def test_only_the_listed_modules_ship(tmp_path: Path) -> None:
    files = lambda_pawl.package_files(_project(tmp_path) / "pawl")
    assert sorted(files) == [
        "pawl/__init__.py",
        "pawl/_version.py",
        "pawl/plugins.py",
        "pawl/py.typed",
    ]


def test_a_listed_module_not_written_yet_is_left_out_but_the_version_is_required(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path, plugins=False)
    assert "pawl/plugins.py" not in lambda_pawl.package_files(project / "pawl")
    (project / "pawl" / "_version.py").unlink()
    with pytest.raises(LambdaPawlError, match=r"lacks _version\.py"):
        lambda_pawl.package_files(project / "pawl")
    with pytest.raises(LambdaPawlError, match="cannot read"):
        lambda_pawl.read_version(project / "pawl")


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ('__version__ = "two"\n', "not a PEP 440 version"),
        ("__version__ = 2\n", "has no `__version__"),
        ('VERSION = "0.2.0"\n', "has no `__version__"),
    ],
)
def test_a_bad_version_file_is_refused(tmp_path: Path, source: str, error: str) -> None:
    project = _project(tmp_path)
    (project / "pawl" / "_version.py").write_text(source)
    with pytest.raises(LambdaPawlError, match=error):
        lambda_pawl.read_version(project / "pawl")


def test_the_version_is_the_repository_s_own_and_pyproject_s() -> None:
    import tomllib

    import pawl._version

    root = Path(__file__).resolve().parents[2]
    assert lambda_pawl.read_version(root / "pawl") == pawl._version.__version__
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    dynamic = pyproject["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "pawl._version.__version__"}


def test_the_record_lists_every_file_with_its_hash(tmp_path: Path) -> None:
    _, files = lambda_pawl.lambda_distribution(_project(tmp_path))
    record = files["pawl-0.2.0.dist-info/RECORD"].decode().splitlines()
    rows = dict((line.split(",", 1)[0], line.split(",", 1)[1]) for line in record)
    assert set(rows) == set(files)
    assert rows.pop("pawl-0.2.0.dist-info/RECORD") == ","
    for path, row in rows.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(files[path]).digest()).rstrip(b"=")
        assert row == f"sha256={digest.decode()},{len(files[path])}"


def test_the_wheel_installs_as_distribution_pawl_with_its_version(tmp_path: Path) -> None:
    project = _project(tmp_path, version="1.4.0rc1")
    wheel = lambda_pawl.build_wheel(project, tmp_path / "wheels")
    assert wheel.name == "pawl-1.4.0rc1-py3-none-any.whl"
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if n.startswith(("pawl/cli", "pawl/local"))]
        archive.extractall(site)
    (dist,) = importlib.metadata.distributions(path=[str(site)])
    assert (dist.metadata["Name"], dist.version) == ("pawl", "1.4.0rc1")
    assert not dist.requires


def test_the_wheel_is_the_same_bytes_from_the_same_sources(tmp_path: Path) -> None:
    project = _project(tmp_path)
    first = lambda_pawl.build_wheel(project, tmp_path / "a").read_bytes()
    assert lambda_pawl.build_wheel(project, tmp_path / "b").read_bytes() == first


def test_a_new_version_replaces_the_old_wheel(tmp_path: Path) -> None:
    lambda_pawl.build_wheel(_project(tmp_path / "one", version="0.2.0"), tmp_path / "w")
    lambda_pawl.build_wheel(_project(tmp_path / "two", version="0.3.0"), tmp_path / "w")
    assert [p.name for p in (tmp_path / "w").iterdir()] == ["pawl-0.3.0-py3-none-any.whl"]


def _chalice_zip(path: Path, extra: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("app.py", b"app = 1\n")
        archive.writestr("chalicelib/__init__.py", b"")
        for name, content in extra.items():
            archive.writestr(name, content)
    return path


def test_the_zip_gains_pawl_and_keeps_everything_else(tmp_path: Path) -> None:
    project = _project(tmp_path)
    deployment = _chalice_zip(tmp_path / "deployment.zip", {})
    assert lambda_pawl.add_to_zip(deployment, project) == "0.2.0"
    with zipfile.ZipFile(deployment) as archive:
        names = set(archive.namelist())
        assert archive.read("pawl/plugins.py") == b"HOOK = 1\n"
    assert {"app.py", "chalicelib/__init__.py", "pawl-0.2.0.dist-info/METADATA"} <= names
    assert not [n for n in names if n.startswith(("pawl/cli", "pawl/local", "pawl/demo"))]
    assert "pawl/transport.py" not in names


def test_a_pawl_pip_installed_for_a_plugin_is_replaced_by_the_current_sources(
    tmp_path: Path,
) -> None:
    """pip installed the wheel from an earlier package step; the sources changed since."""
    project = _project(tmp_path)
    stale = {
        "pawl/__init__.py": b"OLD\n",
        "pawl/old_module.py": b"OLD\n",
        "pawl-0.2.0.dist-info/METADATA": b"OLD\n",
        "pawl-0.2.0.dist-info/INSTALLER": b"pip\n",
    }
    deployment = _chalice_zip(tmp_path / "deployment.zip", stale)
    lambda_pawl.add_to_zip(deployment, project)
    with zipfile.ZipFile(deployment) as archive:
        names = archive.namelist()
        assert archive.read("pawl/__init__.py") == b'"""pawl."""\n'
    assert len(names) == len(set(names))  # no entry written twice
    assert "pawl/old_module.py" not in names
    assert "pawl-0.2.0.dist-info/INSTALLER" not in names
    assert "app.py" in names


def test_an_index_s_other_pawl_is_refused_with_what_to_do(tmp_path: Path) -> None:
    """PyPI's `pawl` is another project (0.1.1, a LinkedIn API wrapper)."""
    project = _project(tmp_path)
    deployment = _chalice_zip(
        tmp_path / "deployment.zip", {"pawl-0.1.1.dist-info/METADATA": b"Name: pawl\n"}
    )
    with pytest.raises(LambdaPawlError, match=r"pulled pawl 0\.1\.1 .* not this deployment's"):
        lambda_pawl.add_to_zip(deployment, project)


def test_cached_zips_resolved_against_another_version_are_dropped(tmp_path: Path) -> None:
    project = _project(tmp_path)
    cache = project / ".chalice" / "deployments"
    cache.mkdir(parents=True)
    old = _chalice_zip(cache / "old.zip", {"pawl-0.1.0.dist-info/METADATA": b""})
    same = _chalice_zip(cache / "same.zip", {"pawl-0.2.0.dist-info/METADATA": b""})
    none = _chalice_zip(cache / "none.zip", {})
    assert lambda_pawl.drop_stale_caches(project, "0.2.0") == [old]
    assert same.exists() and none.exists() and not old.exists()
