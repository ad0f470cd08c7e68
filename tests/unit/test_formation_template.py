"""The formation template, pure: parameters, expressions, dependencies and order."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.errors import ValidationFailed
from chalicelib.formations.template import (
    Scope,
    creation_order,
    masked_parameters,
    parameter_values,
    parse_template,
    resolve,
)


def _template(resources: dict[str, Any], **extra: Any) -> Any:
    return parse_template({"resources": resources, **extra})


def _scope(parameters: dict[str, str], names: set[str]) -> Scope:
    return Scope(parameters, frozenset(names), physical=lambda name: f"id-of-{name}")


def test_expressions_resolve_params_refs_and_subs() -> None:
    scope = _scope({"Env": "staging"}, {"Cases"})
    value = {
        "a": {"param": "Env"},
        "b": {"ref": "Cases"},
        "c": [{"sub": "${Env}/${Cases}/${body.query}"}],
        "d": {"ref": "Cases", "other": 1},  # two keys: not an expression, resolved inside
    }
    assert resolve(value, scope, "p") == {
        "a": "staging",
        "b": "id-of-Cases",
        "c": ["staging/id-of-Cases/${body.query}"],
        "d": {"ref": "Cases", "other": 1},
    }
    for bad, field in (
        ({"x": {"sub": "${Nope}"}}, "p.x"),
        ({"x": {"param": "Nope"}}, "p.x"),
        ({"x": [{"ref": "Nope"}]}, "p.x.0"),
        ({"x": {"ref": 3}}, "p.x.ref"),
    ):
        with pytest.raises(ValidationFailed) as refused:
            resolve(bad, scope, "p")
        assert refused.value.meta["field"] == field


def test_order_follows_refs_subs_and_depends_on_ties_in_template_order() -> None:
    template = _template(
        {
            "Eval": {"type": "eval", "properties": {"dataset_id": {"ref": "Cases"}}},
            "Note": {"type": "dataset", "properties": {"name": {"sub": "after ${Eval}"}}},
            "Cases": {"type": "dataset", "depends_on": ["Agent"]},
            "Agent": {"type": "agent"},
            "Other": {"type": "dataset"},
        }
    )
    assert creation_order(template) == ["Agent", "Other", "Cases", "Eval", "Note"]


def test_a_cycle_names_only_its_members() -> None:
    template = _template(
        {
            "A": {"type": "dataset", "depends_on": ["B"]},
            "B": {"type": "dataset", "properties": {"x": {"ref": "A"}}},
            "Behind": {"type": "dataset", "depends_on": ["A"]},
        }
    )
    with pytest.raises(ValidationFailed) as refused:
        creation_order(template)
    assert refused.value.meta["cycle"] == ["A", "B"]


def test_parameters_defaults_missing_unknown_and_masking() -> None:
    template = _template(
        {"A": {"type": "dataset"}},
        parameters={
            "Region": {"default": "eu"},
            "Token": {"no_echo": True},
        },
    )
    values = parameter_values(template, {"Token": "s3cret"})
    assert values == {"Region": "eu", "Token": "s3cret"}
    assert masked_parameters(template, values) == {"Region": "eu", "Token": "***"}
    with pytest.raises(ValidationFailed, match="Missing required parameters: Token"):
        parameter_values(template, {})
    with pytest.raises(ValidationFailed) as unknown:
        parameter_values(template, {"Token": "x", "Zone": "y"})
    assert unknown.value.meta["field"] == "parameters.Zone"
    with pytest.raises(ValidationFailed) as typed:
        parameter_values(template, {"Token": 3})
    assert typed.value.meta["field"] == "parameters.Token"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({}, "template.resources"),
        ({"resources": {}}, "template.resources"),
        (
            {"resources": {"A": {"type": "dataset", "Properties": {}}}},
            "template.resources.A.Properties",
        ),
        ({"resources": {"A": {"type": "dataset"}}, "Outputs": {}}, "template.Outputs"),
        ({"resources": {"9bad": {"type": "dataset"}}}, "template.resources.9bad"),
        (
            {"resources": {"A": {"type": "dataset"}}, "parameters": {"A": {}}},
            "template.resources.A",
        ),
        (
            {"resources": {"A": {"type": "dataset", "deletion_policy": "keep"}}},
            "template.resources.A.deletion_policy",
        ),
        (
            {"resources": {"A": {"type": "dataset"}}, "parameters": {"P": {"type": "number"}}},
            "template.parameters.P.type",
        ),
        (
            {
                "resources": {"A": {"type": "dataset"}},
                "parameters": {"P": {"use_previous_value": True}},
            },
            "template.parameters.P.use_previous_value",
        ),
    ],
)
def test_template_shape_refusals_name_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        parse_template(raw)
    assert refused.value.meta["field"] == field
