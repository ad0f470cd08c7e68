"""The part of the public ``pawl`` package that ships to Lambda, as an installed distribution.

Plugins run in Lambda and import ``pawl`` (``from pawl.plugins import scorer``), so the
deployment zip must hold ``pawl``; but only its Lambda-safe modules, never the laptop side
(``pawl.cli``, ``pawl.local``, ``pawl.demo``, ``pawl.transport``). A plugin may also declare
``pawl>=X,<Y``, so the zip carries ``pawl-<version>.dist-info`` (``importlib.metadata``
answers) and pip, which Chalice runs over ``requirements.txt``, finds this same ``pawl`` as a
wheel (``requirements.txt`` names :data:`WHEEL_DIR` as a find-links directory) instead of the
unrelated ``pawl`` a public index holds.

These files are read as files, never imported: ``chalicelib`` imports nothing from ``pawl``.
``docs/decisions.md`` ("The Lambda package holds what Lambda runs") says why the zip is
finished after ``chalice package`` rather than through Chalice's ``vendor/`` directory.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import os
import re
import zipfile
from pathlib import Path

#: The Lambda-safe part of ``pawl``, relative to the package directory: the lazy face, its
#: version, the plugin API and the typing marker. Nothing else from ``pawl/`` ships. A file
#: of this list that does not exist (yet) is left out, except the two a distribution needs.
LAMBDA_PAWL_MODULES = ("__init__.py", "_version.py", "plugins.py", "py.typed")
REQUIRED_MODULES = ("__init__.py", "_version.py")
#: Where the package step writes the wheel pip may resolve a plugin's ``pawl`` requirement to
#: (relative to the project; ``requirements.txt`` names it, and git ignores it).
WHEEL_DIR = Path(".chalice") / "wheels"
#: PEP 440 public versions (what a plugin's ``pawl>=X,<Y`` is compared with).
_VERSION = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")
#: Fixed entry times: the same sources make the same wheel, byte for byte.
_EPOCH = (1980, 1, 1, 0, 0, 0)


class LambdaPawlError(Exception):
    """The sources cannot make the Lambda ``pawl``, or a requirement pulled a foreign one."""


def read_version(pawl_dir: Path) -> str:
    """``__version__`` of ``pawl/_version.py``, read without importing it."""
    source = pawl_dir / "_version.py"
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    except OSError as exc:
        raise LambdaPawlError(f"cannot read {source}: {exc.strerror}") from None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            version: str = node.value.value
            if not _VERSION.fullmatch(version):
                raise LambdaPawlError(f"{source}: {version!r} is not a PEP 440 version")
            return version
    raise LambdaPawlError(f'{source} has no `__version__ = "X.Y.Z"` line')


def package_files(pawl_dir: Path) -> dict[str, bytes]:
    """Archive path -> content of the :data:`LAMBDA_PAWL_MODULES` that exist."""
    missing = [name for name in REQUIRED_MODULES if not (pawl_dir / name).is_file()]
    if missing:
        raise LambdaPawlError(f"{pawl_dir} lacks {', '.join(missing)}")
    return {
        f"pawl/{name}": (pawl_dir / name).read_bytes()
        for name in LAMBDA_PAWL_MODULES
        if (pawl_dir / name).is_file()
    }


def dist_info_name(version: str) -> str:
    return f"pawl-{version}.dist-info"


def _record_line(path: str, content: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
    return f"{path},sha256={digest.decode()},{len(content)}"


def distribution_files(files: dict[str, bytes], version: str) -> dict[str, bytes]:
    """``files`` plus the ``.dist-info`` that makes them the installed distribution ``pawl``
    (no ``Requires-Dist``: what the modules import ships as app code or requirements)."""
    info = dist_info_name(version)
    meta = {
        f"{info}/METADATA": (
            "Metadata-Version: 2.1\nName: pawl\n"
            f"Version: {version}\nSummary: pawl's plugin API, as deployed to Lambda\n"
            "Requires-Python: >=3.11\n"
        ).encode(),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: chalicelib.infra\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        f"{info}/top_level.txt": b"pawl\n",
    }
    every = {**files, **meta}
    record = [_record_line(path, content) for path, content in sorted(every.items())]
    every[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    return every


def lambda_distribution(project_dir: Path) -> tuple[str, dict[str, bytes]]:
    """The version and every file of the Lambda ``pawl`` made from ``project_dir/pawl``."""
    pawl_dir = project_dir / "pawl"
    version = read_version(pawl_dir)
    return version, distribution_files(package_files(pawl_dir), version)


def _write_entries(archive: zipfile.ZipFile, files: dict[str, bytes]) -> None:
    for path, content in sorted(files.items()):
        entry = zipfile.ZipInfo(path, date_time=_EPOCH)
        entry.external_attr = 0o644 << 16
        entry.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(entry, content)


def build_wheel(project_dir: Path, dest: Path) -> Path:
    """Write ``pawl-<version>-py3-none-any.whl`` (the Lambda part only) into ``dest``,
    replacing any older wheel of it there."""
    version, files = lambda_distribution(project_dir)
    dest.mkdir(parents=True, exist_ok=True)
    for stale in dest.glob("pawl-*.whl"):
        stale.unlink()
    wheel = dest / f"pawl-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        _write_entries(archive, files)
    return wheel


def _is_pawl_entry(name: str) -> bool:
    top = name.split("/", 1)[0]
    return top == "pawl" or (top.startswith("pawl-") and top.endswith(".dist-info"))


def foreign_versions(names: list[str], version: str) -> set[str]:
    """Versions of a ``pawl-*.dist-info`` among ``names`` other than ``version``: another
    project's ``pawl`` that pip fetched from an index for a requirement."""
    found = {
        top.removeprefix("pawl-").removesuffix(".dist-info")
        for top in (name.split("/", 1)[0] for name in names)
        if top.startswith("pawl-") and top.endswith(".dist-info")
    }
    return found - {version}


