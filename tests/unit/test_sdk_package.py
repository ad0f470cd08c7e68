"""``import pawl``: the public names, lazily imported; the version; errors and configuration.

These run without a server: a refusal is shaped by httpx.MockTransport (the envelope as the
API writes it), and the import checks run in a fresh interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

import pawl
from pawl import _config, _version
from pawl._base import OMIT, body_of, query_of, segment

ROOT = Path(__file__).resolve().parents[2]


#: Public names whose module another part of issue 25 adds (helper E: pawl.evaluation;
#: helper F: pawl.plugins). Their check is skipped while the module is absent; once both
#: have landed this set can go (the integrator removes it).
@pytest.mark.parametrize("name", pawl.__all__)
def test_every_public_name_resolves(name: str) -> None:
    module = pawl._MODULE_OF.get(name, "pawl._version")
    value = getattr(pawl, name)
    assert value is getattr(importlib.import_module(module), name)
    assert name in dir(pawl)


def test_every_mapped_name_is_public() -> None:
    assert set(pawl._MODULE_OF) | {"__version__"} == set(pawl.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Clinet'"):
        _ = pawl.Clinet  # type: ignore[attr-defined]


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
        check=True,
    )
    return done.stdout.strip()


def test_import_pawl_imports_nothing_else() -> None:
    loaded = _fresh(
        "import sys, pawl; print(sorted(m for m in sys.modules "
        "if m.startswith(('pawl', 'httpx', 'chalicelib', 'pydantic'))))"
    )
    assert loaded == "['pawl', 'pawl._version']"


def test_the_client_imports_no_part_of_the_service() -> None:
    loaded = _fresh(
        "import sys, pawl; pawl.Client; pawl.AsyncClient; print(sorted(sys.modules))"
    ).strip("[]")
    modules = {name.strip(" '") for name in loaded.split(",")}
    service = ("chalicelib", "pawl.cli", "pawl.local", "pawl.demo", "pawl.transport", "boto3")
    assert "pawl.client" in modules
    assert [m for m in modules for root in service if m == root or m.startswith(root + ".")] == []


def test_a_partial_installation_says_what_is_missing(tmp_path: Path) -> None:
    """The Lambda package holds pawl/__init__.py and pawl/_version.py but no client."""
    package = tmp_path / "pawl"
    package.mkdir()
    for name in ("__init__.py", "_version.py"):
        (package / name).write_text((ROOT / "pawl" / name).read_text())
    done = subprocess.run(
        [
            sys.executable,
            "-S",  # no site-packages: an editable install's finder would map pawl.client back
            "-c",
            "import pawl; print(pawl.__version__); print(dir(pawl)); from pawl import Client",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    version, names = done.stdout.splitlines()
    assert version == _version.__version__
    assert "'__version__'" in names and "Client" not in names and "ApiError" not in names
    assert "ImportError: pawl.Client lives in pawl.client, which this installation" in done.stderr


def test_the_version_is_the_package_metadatas() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "pawl._version.__version__"}
    assert pawl.__version__ == _version.__version__
    assert all(part.isdigit() for part in pawl.__version__.split("."))


def test_py_typed_ships_with_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["package-data"]["pawl"] == ["py.typed"]
    assert (ROOT / "pawl" / "py.typed").is_file()


# --- errors ---------------------------------------------------------------------------------


def _refusing(status: int, body: Any) -> pawl.Client:
    def answer(request: httpx.Request) -> httpx.Response:
        if isinstance(body, str):
            return httpx.Response(status, text=body)
        return httpx.Response(status, json=body)

    return pawl.Client("http://pawl.test", "k", transport=httpx.MockTransport(answer))


def _envelope(code: str, message: str, **meta: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "meta": meta}}


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, pawl.BadRequestError),
        (401, pawl.AuthenticationError),
        (403, pawl.PermissionDeniedError),
        (404, pawl.NotFoundError),
        (409, pawl.ConflictError),
        (422, pawl.BadRequestError),
        (429, pawl.RateLimitError),
        (500, pawl.ApiError),
        (503, pawl.ApiError),
    ],
)
def test_each_status_raises_its_error(status: int, kind: type[pawl.ApiError]) -> None:
    client = _refusing(status, _envelope("SOME_CODE", "said no", field="name"))
    with client, pytest.raises(kind) as caught:
        client.list_evals()
    error = caught.value
    assert type(error) is kind
    assert (error.status, error.code, error.message, error.field) == (
        status,
        "SOME_CODE",
        "said no",
        "name",
    )
    assert str(error) == f"GET /api/v1/evals -> {status} SOME_CODE: said no"


def test_a_refusal_without_the_envelope_still_says_what_came_back() -> None:
    with _refusing(502, "<html>bad gateway</html>") as client, pytest.raises(pawl.ApiError) as e:
        client.get_health()
    assert (e.value.code, e.value.message, e.value.field) == (
        "HTTP_ERROR",
        "<html>bad gateway</html>",
        None,
    )


def test_an_answer_that_is_not_an_object_is_refused() -> None:
    with _refusing(200, [1, 2]) as client, pytest.raises(pawl.ApiError, match="JSON object"):
        client.get_eval("eval_1")


def test_the_cli_client_raises_the_same_classes() -> None:
    from pawl import transport

    assert transport.ApiError is pawl.ApiError
    assert transport.ServerUnreachable is pawl.ServerUnreachable
    assert transport.DEFAULT_SERVER == _config.DEFAULT_SERVER


# --- what a request is made of --------------------------------------------------------------


def test_a_request_carries_the_key_the_query_and_only_the_given_fields() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"id": "evrun_1"})

    transport = httpx.MockTransport(answer)
    with pawl.Client("http://pawl.test/base/", "secret", transport=transport) as client:
        client.start_eval_run("eval 1", wait=True, baseline_run_id=None)
        client.list_eval_runs("eval_1", limit=5, view="summary")
        client.delete_agent("agt_1", force=True)
    start, listing, delete = seen
    assert start.url.raw_path == b"/base/api/v1/evals/eval%201/runs"
    assert start.headers["Authorization"] == "Bearer secret"
    assert start.headers["User-Agent"] == f"pawl-python/{pawl.__version__}"
    # An explicit None is sent (it clears); a field not given is not.
    assert json.loads(start.content) == {"wait": True, "baseline_run_id": None}
    assert dict(listing.url.params) == {"limit": "5", "view": "summary"}
    assert dict(delete.url.params) == {"force": "true"}


def test_paginate_refuses_an_operation_that_does_not_page() -> None:
    client = pawl.Client("http://pawl.test")
    with client, pytest.raises(ValueError, match="'get_eval' is not an operation that pages"):
        client.paginate("get_eval")


def test_helpers_that_build_requests() -> None:
    assert segment("a/b c") == "a%2Fb%20c"
    assert body_of({"a": 1, "b": 2}, {"b": 3, "c": OMIT, "d": None}) == {"a": 1, "b": 3, "d": None}
    assert query_of({"a": None, "b": False, "c": 2}) == {"b": "false", "c": 2}
    assert not OMIT and repr(OMIT) == "OMIT"


def test_configuration_from_arguments_then_the_environment() -> None:
    env = {"PAWL_SERVER": "https://pawl.example/", "PAWL_API_KEY": "from-env"}
    assert _config.server_of(None, env) == "https://pawl.example"
    assert _config.server_of("http://other:1", env) == "http://other:1"
    assert _config.server_of(None, {}) == "http://127.0.0.1:8000"
    assert _config.api_key_of(None, env) == "from-env"
    assert _config.api_key_of("given", env) == "given"
    assert _config.api_key_of(None, {}) is None
    with pytest.raises(ValueError, match="PAWL_SERVER must be an http:// or https:// URL"):
        _config.server_of(None, {"PAWL_SERVER": "pawl.example"})
    with pytest.raises(ValueError, match="base_url must be"):
        pawl.Client("ftp://x")
