"""Secrets at rest: sealed (encrypted) values and keyed hashes, all from one server secret.

What a tenant gives pawl to keep (webhook signing secrets; the trigger secrets of a later
issue) is stored *sealed*: :func:`seal` encrypts it, :func:`open_sealed` gives it back to the
code that signs with it. API keys are stored as a *keyed hash* (:func:`keyed_hash`), so a
copied table (or ``snapshot.json``) neither reveals the keys nor lets anyone check guesses
offline without the server secret.

Keys:

- ``PAWL_SERVER_SECRET`` (at least :data:`MIN_SECRET_CHARS` characters) is the root. Each
  use gets its own key through HKDF-SHA256 (``info`` names the use), so the encryption key
  and the hashing key are independent. Missing or short: every call here fails closed with
  :class:`ServerSecretMissing` (a deployment must configure it; the local runtime makes one
  per state dir).
- ``PAWL_KMS_KEY_ID``, when set, seals with AWS KMS ``Encrypt`` instead (the key never leaves
  KMS); the keyed hash still uses the server secret (one KMS call per authentication would
  be slow and costly).

Formats carry a version prefix so keys and algorithms can rotate: a value is opened by the
scheme its prefix names, whatever is configured now.

- ``sb1.<key id>.<base64url(nonce ‖ AES-256-GCM ciphertext ‖ tag)>``: the key id is a
  fingerprint of the derived key, so a value sealed under another server secret is told
  apart from a corrupted one.
- ``kms1.<base64url(KMS CiphertextBlob)>`` (the blob names its KMS key).
- ``hmac1.<hex HMAC-SHA256>``.

The *purpose* (e.g. :data:`WEBHOOK_SECRET`) is bound to every sealed value (AES-GCM
associated data; KMS encryption context), so a value cannot be moved to another use.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from functools import lru_cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from chalicelib import aws
from chalicelib.errors import PawlError
from chalicelib.settings import get_settings

SERVER_SECRET_VARIABLE = "PAWL_SERVER_SECRET"
MIN_SECRET_CHARS = 32

LOCAL_SCHEME = "sb1"
KMS_SCHEME = "kms1"
HASH_SCHEME = "hmac1"

#: Purposes: what a sealed value or a hash is for (bound into it).
WEBHOOK_SECRET = "webhook-secret"
TRIGGER_SECRET = "trigger-secret"
API_KEY = "api-key"
PROJECT_SECRET = "project-secret"
#: The console's session cookie (it holds the API key it acts with) and its CSRF tokens.
CONSOLE_SESSION = "console-session"
CONSOLE_CSRF = "console-csrf"
#: Names an API key in the console's revocation rows ("sign out everywhere").
CONSOLE_KEY = "console-key"

_NONCE_BYTES = 12
_KMS_CONTEXT_KEY = "pawl-purpose"


class ServerSecretMissing(PawlError):
    """No usable server secret: the deployment is misconfigured (fails closed, writes nothing)."""

    status = 500
    code = "SERVER_MISCONFIGURED"


class SealedValueUnreadable(PawlError):
    """A sealed value that cannot be opened (another server secret, corruption, unknown scheme)."""

    status = 500
    code = "SECRET_UNREADABLE"


def is_sealed(value: str) -> bool:
    """True when ``value`` is in a format :func:`open_sealed` reads (not a legacy clear value)."""
    return value.startswith((f"{LOCAL_SCHEME}.", f"{KMS_SCHEME}."))


def seal(plaintext: str, purpose: str) -> str:
    """Encrypt ``plaintext`` for storage (KMS when ``PAWL_KMS_KEY_ID`` is set)."""
    key_id = get_settings().kms_key_id
    if key_id:
        blob = aws.client("kms").encrypt(
            KeyId=key_id,
            Plaintext=plaintext.encode("utf-8"),
            EncryptionContext={_KMS_CONTEXT_KEY: purpose},
        )["CiphertextBlob"]
        return f"{KMS_SCHEME}.{_b64encode(blob)}"
    key = _encryption_key()
    nonce = os.urandom(_NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode("utf-8"), purpose.encode())
    return f"{LOCAL_SCHEME}.{_key_fingerprint(key)}.{_b64encode(nonce + sealed)}"


def open_sealed(value: str, purpose: str) -> str:
    """The plaintext of a value :func:`seal` made for the same ``purpose``."""
    scheme, _, rest = value.partition(".")
    if scheme == KMS_SCHEME:
        return _open_kms(rest, purpose)
    if scheme == LOCAL_SCHEME:
        return _open_local(rest, purpose)
    raise SealedValueUnreadable(f"a stored {purpose} is in an unknown format")


def keyed_hash(purpose: str, message: str) -> str:
    """HMAC-SHA256 of ``message`` under a key derived from the server secret, prefixed."""
    key = _derived_key(_server_secret(), f"pawl/{HASH_SCHEME}/{purpose}")
    digest = hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"{HASH_SCHEME}.{digest}"


def verify_keyed_hash(purpose: str, message: str, stored: str) -> bool:
    """Constant-time check of ``message`` against a :func:`keyed_hash` value."""
    return hmac.compare_digest(keyed_hash(purpose, message).encode(), stored.encode())


# --- internals -----------------------------------------------------------------------------


def _server_secret() -> str:
    secret = get_settings().server_secret
    if not secret:
        raise ServerSecretMissing(
            f"{SERVER_SECRET_VARIABLE} is not set: this deployment cannot store or check "
            "secrets (configure a random value of at least "
            f"{MIN_SECRET_CHARS} characters; `pawl serve` makes one per state dir)",
            variable=SERVER_SECRET_VARIABLE,
        )
    if len(secret) < MIN_SECRET_CHARS:
        raise ServerSecretMissing(
            f"{SERVER_SECRET_VARIABLE} is shorter than {MIN_SECRET_CHARS} characters",
            variable=SERVER_SECRET_VARIABLE,
        )
    return secret


@lru_cache(maxsize=16)
def _derived_key(secret: str, info: str) -> bytes:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"pawl", info=info.encode())
    return hkdf.derive(secret.encode("utf-8"))


def _encryption_key() -> bytes:
    return _derived_key(_server_secret(), f"pawl/{LOCAL_SCHEME}/encrypt")


def _key_fingerprint(key: bytes) -> str:
    return hmac.new(key, b"pawl key id", hashlib.sha256).hexdigest()[:8]


def _open_local(rest: str, purpose: str) -> str:
    key = _encryption_key()
    fingerprint, _, payload = rest.partition(".")
    if fingerprint != _key_fingerprint(key):
        raise SealedValueUnreadable(
            f"a stored {purpose} was sealed under another {SERVER_SECRET_VARIABLE} "
            f"(key id {fingerprint})"
        )
    try:
        raw = _b64decode(payload)
        plaintext = AESGCM(key).decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], purpose.encode())
    except (InvalidTag, ValueError, binascii.Error):
        raise SealedValueUnreadable(
            f"a stored {purpose} is corrupt or sealed for another use"
        ) from None
    return plaintext.decode("utf-8")


def _open_kms(rest: str, purpose: str) -> str:
    try:
        blob = _b64decode(rest)
    except (ValueError, binascii.Error):
        raise SealedValueUnreadable(f"a stored {purpose} is corrupt") from None
    answer = aws.client("kms").decrypt(
        CiphertextBlob=blob, EncryptionContext={_KMS_CONTEXT_KEY: purpose}
    )
    plaintext: bytes = answer["Plaintext"]
    return plaintext.decode("utf-8")


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def reset_key_cache() -> None:
    """Forget the derived keys (the composition root's reset)."""
    _derived_key.cache_clear()
