"""The layers of docs/architecture.md hold: import-linter checks the contract in pyproject.toml.

``[tool.importlinter]`` lists the layers top to bottom; a module may import only from the
layers below its own (siblings joined by ``|`` not even from each other). Every import
counts, lazy ones inside functions too; only ``if TYPE_CHECKING:`` imports are left out.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"


def _lint_imports(config: Path, source_root: Path) -> subprocess.CompletedProcess[str]:
    """Run import-linter in its own process: it configures logging (disabling the loggers
    that exist), which must not leak into the tests that read pawl's logs."""
    script = (
        "import sys\n"
        "from importlinter.cli import lint_imports\n"
        f"sys.exit(lint_imports(config_filename={str(config)!r}, no_cache=True, no_logo=True))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(source_root)}
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=source_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _layers() -> list[str]:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    (contract,) = (c for c in config["contracts"] if c["id"] == "layers")
    layers: list[str] = contract["layers"]
    return layers


def test_the_layer_contract_holds() -> None:
    done = _lint_imports(PYPROJECT, ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def _modules_of(package: Path, prefix: str) -> set[str]:
    """The direct modules and packages of ``package`` as dotted names."""
    return {
        f"{prefix}.{p.stem if p.is_file() else p.name}"
        for p in package.iterdir()
        if (p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py"))
        or (p / "__init__.py").is_file()
    }


def _code_modules() -> set[str]:
    """Every package and top-level module of both roots (``pawl.cli`` module by module)."""
    pawl = _modules_of(ROOT / "pawl", "pawl") - {"pawl.cli"}
    cli = _modules_of(ROOT / "pawl" / "cli", "pawl.cli")
    return _modules_of(ROOT / "chalicelib", "chalicelib") | pawl | cli


def test_every_package_and_module_sits_in_a_layer() -> None:
    """A new package or top-level module must be placed in the layers, not escape them."""
    placed = {
        name.strip()
        for layer in _layers()
        for name in layer.replace("|", ":").split(":")
        if name.strip()
    }
    code = _code_modules()
    assert sorted(code - placed) == []
    assert sorted(placed - code) == []


def test_a_layer_breach_is_reported(tmp_path: Path) -> None:
    """The contract can fail: a lower layer importing a higher one breaks it."""
    package = tmp_path / "layered"
    (package / "low").mkdir(parents=True)
    (package / "high").mkdir()
    (package / "__init__.py").write_text("")
    (package / "high" / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("def f():\n    from layered import high\n")
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["layered"]\n\n'
        '[[tool.importlinter.contracts]]\nid = "l"\nname = "l"\ntype = "layers"\n'
        'layers = ["layered.high", "layered.low"]\n'
    )
    done = _lint_imports(config, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "layered.low is not allowed to import layered.high" in done.stdout


def test_the_service_may_not_import_pawl(tmp_path: Path) -> None:
    """The `service-imports-no-pawl` contract as pyproject states it fails on a breach: any
    module of chalicelib importing anything of pawl (a lazy import too)."""
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    (contract,) = (c for c in config["contracts"] if c["id"] == "service-imports-no-pawl")
    assert (contract["source_modules"], contract["forbidden_modules"]) == (["chalicelib"], ["pawl"])
    for package, body in (("chalicelib", "def f():\n    from pawl import plugins\n"), ("pawl", "")):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (
            tmp_path / package / ("scoring.py" if package == "chalicelib" else "plugins.py")
        ).write_text(body)
    lines = [f"{key} = {value!r}".replace("'", '"') for key, value in contract.items()]
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_packages = ["chalicelib", "pawl"]\n\n'
        "[[tool.importlinter.contracts]]\n" + "\n".join(lines) + "\n"
    )
    done = _lint_imports(tmp_path / "pyproject.toml", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "chalicelib.scoring -> pawl.plugins" in done.stdout


def test_app_py_imports_nothing_from_pawl() -> None:
    """app.py is Chalice's entry module, outside the root packages import-linter reads."""
    tree = ast.parse((ROOT / "app.py").read_text())
    names = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert not [name for name in names if name.split(".")[0] == "pawl"]
