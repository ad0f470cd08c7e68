"""The `pawl` distribution as pip builds it: version from pawl/_version.py, the laptop
tools (moto, rich, PyYAML) only under the `local` extra, the typing marker included."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from chalicelib.infra.lambda_pawl import read_version
from tests.infra.conftest import PROJECT

pytestmark = pytest.mark.slow  # pip builds the wheel in a subprocess

SOURCES = ("app.py", "chalicelib", "pawl", "pyproject.toml", "README.md")


def test_the_wheel_keeps_the_laptop_tools_in_the_local_extra(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info beside it
    source.mkdir()
    for name in SOURCES:
        if (PROJECT / name).is_dir():
            shutil.copytree(
                PROJECT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(PROJECT / name, source / name)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path / "out"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "out").glob("pawl-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(archive.read(metadata))
    assert meta["Version"] == read_version(PROJECT / "pawl")
    assert "pawl/py.typed" in names
    requires = meta.get_all("Requires-Dist") or []
    core = {r.split("==")[0].split("[")[0].lower() for r in requires if "extra ==" not in r}
    local = {r.split("==")[0] for r in requires if r.endswith('extra == "local"')}
    assert not core & {"moto", "rich", "pyyaml"}
    assert {"jinja2", "httpx", "pluggy"} <= core
    assert local == {"moto[server]", "rich", "PyYAML"}
