"""An AWS error never reaches a tenant: a failed Lambda invocation (agents and tools)
answers a fixed sentence and a reference id; AWS's text, with its ARN and account id, is in
pawl's log under that reference. Uses moto's real "Function not found" error."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from moto import mock_aws

from chalicelib import lambda_invoke, wiring
from chalicelib.agents.contract import AdapterFailed
from chalicelib.domain.tools import Tool
from chalicelib.tools import call_tool
from chalicelib.tools.errors import ToolFailed
from tests.integration.test_agent_adapters import agent_request, call

ACCOUNT = "123456789012"  # moto's account
REFERENCE = re.compile(r"reference (ref_[A-Za-z0-9]{16})")


def _assert_safe_for_a_tenant(message: str) -> str:
    assert "arn:" not in message and ACCOUNT not in message, message
    assert "Function not found" not in message, message
    found = REFERENCE.search(message)
    assert found, message
    return found.group(1)


def _assert_logged(caplog: pytest.LogCaptureFixture, reference: str) -> None:
    logged = [r.getMessage() for r in caplog.records if reference in r.getMessage()]
    assert len(logged) == 1, logged
    assert "ResourceNotFoundException" in logged[0] and f":{ACCOUNT}:" in logged[0]


@pytest.fixture
def moto_lambda() -> Any:
    with mock_aws():
        wiring.drop_aws_clients()
        yield
    wiring.drop_aws_clients()


def test_a_missing_function_agent_error_names_no_aws_identifier(
    moto_lambda: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pawl.lambda")
    with pytest.raises(AdapterFailed) as failed:
        call("lambda", {"function_name": "absent-fn"}, agent_request())
    _assert_logged(caplog, _assert_safe_for_a_tenant(str(failed.value)))


def test_a_missing_function_tool_error_names_no_aws_identifier(
    moto_lambda: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pawl.lambda")
    tool = Tool(
        id="tool_l",
        project_id="proj_l",
        name="l",
        type="lambda",
        config={"function_name": "absent-grader"},
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z",
    )
    with pytest.raises(ToolFailed) as failed:
        call_tool(tool, {"output": "hi"})
    _assert_logged(caplog, _assert_safe_for_a_tenant(str(failed.value)))


def test_a_generation_through_the_api_shows_the_reference_only(
    api: Any, project: dict[str, Any], project_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pawl.lambda")
    tenant = api.as_key(project_key)
    agent = tenant.post(
        "/api/v1/agents",
        {"name": "l", "type": "lambda", "config": {"function_name": "absent-fn"}},
    )
    assert agent.status == 201, agent
    generated = tenant.post(
        f"/api/v1/agents/{agent.json['id']}/generate",
        {"input": [{"role": "user", "content": "hi"}]},
    )
    assert generated.status == 201, generated
    assert generated.json["status"] == "failed"
    text = generated.raw.decode()
    assert "arn:" not in text and ACCOUNT not in text, text
    _assert_logged(caplog, _assert_safe_for_a_tenant(generated.json["error"]["message"]))


def test_a_functions_own_error_text_is_scrubbed_of_arns_and_account_ids() -> None:
    text = (
        "AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/pawl-api/x is not "
        "authorized on arn:aws-cn:lambda:cn-north-1:210987654321:function:f (account "
        "123456789012); order 1234567890123 stays"
    )
    assert lambda_invoke.scrub_aws_identifiers(text) == (
        "AccessDeniedException: User: <arn> is not authorized on <arn> (account <account>); "
        "order 1234567890123 stays"
    )
