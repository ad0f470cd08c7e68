"""The Lambda zip holds only requirements.txt packages, the app and the Lambda part of pawl;
it fits Lambda and imports without dev tools or the laptop side (CLI, client, local runtime)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import boto3
import pytest
import s3transfer

from chalicelib.infra.lambda_pawl import LAMBDA_PAWL_MODULES, dist_info_name, read_version
from tests.infra.conftest import PROJECT, Packaged

#: Lambda's limit on a function's unzipped code and layers.
UNZIPPED_LIMIT_BYTES = 250 * 1024 * 1024
#: Installed here for development, tests or the local runtime; never shipped.
DEV_ONLY = {
    "moto", "pytest", "_pytest", "xdist", "torch", "sentence_transformers", "transformers",
    "scipy", "statsmodels", "numpy", "rich", "mypy", "ruff", "cfnlint", "samtranslator",
    "werkzeug", "flask", "docker", "boto3", "s3transfer", "yaml", "_yaml",
}  # fmt: skip
#: pawl's laptop side (issue 25): it lives in pawl/ beside chalicelib/, and never ships.
LAPTOP = ("pawl/cli/", "pawl/local/", "pawl/demo/", "pawl/transport.py", "pawl/client.py",
          "pawl/evaluation", "pawl/pytest_plugin", "chalicelib/local/", "chalicelib/demo/",
          "chalicelib/cli", "chalicelib/client.py")  # fmt: skip
#: The zip at 137c666, the last commit before the laptop side left chalicelib/ (measured
#: with this module's `_figures`): deployment.zip bytes, unzipped bytes, app .py files, lines.
BEFORE = {"zipped": 28_210_627, "unzipped": 54_961_789, "app_py_files": 323, "app_lines": 43_815}
#: croniter is shipped: the trigger scheduler runs in Lambda (docs/triggers.md).


def _top_level(names: list[str]) -> set[str]:
    tops = set()
    for name in names:
        top = name.split("/", 1)[0]
        if not top.endswith((".dist-info", ".data")):
            tops.add(top.removesuffix(".py"))
    return tops


def test_the_zip_fits_lambda_and_ships_no_dev_package(packaged: Packaged) -> None:
    with zipfile.ZipFile(packaged.out / "deployment.zip") as archive:
        infos = archive.infolist()
        unzipped = sum(info.file_size for info in infos)
        tops = _top_level([info.filename for info in infos])
        names = {info.filename for info in infos}
    # The console renders in the API's Lambda: its templates, stylesheet and script ship with it.
    assert {
        "chalicelib/console/templates/base.html",
        "chalicelib/console/static/console.css",
        "chalicelib/console/static/run_progress.js",
    } <= names
    assert {"jinja2", "markupsafe"} <= tops
    assert unzipped < UNZIPPED_LIMIT_BYTES
    assert not tops & DEV_ONLY, tops & DEV_ONLY
    assert {"app", "chalicelib", "pynamodb", "pydantic", "pluggy", "httpx"} <= tops
    assert not any(top in {"tests", "bench", "plugins", "infra", "docs"} for top in tops)


def _figures(archive: zipfile.ZipFile, zipped: int) -> dict[str, int]:
    app = [
        info
        for info in archive.infolist()
        if info.filename == "app.py"
        or (info.filename.startswith(("chalicelib/", "pawl/")) and info.filename.endswith(".py"))
    ]
    return {
        "zipped": zipped,
        "unzipped": sum(info.file_size for info in archive.infolist()),
        "app_py_files": len(app),
        "app_lines": sum(archive.read(info).count(b"\n") for info in app),
    }


def test_the_zip_holds_the_lambda_part_of_pawl_and_no_laptop_module(
    packaged: Packaged, capsys: pytest.CaptureFixture[str]
) -> None:
    zip_path = packaged.out / "deployment.zip"
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        figures = _figures(archive, zip_path.stat().st_size)
    assert not [n for n in names if n.startswith(LAPTOP)], [
        n for n in names if n.startswith(LAPTOP)
    ]
    pawl_dir = PROJECT / "pawl"
    shipped = {f"pawl/{m}" for m in LAMBDA_PAWL_MODULES if (pawl_dir / m).is_file()}
    assert {n for n in names if n.startswith("pawl/")} == shipped
    info = dist_info_name(read_version(pawl_dir))
    assert {n for n in names if n.startswith("pawl-")} == {
        f"{info}/{part}" for part in ("METADATA", "WHEEL", "RECORD", "top_level.txt")
    }
    with capsys.disabled():
        print("\nLambda zip (before = 137c666, the laptop side still in chalicelib/):")
        for name, value in figures.items():
            print(f"  {name:>13}: {value:>12,} (before {BEFORE[name]:>12,})")
    assert figures["app_py_files"] < BEFORE["app_py_files"]


def test_every_handler_imports_from_the_zip_alone(packaged: Packaged, tmp_path: Path) -> None:
    """What Lambda does at cold start: import each handler with the zip and the runtime's boto3."""
    with zipfile.ZipFile(packaged.out / "deployment.zip") as archive:
        archive.extractall(tmp_path / "task")
    runtime = tmp_path / "runtime"  # the python3.x runtime provides boto3 (and s3transfer)
    runtime.mkdir()
    for module in (boto3, s3transfer):
        package = Path(module.__file__ or "").parent
        (runtime / package.name).symlink_to(package)
    handlers = [
        f["Properties"]["Handler"] for f in packaged.of_type("AWS::Serverless::Function").values()
    ]
    script = (
        "import importlib, sys\n"
        f"for handler in {handlers!r}:\n"
        "    module, _, name = handler.rpartition('.')\n"
        "    assert callable(getattr(importlib.import_module(module), name)), handler\n"
        # What a plugin does in Lambda: import pawl, its plugin API, and check its version.
        "import importlib.metadata, pawl\n"
        f"if {(PROJECT / 'pawl' / 'plugins.py').is_file()!r}:\n"
        "    import pawl.plugins\n"
        f"assert importlib.metadata.version('pawl') == {read_version(PROJECT / 'pawl')!r}\n"
        "laptop = sorted(m for m in sys.modules if m.startswith(('pawl.cli', 'pawl.local',"
        " 'pawl.demo', 'pawl.transport')))\n"
        "assert not laptop, laptop\n"
        f"leaked = sorted(m for m in sys.modules if m.split('.')[0] in {sorted(DEV_ONLY)!r}"
        " and m.split('.')[0] not in ('boto3', 's3transfer'))\n"
        "assert not leaked, leaked\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", script],
        cwd=tmp_path / "task",
        env={
            "PYTHONPATH": f"{tmp_path / 'task'}:{runtime}",
            "AWS_DEFAULT_REGION": "us-east-1",
            "PAWL_TABLE_PREFIX": "pawl-dev",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