def drop_stale_caches(project_dir: Path, version: str) -> list[Path]:
    """Delete Chalice's cached zips that hold another ``pawl`` version. Chalice keys its cache
    on ``requirements.txt`` and the app's files, not on the wheel; a cached zip resolved
    against an older ``pawl`` would skip checking the plugins' ``pawl>=X,<Y`` anew."""
    dropped = []
    for cached in sorted((project_dir / ".chalice" / "deployments").glob("*.zip")):
        with zipfile.ZipFile(cached) as archive:
            stale = foreign_versions(archive.namelist(), version)
        if stale:
            cached.unlink()
            dropped.append(cached)
    return dropped


def add_to_zip(deployment: Path, project_dir: Path) -> str:
    """Put the Lambda ``pawl`` in ``deployment`` (Chalice's zip), in place of any ``pawl``
    pip installed there for a plugin's requirement; answers the version shipped."""
    version, files = lambda_distribution(project_dir)
    with zipfile.ZipFile(deployment) as archive:
        names = archive.namelist()
    foreign = foreign_versions(names, version)
    if foreign:
        raise LambdaPawlError(
            f"a requirement pulled pawl {', '.join(sorted(foreign))} from an index, not this "
            f"deployment's pawl {version} (an index's `pawl` is another project): "
            "loosen the plugin's `pawl` requirement so it admits this version"
        )
    if not any(_is_pawl_entry(name) for name in names):
        with zipfile.ZipFile(deployment, "a") as archive:
            _write_entries(archive, files)
        return version
    rewritten = deployment.with_suffix(".tmp.zip")
    with zipfile.ZipFile(deployment) as source, zipfile.ZipFile(rewritten, "w") as target:
        for entry in source.infolist():
            if not _is_pawl_entry(entry.filename):
                target.writestr(entry, source.read(entry), compress_type=entry.compress_type)
        _write_entries(target, files)
    os.replace(rewritten, deployment)
    return version
