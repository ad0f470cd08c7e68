"""Conditional creates in batches (``store.conditional_puts``), as DynamoDB answers them:
an existing key is that statement's ``DuplicateItem``, the others are created, and nothing
is overwritten (moto answers through ``pawl/local/moto_patches.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.store import conditional_puts
from chalicelib.store.base import connection
from chalicelib.store.models import ResultModel
from tests.support.refusals import REFUSED_BY_THE_TEST, refusal


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

    def refuse_second_call(params: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        # The calls of 25 go side by side, so "second" is the one holding items 25-29, not
        # the second to arrive.
        body = params["body"]
        if "k25#01" not in (body.decode() if isinstance(body, bytes) else body):
            return None
        return refusal(REFUSED_BY_THE_TEST)

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
