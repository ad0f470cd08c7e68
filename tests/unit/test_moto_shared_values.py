"""The stand-in's table of shared scalar values (``local/moto_shared_values.py``)."""

from __future__ import annotations

from moto.dynamodb.models.dynamo_type import DynamoType

from pawl.local import moto_shared_values as shared


def test_equal_short_scalars_are_one_object() -> None:
    values = shared.SharedValues(DynamoType)
    for wire in ({"S": "run_1"}, {"N": "1"}, {"BOOL": True}, {"NULL": True}):
        first, again = values.typed(dict(wire)), values.typed(dict(wire))
        assert first is again
        assert (first.type, first.value) == next(iter(wire.items()))


def test_kinds_and_lengths_that_are_not_shared() -> None:
    values = shared.SharedValues(DynamoType)
    long_text = {"S": "x" * (shared.SHARED_MAX_CHARS + 1)}
    for wire in (long_text, {"M": {"a": {"S": "b"}}}, {"L": [{"S": "b"}]}, {"SS": ["a"]}):
        assert values.typed(wire) is not values.typed(wire)
        assert values.typed(wire) == DynamoType(wire)
    assert len(values) == 0


def test_a_number_and_a_string_of_the_same_text_stay_apart() -> None:
    values = shared.SharedValues(DynamoType)
    number, text = values.typed({"N": "1"}), values.typed({"S": "1"})
    assert (number.type, text.type) == ("N", "S")


def test_a_key_moto_built_is_swapped_for_its_shared_equal() -> None:
    values = shared.SharedValues(DynamoType)
    stored = values.typed({"S": "run_1"})
    assert values.share(DynamoType({"S": "run_1"})) is stored
    assert values.share(None) is None
    container = DynamoType({"M": {}})
    assert values.share(container) is container


def test_the_table_is_bounded_and_starts_again_when_full() -> None:
    values = shared.SharedValues(DynamoType, kept=3)
    for n in range(10):
        values.typed({"S": f"v{n}"})
        assert len(values) <= 3
    again = values.typed({"S": "v9"})
    assert values.typed({"S": "v9"}) is again


def test_attribute_names_are_one_object_each() -> None:
    built = "".join(["dataset_", "item_id"])  # not the literal's object
    assert shared.attribute_name(built) is shared.attribute_name("dataset_item_id")
