"""The Lambda zip holds only requirements.txt packages, fits Lambda, imports without dev tools."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import boto3
import s3transfer

from tests.infra.conftest import Packaged

#: Lambda's limit on a function's unzipped code and layers.
UNZIPPED_LIMIT_BYTES = 250 * 1024 * 1024
#: Installed here for development, tests or the local runtime; never shipped.
DEV_ONLY = {
    "moto", "pytest", "_pytest", "xdist", "torch", "sentence_transformers", "transformers",
    "scipy", "statsmodels", "numpy", "rich", "mypy", "ruff", "cfnlint", "samtranslator",
    "werkzeug", "flask", "docker", "boto3", "s3transfer",
}  # fmt: skip
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
