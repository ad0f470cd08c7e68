"""Deployment settings, read from the environment once per process.

Every knob pawl has lives here so a reader finds them in one place. Tests and the
local runtime change the environment and call :func:`reset_settings`.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlsplit

from chalicelib.secrets_source import secret_from_env

#: The largest ``max_concurrency`` any server accepts (published in the API's schema);
#: ``PAWL_MAX_CONCURRENCY_LIMIT`` may only lower it.
MAX_CONCURRENCY_CEILING = 200

#: The admin key the local runtime uses when ``PAWL_ADMIN_KEY`` is unset (documented in README).
LOCAL_DEFAULT_ADMIN_KEY = "pawl-local-admin-key"

#: The setting that lists the environment variables a tenant's ``api_key_env`` may name.
CREDENTIAL_ENV_ALLOW = "PAWL_CREDENTIAL_ENV_ALLOW"
#: Prefixes of pawl's own and the cloud's variables: never a tenant's credential, even when
#: the operator lists them (the admin key, the server secret, the execution role's keys).
RESERVED_ENV_PREFIXES = ("PAWL_", "AWS_")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: The setting naming the base URL pawl is reached at (console links in webhooks).
PUBLIC_URL = "PAWL_PUBLIC_URL"

log = logging.getLogger(__name__)


class InvalidSetting(ValueError):
    """A setting whose value pawl refuses to start with; the message says what to set."""


def public_url_from(raw: str | None) -> str | None:
    """``PAWL_PUBLIC_URL`` checked: an ``http(s)`` URL with a host, no query, fragment or
    user info; returned without its trailing ``/`` (None when unset or blank).

    A path is kept: API Gateway's URL ends in its stage (``https://….amazonaws.com/api``).
    """
    if raw is None or not raw.strip():
        return None
    value = raw.strip()
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if (
        parts is None
        or not port_ok
        or parts.scheme not in {"http", "https"}
        or not parts.hostname
        or parts.query
        or parts.fragment
        or "@" in parts.netloc
        or any(ch.isspace() for ch in value)
    ):
        raise InvalidSetting(
            f"{PUBLIC_URL} is not valid: {value!r} (expected the http(s) URL pawl is reached "
            "at, such as https://abc123.execute-api.us-east-1.amazonaws.com/api; no query, "
            "fragment or user info)"
        )
    return value.rstrip("/")


def _flag(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def _names(raw: str) -> tuple[str, ...]:
    """A comma-separated list, blanks dropped."""
    return tuple(name.strip() for name in raw.split(",") if name.strip())


def credential_env_names(raw: str) -> tuple[str, ...]:
    """The names ``PAWL_CREDENTIAL_ENV_ALLOW`` lists that a tenant may use as ``api_key_env``.

    A name of pawl's own or of the cloud (:data:`RESERVED_ENV_PREFIXES`, any case) or one
    that is not a variable name is dropped with a warning: listing it is an operator's
    mistake, and honouring it would hand that value to whatever URL a tenant chose.
    """
    kept = []
    for name in _names(raw):
        if name.upper().startswith(RESERVED_ENV_PREFIXES) or not _ENV_NAME.match(name):
            log.warning(
                "%s: %r ignored (pawl's own and AWS_ variables can never be a tenant's "
                "credential; names are letters, digits and _)",
                CREDENTIAL_ENV_ALLOW,
                name,
            )
            continue
        kept.append(name)
    return tuple(kept)


@dataclass(frozen=True)
class Settings:
    table_prefix: str
    region: str
    aws_endpoint_url: str | None
    admin_key: str | None
    #: ``PAWL_PYTHON_AGENT_MODULES``: the modules whose callables ``python`` agents may name
    #: (exact names, or ``pkg.*`` for the modules below ``pkg``); empty: none.
    python_agent_modules: tuple[str, ...]
    allow_private_urls: str
    bucket: str
    run_queue: str
    item_queue: str
    webhook_queue: str
    run_grace_s: int
    max_body_bytes: int
    large_output_bytes: int
    embedding_provider: str | None
    serialize_transactions: bool
    embedding_model: str | None
    #: Seconds before the 2nd webhook attempt; the 3rd waits 4x that (0 in tests: no waiting).
    webhook_retry_base_s: int = 1
    #: How overdue a pending delivery's next attempt must be before the sweeper re-enqueues
    #: it (its message was lost): well past the queue's redelivery of a failed message.
    webhook_sweep_grace_s: int = 300
    #: ``PAWL_PROGRESS_FLUSH_S``: the longest a finished item of a running batch waits
    #: before its result is recorded (``engine.batch_recorder``): what a user watching a
    #: run waits to see it; a larger value saves transactions on slow batches.
    progress_flush_s: float = 0.5
    #: ``PAWL_RUN_WATCH_REFRESH_S``: the oldest a running run's status may be when a worker
    #: starts a call for it (``engine.run_watch``): how late a cancel written by another
    #: process can be noticed, and how often a busy run's status is re-read.
    run_watch_refresh_s: float = 0.5
    #: ``PAWL_RUN_SHARD_ITEMS``: a run's result rows (and frozen items, and counters) are
    #: spread over one hash key per this many work items, up to ``PAWL_RUN_MAX_SHARDS``
    #: (``store.shards``): a run below it keeps the single key every run had before.
    run_shard_items: int = 1000
    run_max_shards: int = 16
    #: ``PAWL_ITEMS_MAX_CONCURRENCY``: the items queue's event source mapping's maximum
    #: concurrency (a stage setting, 2..1000): how many item batches run at once across all
    #: runs. Each makes up to a run's ``max_concurrency`` agent calls at once, so one run's
    #: agent calls in flight reach this times its ``max_concurrency`` (``docs/scaling.md``).
    items_max_concurrency: int = 100
    #: Outbound HTTP: first retry waits about this long, doubling after (tiny in tests).
    http_backoff_base_s: float = 0.5
    http_max_attempts: int = 3
    #: The ``openai`` embedding backend: endpoint root (``{base}/embeddings``) and the name of
    #: the environment variable holding its API key (no Authorization header when unset).
    embedding_base_url: str | None = None
    embedding_api_key_env: str | None = None
    #: Torch threads of the ``local`` embedding backend (1: item workers run side by side,
    #: and a busy 2-core machine is far slower with more).
    embedding_threads: int = 1
    #: ``PAWL_PLUGINS_DIR``: a directory of one-off plugin modules (``*.py`` files and
    #: packages) the plugin host loads after the installed plugins; unset: none.
    plugins_dir: str | None = None
    #: ``PAWL_SERVER_SECRET``: the root of the keys that encrypt secrets at rest and hash API
    #: keys (see :mod:`chalicelib.secretbox`). Never shown in a repr.
    server_secret: str | None = field(default=None, repr=False)
    #: ``PAWL_KMS_KEY_ID``: when set, secrets at rest are encrypted with this KMS key instead.
    kms_key_id: str | None = None
    #: pawl's own endpoints (``host:port`` or URLs, comma-separated) that no outbound call
    #: may reach, whatever ``allow_private_urls`` says; the local runtime sets it to what it
    #: binds. ``aws_endpoint_url`` always counts too (see chalicelib/outbound/allowlist.py).
    reserved_endpoints: str = ""
    #: ``PAWL_MAX_CONCURRENCY_LIMIT``: the largest ``max_concurrency`` an eval or a run start
    #: may ask for (a 400 above it; at most 200), and the size of a process's agent-call pool.
    max_concurrency_limit: int = 200
    #: ``PAWL_CREDENTIAL_ENV_ALLOW``: the environment variables a tenant's ``api_key_env``
    #: may name (empty: none; see :func:`credential_env_names`).
    credential_env_allow: tuple[str, ...] = ()
    #: ``PAWL_PUBLIC_URL``: the base URL pawl is reached at (checked by
    #: :func:`public_url_from`); webhook payloads carry console links under it. The local
    #: runtime sets it to its own URL unless it is set; None: no links.
    public_url: str | None = None
    #: ``PAWL_SETTLE_FANOUT_ITEMS``: a run of more items is settled in slices, one worker
    #: each (``engine.settle_slices``), rather than in one pass by the claimant.
    settle_fanout_items: int = 100_000
    #: ``PAWL_SETTLE_SLICE_ITEMS``: about how many items one slice of a sliced settle reads.
    settle_slice_items: int = 50_000

    def table_name(self, name: str) -> str:
        return f"{self.table_prefix}-{name}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    prefix = os.environ.get("PAWL_TABLE_PREFIX", "pawl")
    return Settings(
        table_prefix=prefix,
        region=os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION", "us-east-1"),
        aws_endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None,
        admin_key=secret_from_env("PAWL_ADMIN_KEY"),
        python_agent_modules=_names(os.environ.get("PAWL_PYTHON_AGENT_MODULES", "")),
        # "" = public addresses only; "loopback:PORT,...", CIDRs, "loopback", "all": the
        # grammar is in chalicelib/outbound/allowlist.py (an invalid value is public only).
        allow_private_urls=os.environ.get("PAWL_ALLOW_PRIVATE_URLS", "").strip().lower(),
        bucket=os.environ.get("PAWL_BUCKET", f"{prefix}-blobs"),
        run_queue=os.environ.get("PAWL_RUN_QUEUE", f"{prefix}-runs"),
        item_queue=os.environ.get("PAWL_ITEM_QUEUE", f"{prefix}-items"),
        webhook_queue=os.environ.get("PAWL_WEBHOOK_QUEUE", f"{prefix}-webhooks"),
        run_grace_s=int(os.environ.get("PAWL_RUN_GRACE_S", "1800")),
        max_body_bytes=int(os.environ.get("PAWL_MAX_BODY_BYTES", str(1024 * 1024))),
        large_output_bytes=int(os.environ.get("PAWL_LARGE_OUTPUT_BYTES", str(256 * 1024))),
        embedding_provider=os.environ.get("PAWL_EMBEDDING_PROVIDER") or None,
        serialize_transactions=_flag("PAWL_SERIALIZE_TRANSACTIONS"),
        embedding_model=os.environ.get("PAWL_EMBEDDING_MODEL") or None,
        webhook_retry_base_s=int(os.environ.get("PAWL_WEBHOOK_RETRY_BASE_S", "1")),
        webhook_sweep_grace_s=int(os.environ.get("PAWL_WEBHOOK_SWEEP_GRACE_S", "300")),
        progress_flush_s=max(0.0, float(os.environ.get("PAWL_PROGRESS_FLUSH_S", "0.5"))),
        run_watch_refresh_s=max(0.0, float(os.environ.get("PAWL_RUN_WATCH_REFRESH_S", "0.5"))),
        run_shard_items=max(1, int(os.environ.get("PAWL_RUN_SHARD_ITEMS", "1000"))),
        run_max_shards=min(64, max(1, int(os.environ.get("PAWL_RUN_MAX_SHARDS", "16")))),
        items_max_concurrency=min(
            1000, max(2, int(os.environ.get("PAWL_ITEMS_MAX_CONCURRENCY", "100")))
        ),
        http_backoff_base_s=float(os.environ.get("PAWL_HTTP_BACKOFF_BASE_S", "0.5")),
        http_max_attempts=max(1, int(os.environ.get("PAWL_HTTP_MAX_ATTEMPTS", "3"))),
        embedding_base_url=os.environ.get("PAWL_EMBEDDING_BASE_URL") or None,
        embedding_api_key_env=os.environ.get("PAWL_EMBEDDING_API_KEY_ENV") or None,
        embedding_threads=max(1, int(os.environ.get("PAWL_EMBEDDING_THREADS", "1"))),
        plugins_dir=os.environ.get("PAWL_PLUGINS_DIR") or None,
        server_secret=secret_from_env("PAWL_SERVER_SECRET"),
        kms_key_id=os.environ.get("PAWL_KMS_KEY_ID") or None,
        reserved_endpoints=os.environ.get("PAWL_RESERVED_ENDPOINTS", "").strip(),
        max_concurrency_limit=min(
            MAX_CONCURRENCY_CEILING,
            max(1, int(os.environ.get("PAWL_MAX_CONCURRENCY_LIMIT", str(MAX_CONCURRENCY_CEILING)))),
        ),
        credential_env_allow=credential_env_names(os.environ.get(CREDENTIAL_ENV_ALLOW, "")),
        public_url=public_url_from(os.environ.get(PUBLIC_URL)),
        settle_fanout_items=int(os.environ.get("PAWL_SETTLE_FANOUT_ITEMS", "100000")),
        settle_slice_items=max(1, int(os.environ.get("PAWL_SETTLE_SLICE_ITEMS", "50000"))),
    )


def reset_settings() -> None:
    """Forget the cached settings (after the environment changed)."""
    get_settings.cache_clear()
