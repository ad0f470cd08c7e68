"""A table an older pawl made (a local state restored from a snapshot) gets the indexes
the models declare since, with the rows already in it indexed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from chalicelib import aws
from chalicelib.bootstrap import ensure_tables
from chalicelib.infra.definitions import table_specs
from chalicelib.store.models import GenerationModel
from tests.conftest import reset_process_state


@pytest.fixture
def stand_in() -> Iterator[None]:
    with mock_aws():
        reset_process_state()
        yield
    reset_process_state()


def test_an_existing_table_gains_its_missing_indexes(stand_in: None) -> None:
    [spec] = [s for s in table_specs() if s.short_name == "generations"]
    client = aws.client("dynamodb")
    keys = {k["AttributeName"] for k in spec.key_schema}
    client.create_table(  # the generations table as it was: no by_project, no by_agent
        TableName=spec.name,
        KeySchema=spec.key_schema,
        AttributeDefinitions=[a for a in spec.attribute_definitions if a["AttributeName"] in keys],
        BillingMode="PAY_PER_REQUEST",
    )
    row = {
        "id": {"S": "gen_0123456789abcdef"},
        "project_id": {"S": "proj_0123456789abcdef"},
        "agent_id": {"S": "agt_0123456789abcdef"},
        "agent_version": {"N": "1"},
        "status": {"S": "completed"},
        "created_at": {"S": "2026-01-01T00:00:00.000Z"},
    }
    client.put_item(TableName=spec.name, Item=row)

    ensure_tables()

    table = client.describe_table(TableName=spec.name)["Table"]
    assert {i["IndexName"] for i in table["GlobalSecondaryIndexes"]} == {"by_agent", "by_project"}
    found = list(GenerationModel.by_agent.query("agt_0123456789abcdef"))
    assert [g.id for g in found] == ["gen_0123456789abcdef"]
    assert ensure_tables() == []  # converged: a second start changes nothing
