"""Conditional creates in batches (``store.conditional_puts``), as DynamoDB answers them:
an existing key is that statement's ``DuplicateItem``, the others are created, and nothing
is overwritten (moto answers through ``pawl/local/moto_patches.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.store import conditional_puts
from chalicelib.store.base import connection
from chalicelib.store.models import ResultModel


def _item(key: str, output: str) -> dict[str, Any]:
    return {
        "run_id": {"S": "evrun_conditional"},
        "result_key": {"S": key},
        "output": {"S": output},
        "scores": {"S": "[]"},
    }


def _table() -> str:
    return str(ResultModel._get_connection().table_name)


def test_existing_keys_are_refused_and_kept_the_rest_created(aws_env: None) -> None:
    first = [_item(f"dsit_{i:02d}#01", "first") for i in range(30)]  # two calls of 25 + 5
    assert conditional_puts.insert_many(_table(), first) == [True] * 30
    again = [_item(f"dsit_{i:02d}#01", "second") for i in range(28, 33)]
    assert conditional_puts.insert_many(_table(), again) == [False, False, True, True, True]
    rows = {m.result_key: m.output for m in ResultModel.query("evrun_conditional")}
    assert len(rows) == 33
    assert rows["dsit_29#01"] == "first"  # a duplicate overwrites nothing
    assert rows["dsit_31#01"] == "second"


def test_a_statement_refused_for_another_reason_raises_with_what_was_created(
    aws_env: None,
) -> None:
    from botocore.awsrequest import AWSResponse

    def refuse_second_call(**_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        calls.append(1)
        if len(calls) != 2:
            return None
        error = {"Code": "ValidationException", "Message": "refused by the test"}
        meta = {"HTTPStatusCode": 400, "HTTPHeaders": {}}
        return AWSResponse("https://dynamodb.local/", 400, {}, None), {
            "Error": error,
            "ResponseMetadata": meta,
        }

    calls: list[int] = []
    events = connection().client.meta.events
    events.register_first("before-call.dynamodb.BatchExecuteStatement", refuse_second_call)
    try:
        with pytest.raises(conditional_puts.InsertFailed) as refused:
            conditional_puts.insert_many(_table(), [_item(f"k{i}#01", "x") for i in range(30)])
    finally:
        events.unregister("before-call.dynamodb.BatchExecuteStatement", refuse_second_call)
    assert len(list(ResultModel.query("evrun_conditional"))) == 25
    assert refused.value.created == list(range(25))


def test_the_statement_names_every_attribute_as_a_parameter() -> None:
    statement = conditional_puts.statement("t", {"a": {"S": "x"}, "b": {"N": "1"}})
    assert statement["Statement"] == "INSERT INTO \"t\" VALUE {'a': ?, 'b': ?}"
    assert statement["Parameters"] == [{"S": "x"}, {"N": "1"}]
