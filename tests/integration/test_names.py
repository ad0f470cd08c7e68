"""Name uniqueness by conditional write, including renames onto a taken name."""

from __future__ import annotations

import pytest

from chalicelib.errors import NameConflict
from chalicelib.store import names
from chalicelib.store.models import NameClaimModel


def test_claims_conflict_and_renames_move_the_claim(aws_env: None) -> None:
    names.write_with_claim("dataset", "proj_a", "alpha", "dset_1", [])
    names.write_with_claim("dataset", "proj_a", "beta", "dset_2", [])
    names.write_with_claim("dataset", "proj_b", "alpha", "dset_3", [])  # other project: fine
    with pytest.raises(NameConflict):
        names.write_with_claim("dataset", "proj_a", "alpha", "dset_4", [])
    with pytest.raises(NameConflict):
        names.rename_with_claim("dataset", "proj_a", "alpha", "beta", "dset_1", [])
    names.rename_with_claim("dataset", "proj_a", "alpha", "gamma", "dset_1", [])
    keys = {row.key for row in NameClaimModel.scan()}
    assert keys == {"proj_a#dataset#beta", "proj_a#dataset#gamma", "proj_b#dataset#alpha"}
