"""The layers of docs/architecture.md hold: import-linter checks the contract in pyproject.toml.

``[tool.importlinter]`` lists the layers top to bottom; a module may import only from the
layers below its own (siblings joined by ``|`` not even from each other). Every import
counts, lazy ones inside functions too; only ``if TYPE_CHECKING:`` imports are left out.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"


def _layers() -> list[str]:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    (contract,) = (c for c in config["contracts"] if c["id"] == "layers")
    layers: list[str] = contract["layers"]
    return layers


def test_the_layer_contract_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True) == 0


def test_every_package_and_module_of_chalicelib_sits_in_a_layer() -> None:
    """A new package or top-level module must be placed in the layers, not escape them."""
    placed = {
        name.strip()
        for layer in _layers()
        for name in layer.replace("|", ":").split(":")
        if name.strip()
    }
    code = {
        f"chalicelib.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / "chalicelib").iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()
    }
    assert sorted(code - placed) == []
    assert sorted(placed - code) == []


def test_a_layer_breach_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 1
