"""Every third-party private member pawl overrides is guarded, and nothing else is.

Chalice: no subclass at all (the envelope goes through routing.endpoint and a public
middleware). PynamoDB: ``PawlModel._get_connection`` is the one private override, and the
store refuses any PynamoDB but the release it was written for. botocore:
``store/direct_json.py`` swaps a DynamoDB client's serializer and parser factory only when
they are the exact classes it was written for (``tests/unit/test_direct_json.py``
holds it to botocore's own bytes and to leaving any other client alone).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
from pynamodb.models import Model

from chalicelib.store import base

ROOT = Path(__file__).resolve().parents[2]


def _classes() -> list[tuple[Path, ast.ClassDef]]:
    found = []
    for path in sorted((ROOT / "chalicelib").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found.append((path, node))
    return found


def test_nothing_subclasses_chalice_or_its_rest_handler() -> None:
    chalice_bases = {"Chalice", "RestAPIEventHandler"}
    subclasses = [
        f"{path.relative_to(ROOT)}:{node.name}"
        for path, node in _classes()
        if any(ast.unparse(b).rsplit(".", 1)[-1] in chalice_bases for b in node.bases)
    ]
    assert subclasses == []


def test_the_one_private_pynamodb_override_is_get_connection() -> None:
    [pawl_model] = [
        node for path, node in _classes() if path.name == "base.py" and node.name == "PawlModel"
    ]
    defined = {n.name for n in pawl_model.body if isinstance(n, ast.FunctionDef)}
    private = {n for n in defined if n.startswith("_") and not n.startswith("__")}
    assert {n for n in private if hasattr(Model, n)} == {"_get_connection"}


def test_the_supported_pynamodb_is_the_pinned_one() -> None:
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"pynamodb=={base.SUPPORTED_PYNAMODB}" in pins


def test_another_pynamodb_is_refused() -> None:
    base.check_pynamodb()  # the installed one passes
    with pytest.raises(RuntimeError, match=r"pynamodb 6\.2\.0 is installed"):
        base.check_pynamodb("6.2.0")
