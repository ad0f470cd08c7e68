"""IAM policies as the API shows them (the document model lives in ``chalicelib.iam``)."""

from __future__ import annotations

from chalicelib.domain.base import Resource
from chalicelib.iam.document import PolicyDocument


class Policy(Resource):
    id: str
    name: str
    description: str | None = None
    document: PolicyDocument
    created_at: str
    updated_at: str
