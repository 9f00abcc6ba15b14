"""GC and journal safety against a hostile world: refusing stores, lost manifests, edited plans."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from s3spill import keys
from s3spill.doctor import render, run_doctor
from s3spill.errors import NotFound, UnsupportedOperation
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.leases.journal import LeaseJournal
from s3spill.store.base import ObjectStore, StoreCapabilities
from s3spill.store.s3.errors import Kind, classify
from s3spill.store.s3.store import S3Store
from s3spill.testing import HttpFaults, record_operations
from tests.gc_helpers import later, put_artifact

REAL = CleanupPolicy(dry_run=False)


def _exists(store: ObjectStore, key: str) -> bool:
    try:
        store.head(key)
        return True
    except NotFound:
        return False


def refuse_if_match_delete(client: Any) -> HttpFaults:
    """Answer 501 NotImplemented to every DeleteObject carrying If-Match, as LocalStack does."""
    from botocore.awsrequest import AWSResponse, HTTPHeaders

    faults = HttpFaults(client, "before-send.s3.DeleteObject", lambda **_: None, 1 << 30)

    class _Raw:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def stream(self, **_: Any) -> Any:
            yield self.data

    def handler(request: Any, **_: Any) -> AWSResponse | None:
        if "If-Match" not in request.headers:
            return None
        faults.fired += 1
        body = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>NotImplemented</Code>"
                b"<Message>A header you provided implies functionality that is not implemented"
                b"</Message></Error>")
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/xml"
        return AWSResponse(request.url, 501, headers, _Raw(body))

    faults.handler = handler
    client.meta.events.register(faults.event, handler)
    return faults


# -- 501 NotImplemented is a definite refusal -------------------------------------------


def test_501_is_a_definite_refusal_not_a_transient_fault(server_store: S3Store) -> None:
    """A 501 to If-Match on DeleteObject raises UnsupportedOperation after one request, object kept."""
    server_store.put_if_absent("k", b"x")
    etag = server_store.head("k").etag
    faults = refuse_if_match_delete(server_store.client)
    seen = record_operations(server_store.client)
    try:
        server_store.delete_if_match("k", etag)
        raise AssertionError("a refused delete must raise")
    except UnsupportedOperation as exc:
        assert classify(exc.__cause__) is Kind.UNSUPPORTED  # type: ignore[arg-type]
    assert seen.count("DeleteObject") == 1 and faults.fired == 1
    assert _exists(server_store, "k")


def test_doctor_reports_501_on_conditional_delete_as_no(server_store: S3Store) -> None:
    """The doctor lists a conditional delete answered with 501 as NO (not n/a) and GC as refused."""
    refuse_if_match_delete(server_store.client)
    report = run_doctor(server_store)
    row = next(p for p in report.probes if p.name == "conditional_delete")
    assert row.honoured is False and "501" in row.detail and row.needed_by == "gc"
    assert report.gc_delete_mode is None and not report.ok
    assert re.search(r"conditional delete \(If-Match\) +NO ", render(report))


def test_501_delete_is_lifted_and_force_sends_plain_deletes(server_store: S3Store, tmp_path: Path) -> None:
    """A 501 delete lifts the condemnation (the orphan stays usable); --force-unverified then deletes it."""
    name = put_artifact(server_store, "s1", b"orphan\n", index=False)
    key = keys.artifact_key(keys.session_hash("s1"), name)
    refuse_if_match_delete(server_store.client)
    plan = plan_cleanup(server_store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    report = apply_cleanup(server_store, plan, now=later)
    assert report.counts == {"retained_error": 1} and "not implemented" in report.items[0].reason
    assert _exists(server_store, key)
    view = LeaseJournal(server_store, session_hash=keys.session_hash("s1")).view()
    assert view.condemned == ()  # lifted: it can be claimed, or deleted by a later run
    seen = record_operations(server_store.client)
    plan2 = plan_cleanup(server_store, CleanupScope(), REAL, out=tmp_path / "p2", now=later())
    forced = apply_cleanup(server_store, plan2, now=later, force_unverified_deletes=True,
                           capabilities=StoreCapabilities(conditional_delete=False))
    assert forced.counts.get("deleted") == 1 and forced.delete_method == "unconditional"
    assert not _exists(server_store, key) and "DeleteObject" in seen
