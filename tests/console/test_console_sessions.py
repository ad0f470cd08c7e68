"""Server-side session revocation: sign-out ends a session for every copy of its cookie;
"sign out everywhere" ends every session of the key; the table exists where pawl runs."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3

from chalicelib import clock
from chalicelib.console import session
from chalicelib.infra.__main__ import stage_policy
from chalicelib.infra.merge import merge_template
from chalicelib.infra.stage import load_stage
from chalicelib.infra.template import Options
from chalicelib.settings import get_settings
from chalicelib.store.models import ConsoleRevocationModel
from tests.conftest import ADMIN_KEY
from tests.support.console import Browser

SIGN_IN_FORM = 'action="/console/sign-in"'
SIGNED_IN = 'action="/console/sign-out"'


def signed_in(api: Any, key: str) -> Browser:
    browser = Browser(api.client)
    browser.sign_in(key)
    assert SIGNED_IN in browser.get("/console").text
    return browser


def copy_of(browser: Browser) -> Browser:
    """Another browser holding a copy of this one's session cookie (a stolen cookie)."""
    return Browser(browser.client, cookies=dict(browser.cookies))


def test_a_copied_cookie_no_longer_works_after_sign_out(api: Any, project_key: str) -> None:
    browser = signed_in(api, project_key)
    other_session = signed_in(api, project_key)  # the same key, signed in elsewhere
    stolen = copy_of(browser)
    assert SIGNED_IN in stolen.get("/console").text  # the copy works while the session lives

    out = browser.post("/console/sign-out", {"csrf": browser.get("/console").csrf})
    assert (out.status, out.location) == (303, "/console")

    assert SIGN_IN_FORM in stolen.get("/console").text
    page = stolen.get("/console/evals/eval_0000000000000000")
    assert (page.status, page.location) == (303, "/console")  # to the sign-in page
    assert session.SESSION_COOKIE not in stolen.cookies  # and the copy is cleared
    assert SIGNED_IN in other_session.get("/console").text  # other sessions carry on


def test_a_signed_out_copy_cannot_post_either(api: Any, project_key: str) -> None:
    browser = signed_in(api, project_key)
    stolen = copy_of(browser)
    token = browser.get("/console").csrf
    browser.post("/console/sign-out", {"csrf": token})
    page = stolen.post("/console/sign-out-everywhere", {"csrf": token})
    assert (page.status, page.location) == (303, "/console")


def test_sign_out_everywhere_ends_every_session_of_the_key_only(api: Any, project_key: str) -> None:
    first, second = signed_in(api, project_key), signed_in(api, project_key)
    stolen = copy_of(second)
    admin = signed_in(api, ADMIN_KEY)

    out = first.post("/console/sign-out-everywhere", {"csrf": first.get("/console").csrf})
    assert (out.status, out.location) == (303, "/console")
    for browser in (first, second, stolen):
        assert SIGN_IN_FORM in browser.get("/console").text
    assert SIGNED_IN in admin.get("/console").text  # another key's session is untouched
    assert SIGNED_IN in signed_in(api, project_key).get("/console").text  # a new sign-in works


def test_sign_out_everywhere_needs_its_csrf_token(api: Any, project_key: str) -> None:
    browser = signed_in(api, project_key)
    for fields in [{}, {"csrf": "hmac1.bad"}]:
        assert browser.post("/console/sign-out-everywhere", fields).status == 403
        assert SIGNED_IN in browser.get("/console").text
    assert ConsoleRevocationModel.count() == 0  # nothing was written


def test_a_revocation_expires_with_the_idle_window(api: Any, project_key: str) -> None:
    """The row lives as long as a cookie of the session could (12 h idle), then TTL takes it."""
    browser = signed_in(api, project_key)
    before = clock.now()
    browser.post("/console/sign-out", {"csrf": browser.get("/console").csrf})
    (row,) = ConsoleRevocationModel.scan()
    assert row.key.startswith("session#") and row.revoked_before is None
    lifetime = row.expires_at - before
    assert timedelta(seconds=session.IDLE_SECONDS) <= lifetime
    assert lifetime < timedelta(seconds=session.IDLE_SECONDS + 120)
    assert project_key not in row.key  # the row names the session, never the key


def test_bootstrap_creates_the_revocation_table_with_its_ttl(aws_env: None) -> None:
    name = get_settings().table_name("console-revocations")
    described = boto3.client("dynamodb").describe_time_to_live(TableName=name)
    assert described["TimeToLiveDescription"] == {
        "TimeToLiveStatus": "ENABLED",
        "AttributeName": "expires_at",
    }


def test_the_deployed_template_has_the_table_and_the_functions_may_use_it(app: Any) -> None:
    stage = load_stage("dev")
    resources = merge_template(stage, app, Options())["Resources"]
    name = stage.settings.table_name("console-revocations")
    (table,) = [
        r["Properties"]
        for r in resources.values()
        if r.get("Type") == "AWS::DynamoDB::Table" and r["Properties"]["TableName"] == name
    ]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["KeySchema"] == [{"AttributeName": "key", "KeyType": "HASH"}]
    assert name in json.dumps(stage_policy(stage, Options()))
