"""A bearer token that names no key is 401 with the envelope, whatever its shape (never 500:
``pawl..`` used to reach the store as an empty key id). Real HTTP over moto."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from pawl.local.gateway import GatewayServer
from tests.support.http_front import app_over_http, project_over_http

#: Shapes a token can take that name no key: empty parts, wrong kinds of id, extra dots,
#: characters no minted token has, lengths far past a real one, a near miss of a real key.
MALFORMED = [
    "pawl..",
    "pawl.",
    "pawl...",
    "pawl....",
    "pawl.key_.secret",
    "pawl.key_ABCDEFGHIJKLMNOP.",
    "pawl..secret",
    "pawl.dset_ABCDEFGHIJKLMNOP.secret",
    "pawl.key_ABCDEFGHIJKLMNOP.sec.ret",
    "pawl.key_ABC/DEF.secret",
    "pawl.key_ABCDEFGHIJKLMNOP.secret with space",
    "pawl.key_\u00e9\u00e9.secret",
    "pawl.key_" + "A" * 65 + ".secret",
    "pawl.key_ABCDEFGHIJKLMNOP." + "s" * 5000,
    "pawl." + "." * 300,
    "PAWL.key_ABCDEFGHIJKLMNOP.secret",
    "pawl.key_ABCDEFGHIJKLMNOP.secret",  # well formed, unknown
    "key_ABCDEFGHIJKLMNOP",
    ".",
    "%00",
]


@pytest.fixture(scope="module")
def gateway() -> Iterator[GatewayServer]:
    with app_over_http() as server:
        yield server


def _assert_unauthorized(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    error = response.json()["error"]
    assert error["code"] == "UNAUTHORIZED"
    assert isinstance(error["message"], str) and isinstance(error["meta"], dict)


@pytest.mark.parametrize("token", MALFORMED)
def test_a_token_that_names_no_key_is_401(gateway: GatewayServer, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}".encode("latin-1")}
    _assert_unauthorized(httpx.get(f"{gateway.url}/api/v1/datasets", headers=headers))


def test_a_real_keys_near_misses_are_401_and_the_key_still_works(gateway: GatewayServer) -> None:
    _, key = project_over_http(gateway.url, "bearer-shapes")
    scheme, key_id, secret = key.split(".")
    for near in [
        f"{scheme}.{key_id}.",
        f"{scheme}..{secret}",
        f"{scheme}.{key_id}.{secret}x",
        f"{scheme}.{key_id}.{secret[:-1]}",
        f"{scheme}.{key_id}.{secret}.",
        f"{scheme}.{key_id}x.{secret}",
    ]:
        _assert_unauthorized(
            httpx.get(f"{gateway.url}/api/v1/datasets", headers={"Authorization": f"Bearer {near}"})
        )
    ok = httpx.get(f"{gateway.url}/api/v1/datasets", headers={"Authorization": f"Bearer {key}"})
    assert ok.status_code == 200, ok.text
