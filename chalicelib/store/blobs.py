"""Large payloads in S3: what would push a DynamoDB item past its 400 KB limit.

A row keeps the object key (``output_s3_key``); readers call :func:`get_text` to get the
whole payload back. Keys are derived from the owning resource's id, so writing the same
payload twice overwrites rather than duplicates.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from chalicelib import aws
from chalicelib.settings import get_settings

#: What a row may hold inline beside its other attributes before a payload goes to S3.
ROW_BUDGET_BYTES = 300 * 1024


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


def should_offload(text: str | None, other_bytes: int = 0) -> bool:
    """True when ``text`` is over the configured threshold, or would overflow the row."""
    if text is None:
        return False
    size = utf8_size(text)
    return size > get_settings().large_output_bytes or size + other_bytes > ROW_BUDGET_BYTES


def output_key(generation_id: str) -> str:
    return f"generations/{generation_id}/output.txt"


def object_key(generation_id: str) -> str:
    return f"generations/{generation_id}/object.json"


def put_bytes(key: str, body: bytes, content_type: str) -> None:
    aws.client("s3").put_object(
        Bucket=get_settings().bucket, Key=key, Body=body, ContentType=content_type
    )


def put_text(key: str, text: str, content_type: str = "text/plain; charset=utf-8") -> None:
    put_bytes(key, text.encode("utf-8"), content_type)


def get_bytes(key: str) -> bytes | None:
    """The stored object's body, or None when the object is gone (purged, never written)."""
    try:
        response: Any = aws.client("s3").get_object(Bucket=get_settings().bucket, Key=key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
            return None
        raise
    body: bytes = response["Body"].read()
    return body


def get_text(key: str) -> str | None:
    """The stored text, or None when the object is gone (purged)."""
    body = get_bytes(key)
    return None if body is None else body.decode("utf-8")


def delete(keys: list[str]) -> None:
    """Delete objects (missing ones are fine: a purge may be repeated)."""
    if not keys:
        return
    aws.client("s3").delete_objects(
        Bucket=get_settings().bucket,
        Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True},
    )
