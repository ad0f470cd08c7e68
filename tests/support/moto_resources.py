"""pawl's tables, queues and bucket in in-process moto, made once per process and restored per test.

``bootstrap.ensure_resources`` creates 29 tables (each a CreateTable, a DescribeTable for
the waiter and for some an UpdateTimeToLive), 3 queues with their DLQs and the bucket
through botocore into moto: ~0.5 s of CPU a test, 3-6 s of wall time on a busy machine,
paid by every test that takes the ``api`` fixture. The first call in a process does
exactly that and keeps a pickle of what it made in moto's DynamoDB, SQS and S3 models;
every later call (in a fresh ``mock_aws``, whose models are empty) loads that pickle into
the same models, a few milliseconds. docs/testing.md.

The pickle is keyed by the names the current settings give the tables, queues and bucket,
so a test that changes the prefix gets its own. Anything already in the models (not a
fresh ``mock_aws``) takes the slow path, which is idempotent as ever, and so does every
call when ``PAWL_TEST_FRESH_RESOURCES=1`` (to rule the pickle out, or to time without it).
"""

from __future__ import annotations

import io
import os
import pickle
import threading
from typing import Any

from moto.core.base_backend import BackendDict
from moto.dynamodb.models import dynamodb_backends
from moto.s3.models import s3_backends
from moto.sqs.models import sqs_backends

from chalicelib import bootstrap
from chalicelib.infra.definitions import queue_specs, table_specs
from chalicelib.settings import get_settings
from chalicelib.store.base import bind

#: The services whose models are kept (what ``bootstrap.ensure_resources`` makes).
_SERVICES: tuple[BackendDict[Any], ...] = (dynamodb_backends, sqs_backends, s3_backends)
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))

#: (account, region, service index, pickled backend state) per resource names.
Snapshot = list[tuple[str, str, int, bytes]]
_snapshots: dict[tuple[str, ...], Snapshot] = {}


def _fresh_lock(lock: Any) -> tuple[Any, tuple[()]]:
    """A lock pickles as a new, unlocked lock of its kind (SQS queues hold one each)."""
    return (threading.RLock if isinstance(lock, _LOCK_TYPES[1]) else threading.Lock), ()


def _dumps(state: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {kind: _fresh_lock for kind in _LOCK_TYPES}
    pickler.dump(state)
    return buffer.getvalue()


def _names() -> tuple[str, ...]:
    settings = get_settings()
    tables = [spec.name for spec in table_specs()]
    queues = [name for spec in queue_specs() for name in (spec.name, spec.dlq_name)]
    return (settings.region, settings.bucket, *tables, *queues)


def _models_are_empty() -> bool:
    for service in _SERVICES:
        for _, _, backend in service.iter_backends():
            if any(getattr(backend, name, None) for name in ("tables", "queues", "buckets")):
                return False
    return not s3_backends.bucket_accounts


def _take() -> Snapshot:
    return [
        (account, region, index, _dumps(backend.__dict__))
        for index, service in enumerate(_SERVICES)
        for account, region, backend in service.iter_backends()
    ]


def _restore(snapshot: Snapshot) -> None:
    for account, region, index, state in snapshot:
        backend = _SERVICES[index][account][region]
        backend.__dict__.update(pickle.loads(state))
        for bucket in getattr(backend, "buckets", {}).values():
            # S3's one bucket namespace across accounts (moto's CreateBucket fills it in).
            s3_backends.bucket_accounts[bucket.name] = (bucket.partition, bucket.account_id)


def ensure_resources() -> None:
    """What ``bootstrap.ensure_resources`` leaves in in-process moto, from the pickle when
    this process has made it before."""
    key, fresh = _names(), _models_are_empty()
    snapshot = _snapshots.get(key)
    if snapshot is None or not fresh or os.environ.get("PAWL_TEST_FRESH_RESOURCES") == "1":
        bootstrap.ensure_resources()
        if fresh:
            _snapshots[key] = _take()
        return
    bind()
    _restore(snapshot)
