"""Name uniqueness by conditional write, including renames onto a taken name."""

from __future__ import annotations

import pytest

from chalicelib.errors import NameConflict
from chalicelib.store import names
from chalicelib.store.models import NameClaimModel, ToolModel
from chalicelib.store.transactions import TxnRefused


def claimed() -> set[str]:
    return {row.key for row in NameClaimModel.scan()}


def claim(kind: str, scope: str, name: str, resource_id: str) -> None:
    """Claim ``name`` for a new resource, with no resource row (the claim alone is tested)."""
    with names.claiming_name(kind, scope, resource_id, name):
        pass


def test_claims_conflict_and_renames_move_the_claim(aws_env: None) -> None:
    claim("dataset", "proj_a", "alpha", "dset_1")
    claim("dataset", "proj_a", "beta", "dset_2")
    claim("dataset", "proj_b", "alpha", "dset_3")  # other project: fine
    with pytest.raises(NameConflict, match="in this project"):
        claim("dataset", "proj_a", "alpha", "dset_4")
    with (
        pytest.raises(NameConflict),
        names.claiming_name("dataset", "proj_a", "dset_1", "beta", previous="alpha"),
    ):
        pass
    with names.claiming_name("dataset", "proj_a", "dset_1", "gamma", previous="alpha"):
        pass
    assert claimed() == {"proj_a#dataset#beta", "proj_a#dataset#gamma", "proj_b#dataset#alpha"}


def test_an_unchanged_name_claims_nothing(aws_env: None) -> None:
    claim("tool", "proj_a", "alpha", "tool_1")
    with names.claiming_name("tool", "proj_a", "tool_1", "alpha", previous="alpha") as txn:
        txn.check("claim", NameClaimModel, "proj_a#tool#alpha", NameClaimModel.key.exists())
    assert claimed() == {"proj_a#tool#alpha"}


def test_another_refusal_is_reported_by_label_and_moves_no_claim(aws_env: None) -> None:
    claim("tool", "proj_a", "alpha", "tool_1")
    with (
        pytest.raises(TxnRefused) as refused,
        names.claiming_name("tool", "proj_a", "tool_1", "beta", previous="alpha") as txn,
    ):
        txn.check("tool", ToolModel, "tool_1", ToolModel.id.exists())
    assert refused.value.labels == {"tool"}
    assert claimed() == {"proj_a#tool#alpha"}


def test_a_taken_name_wins_over_other_refusals(aws_env: None) -> None:
    claim("tool", "proj_a", "alpha", "tool_1")
    claim("tool", "proj_a", "beta", "tool_2")
    with (
        pytest.raises(NameConflict) as taken,
        names.claiming_name("tool", "proj_a", "tool_1", "beta", previous="alpha") as txn,
    ):
        txn.check("tool", ToolModel, "tool_1", ToolModel.id.exists())
    assert taken.value.meta["field"] == "name"


def test_global_names_say_so(aws_env: None) -> None:
    claim("project", names.GLOBAL_SCOPE, "acme", "proj_1")
    with pytest.raises(NameConflict) as taken:
        claim("project", names.GLOBAL_SCOPE, "acme", "proj_2")
    assert taken.value.message == "a project named 'acme' already exists"
