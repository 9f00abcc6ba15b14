"""Test tools shipped for users: an embedded S3 and fault injection around real stores.

Why these and not fakes: every test of s3spill runs against real S3 semantics (moto),
and faults are injected *around* the real thing — at the HTTP level with botocore event
hooks (:mod:`.http_faults`), or around any :class:`~s3spill.store.base.ObjectStore`
(:mod:`.fault_stores`) — so what is tested is our handling of a real answer, never a
mock's idea of one. :mod:`.server` is the embedded moto server; ``python -m
s3spill.testing`` (:mod:`.__main__`) is its child process.

Names load lazily from their module, so the production commands that need only the
embedded server (``s3spill demo``, ``serve-s3``) never import the fault helpers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from s3spill.testing.fault_stores import ConditionIgnoringStore as ConditionIgnoringStore
    from s3spill.testing.fault_stores import Fault as Fault
    from s3spill.testing.fault_stores import FaultyStore as FaultyStore
    from s3spill.testing.http_faults import HttpFaults as HttpFaults
    from s3spill.testing.http_faults import break_response_body as break_response_body
    from s3spill.testing.http_faults import drop_response_after_send as drop_response_after_send
    from s3spill.testing.http_faults import inject_http_errors as inject_http_errors
    from s3spill.testing.http_faults import record_operations as record_operations
    from s3spill.testing.http_faults import strip_request_header as strip_request_header
    from s3spill.testing.server import FAKE_CREDENTIALS as FAKE_CREDENTIALS
    from s3spill.testing.server import EmbeddedS3 as EmbeddedS3
    from s3spill.testing.server import child_env as child_env
    from s3spill.testing.server import free_port as free_port
    from s3spill.testing.server import serve as serve

__all__ = [
    "FAKE_CREDENTIALS",
    "ConditionIgnoringStore",
    "EmbeddedS3",
    "Fault",
    "FaultyStore",
    "HttpFaults",
    "break_response_body",
    "child_env",
    "drop_response_after_send",
    "free_port",
    "inject_http_errors",
    "record_operations",
    "serve",
    "strip_request_header",
]

#: The module each name of ``__all__`` lives in.
_HOME = {
    "ConditionIgnoringStore": "fault_stores",
    "Fault": "fault_stores",
    "FaultyStore": "fault_stores",
    "HttpFaults": "http_faults",
    "break_response_body": "http_faults",
    "drop_response_after_send": "http_faults",
    "inject_http_errors": "http_faults",
    "record_operations": "http_faults",
    "strip_request_header": "http_faults",
    "FAKE_CREDENTIALS": "server",
    "EmbeddedS3": "server",
    "child_env": "server",
    "free_port": "server",
    "serve": "server",
}


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 's3spill.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"s3spill.testing.{home}"), name)
    globals()[name] = value
    return value
