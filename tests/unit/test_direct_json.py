"""The direct JSON serializer sends exactly the bodies botocore's own would."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.model import Shape
from botocore.serialize import JSONSerializer, QuerySerializer
from pynamodb.attributes import BinaryAttribute, BinarySetAttribute

from chalicelib.store import direct_json
from chalicelib.store.base import registered_models

SERVICE = botocore.session.get_session().get_service_model("dynamodb")
ITEM = {
    "run_id": {"S": "evrun_1"},
    "result_key": {"S": "dsit_1#01"},
    "trial": {"N": "1"},
    "passed": {"BOOL": True},
    "error": {"NULL": True},
    "scores": {"L": [{"M": {"score": {"N": "1.0"}, "name": {"S": "contains é"}}}]},
    "tags": {"SS": ["a", "b"]},
}
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    (
        "TransactWriteItems",
        {
            "TransactItems": [
                {
                    "Put": {
                        "TableName": "t-results",
                        "Item": ITEM,
                        "ConditionExpression": "attribute_not_exists (#0)",
                        "ExpressionAttributeNames": {"#0": "result_key"},
                    }
                },
                {
                    "Update": {
                        "TableName": "t-runs",
                        "Key": {"id": {"S": "evrun_1"}},
                        "UpdateExpression": "ADD #0 :0",
                        "ConditionExpression": "attribute_exists (#1) AND #2 < :1",
                        "ExpressionAttributeNames": {"#0": "n", "#1": "id", "#2": "m"},
                        "ExpressionAttributeValues": {":0": {"N": "3"}, ":1": {"N": "97"}},
                    }
                },
            ],
            "ReturnConsumedCapacity": "TOTAL",
        },
    ),
    ("BatchGetItem", {"RequestItems": {"t": {"Keys": [ITEM], "ConsistentRead": True}}}),
    ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": ITEM}}]}}),
    (
        "Query",
        {
            "TableName": "t",
            "KeyConditionExpression": "#0 = :0",
            "ExpressionAttributeNames": {"#0": "run_id"},
            "ExpressionAttributeValues": {":0": {"S": "evrun_1"}},
            "Limit": 100,
            "ExclusiveStartKey": ITEM,
            "ScanIndexForward": False,
        },
    ),
    ("GetItem", {"TableName": "t", "Key": ITEM, "ConsistentRead": True}),
    ("PutItem", {"TableName": "t", "Item": ITEM, "ReturnValues": "NONE"}),
    ("DescribeTable", {"TableName": "t"}),  # not direct: botocore's own
    ("PutItem", {"TableName": "t", "Item": {"k": {"B": b"\x00\xff"}}}),  # bytes: botocore's
]


@pytest.mark.parametrize(("operation", "parameters"), REQUESTS)
def test_the_request_is_the_one_botocore_builds(operation: str, parameters: dict[str, Any]) -> None:
    model = SERVICE.operation_model(operation)
    expected = JSONSerializer().serialize_to_request(parameters, model)
    assert direct_json.DirectJSONSerializer().serialize_to_request(parameters, model) == expected


def _shape_types(shape: Shape, seen: set[str]) -> set[str]:
    """Every shape type reachable from ``shape``, failing on a renamed member."""
    if shape.name in seen:
        return set()
    seen.add(shape.name)
    found = {shape.type_name}
    if shape.type_name == "structure":
        for name, member in shape.members.items():  # type: ignore[attr-defined]
            assert member.serialization.get("name", name) == name, (shape.name, name)
            found |= _shape_types(member, seen)
    elif shape.type_name == "list":
        found |= _shape_types(shape.member, seen)  # type: ignore[attr-defined]
    elif shape.type_name == "map":
        found |= _shape_types(shape.value, seen)  # type: ignore[attr-defined]
    return found


@pytest.mark.parametrize("operation", sorted(direct_json.DIRECT_OPERATIONS))
def test_direct_operations_take_nothing_botocore_would_convert_but_binary(operation: str) -> None:
    model = SERVICE.operation_model(operation)
    assert model.input_shape is not None
    types = _shape_types(model.input_shape, set())
    assert "timestamp" not in types and "float" not in types and "double" not in types
    assert types <= {"structure", "list", "map", "string", "integer", "long", "boolean", "blob"}


def test_pawl_models_hold_no_binary_attributes() -> None:
    """A blob is the one value botocore converts (base64): bytes fall back to it, but a str
    given for a binary attribute would not, so no model may have one."""
    binary = [
        f"{model.__name__}.{name}"
        for model in registered_models()
        for name, attribute in model.get_attributes().items()
        if isinstance(attribute, BinaryAttribute | BinarySetAttribute)
    ]
    assert binary == []


def test_the_shared_connection_uses_it(api: Any) -> None:
    from chalicelib.store.base import connection

    serializer = connection().client._serializer
    assert isinstance(
        getattr(serializer, "_serializer", serializer), direct_json.DirectJSONSerializer
    )


def test_a_validating_client_keeps_validating() -> None:
    from botocore.validate import ParamValidationDecorator, ParamValidator

    class Client:
        _serializer = ParamValidationDecorator(ParamValidator(), JSONSerializer())

    client = Client()
    assert direct_json.install_serializer(client) is True
    assert isinstance(client._serializer, ParamValidationDecorator)
    assert isinstance(client._serializer._serializer, direct_json.DirectJSONSerializer)


def test_an_unexpected_client_is_left_alone() -> None:
    class Client:
        _serializer = QuerySerializer()  # not the JSON protocol's

    client = Client()
    assert direct_json.install_serializer(client) is False
    assert direct_json.install_parser(client) is False  # no endpoint at all
    assert type(client._serializer) is QuerySerializer


ANSWERS: list[tuple[str, int, dict[str, Any]]] = [
    (
        "Query",
        200,
        {
            "Items": [ITEM, {"k": {"M": {"a": {"L": [{"N": "2"}, {"NULL": True}]}}}}],
            "Count": 2,
            "ScannedCount": 2,
            "LastEvaluatedKey": {"run_id": {"S": "evrun_1"}},
            "ConsumedCapacity": {"TableName": "t", "CapacityUnits": 1.5},
        },
    ),
    (
        "BatchGetItem",
        200,
        {
            "Responses": {"t-runs": [ITEM], "t-results": []},
            "UnprocessedKeys": {"t-results": {"Keys": [ITEM], "ConsistentRead": True}},
        },
    ),
    ("GetItem", 200, {"Item": ITEM}),
    ("GetItem", 200, {}),
    ("TransactWriteItems", 200, {}),
    ("UpdateItem", 200, {"Attributes": ITEM}),
    ("GetItem", 200, {"Item": {"k": {"B": "AP8="}}}),  # binary: botocore's (decodes it)
    ("DescribeTable", 200, {"Table": {"TableName": "t", "CreationDateTime": 1.7e9}}),
    (
        "TransactWriteItems",
        400,
        {
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            "Message": "Transaction cancelled",
            "CancellationReasons": [{"Code": "ConditionalCheckFailed"}, {"Code": "None"}],
        },
    ),
]


@pytest.mark.parametrize(("operation", "status", "answer"), ANSWERS)
def test_the_answer_is_what_botocore_parses(
    operation: str, status: int, answer: dict[str, Any]
) -> None:
    import json

    from botocore.parsers import JSONParser

    model = SERVICE.operation_model(operation)
    response = {
        "body": json.dumps(answer).encode(),
        "headers": {"x-amzn-requestid": "req-1", "Content-Type": "application/x-amz-json-1.0"},
        "status_code": status,
    }
    expected = JSONParser().parse(dict(response), model.output_shape)
    assert direct_json.DirectJSONParser().parse(dict(response), model.output_shape) == expected


def test_the_shared_connection_parses_directly(api: Any) -> None:
    from chalicelib.store.base import connection

    factory = connection().client._endpoint._response_parser_factory
    assert isinstance(factory.create_parser("json"), direct_json.DirectJSONParser)
