"""The probes behind ``s3spill doctor`` and the conditional-write gate: real requests.

Why probe instead of trusting documentation: S3-compatible stores differ in exactly the
places our safety rests on, and the differences are silent — moto accepts a wrong
``ChecksumSHA256`` on PUT and ignores per-object ETags in DeleteObjects and ``If-Match``
on CompleteMultipartUpload; MinIO has ignored ``If-Match`` on DeleteObject. A store
that ignores a condition simply does the unconditional thing, so every row below is a
real request against a scratch key under the store's prefix, with the outcome read
back; every scratch object (and version, and pending upload) is removed afterwards.

GC needs a way to delete *only* what it planned to delete: a conditional delete, or a
delete by version id on a versioned bucket. Without either, GC must refuse to run;
:attr:`~s3spill.store.capabilities.CapabilityReport.gc_ok` says which, and the CLI exits
non-zero. :mod:`s3spill.store.conditional_writes` runs three of these probes as the gate
the journal, the owner and GC pass before they write.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from typing import Any

from s3spill.errors import (
    AlreadyExists,
    NotFound,
    PreconditionFailed,
    S3SpillError,
    UnsupportedOperation,
)
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore
from s3spill.store.capabilities import CapabilityReport, Probe
from s3spill.store.payload import b64_sha256

log = get_logger("s3spill.doctor")
#: Every probe writes under this prefix of the store (the deployment's bucket policy names it).
SCRATCH = "s3spill-doctor"


def probe_capabilities(store: ObjectStore) -> CapabilityReport:
    """Probe ``store`` row by row; clean up every scratch object whatever happens."""
    scratch = f"{SCRATCH}/{secrets.token_hex(8)}"
    probes: list[Probe] = []
    s3 = s3_parts(store)
    # One listing first: an unreachable endpoint, a missing bucket or missing credentials
    # is an error of its own (raised), not a report of guarantees that "could not be probed".
    next(iter(store.list(scratch + "/")), None)
    try:
        for probe in generic_probes(store, scratch):
            probes.append(_run(probe))
        if s3 is not None:
            for probe in _s3_probes(store, s3, scratch):
                probes.append(_run(probe))
        else:
            probes.extend(_local_rows())
    finally:
        cleanup(store, s3, scratch)
    return CapabilityReport(store_url=store.url, kind=store.kind, probes=probes)


ProbeFn = Callable[[], Probe]


#: Title and need of the generic probes, for a refusal that ends a probe early.
_GENERIC = {
    "create_if_absent": ("create-if-absent (If-None-Match: *)", "all"),
    "if_match_put": ("If-Match put (compare-and-swap)", "all"),
    "if_match_put_missing": ("If-Match put on a missing key", "all"),
    "conditional_delete": ("conditional delete (If-Match)", "gc"),
}


def refused(name: str) -> Probe:
    title, needed = _GENERIC.get(name, (name.replace("_", " "), "info"))
    return Probe(name=name, title=title, honoured=False, needed_by=needed,
                 detail="the store refused the request as not implemented (501 NotImplemented)")


def _run(fn: ProbeFn) -> Probe:
    try:
        return fn()
    except UnsupportedOperation as exc:
        # 501 NotImplemented (LocalStack's answer to If-Match on DeleteObject) is a clear
        # "no": the guarantee is not honoured, which is not the same as "not probed".
        log.warning("doctor.probe_refused", probe=fn.__name__, error=type(exc).__name__)
        return refused(getattr(fn, "probe_name", fn.__name__))
    except S3SpillError as exc:
        name = getattr(fn, "probe_name", fn.__name__)
        log.warning("doctor.probe_failed", probe=name, error=type(exc).__name__)
        return Probe(name=name, title=name.replace("_", " "), honoured=None, needed_by="info",
                     detail=f"could not probe: {type(exc).__name__}: {exc}")


def generic_probes(store: ObjectStore, scratch: str) -> list[ProbeFn]:
    """The conditional-write probes every store gets, through its own API."""
    p = _GenericProbes(store, scratch)
    return [p.create_if_absent, p.if_match_put, p.if_match_put_missing, p.conditional_delete]


class _GenericProbes:
    """One probe per conditional write, each a method (its name is the probe's name)."""

    def __init__(self, store: ObjectStore, scratch: str) -> None:
        self.store, self.scratch = store, scratch
        self.key = f"{scratch}/object"

    def create_if_absent(self) -> Probe:
        self.store.put_if_absent(self.key, b"first")
        try:
            self.store.put_if_absent(self.key, b"second")
            ok, detail = False, "a second create-if-absent overwrote the object"
        except AlreadyExists:
            ok = self.store.get(self.key) == b"first"
            detail = "second create refused (412), first bytes intact" if ok else "bytes changed"
        return Probe(name="create_if_absent", title="create-if-absent (If-None-Match: *)",
                     honoured=ok, needed_by="all", detail=detail)

    def if_match_put(self) -> Probe:
        current = self.store.head(self.key)
        try:
            self.store.put_if_match(self.key, b"stale", '"00000000000000000000000000000000"')
            ok, detail = False, "a put with a wrong ETag replaced the object"
        except PreconditionFailed:
            ok = self.store.head(self.key).etag == current.etag
            detail = "wrong ETag refused (412), object unchanged" if ok else "object changed"
        if ok:
            self.store.put_if_match(self.key, b"second", current.etag)
            ok = self.store.get(self.key) == b"second"
            detail += "; right ETag accepted" if ok else "; right ETag did not replace"
        return Probe(name="if_match_put", title="If-Match put (compare-and-swap)", honoured=ok,
                     needed_by="all", detail=detail)

    def if_match_put_missing(self) -> Probe:
        missing = f"{self.scratch}/missing"
        try:
            self.store.put_if_match(missing, b"x", '"00000000000000000000000000000000"')
            ok, detail = False, "an If-Match put created a missing key"
        except PreconditionFailed:
            try:
                self.store.head(missing)
                ok, detail = False, "refused, yet the key now exists"
            except NotFound:
                ok, detail = True, "refused (404/412), nothing created"
        return Probe(name="if_match_put_missing", title="If-Match put on a missing key",
                     honoured=ok, needed_by="all", detail=detail)

    def conditional_delete(self) -> Probe:
        victim = f"{self.scratch}/delete"
        created = self.store.put_if_absent(victim, b"x")
        try:
            self.store.delete_if_match(victim, '"00000000000000000000000000000000"')
            ok, detail = False, "a delete with a wrong ETag removed the object"
        except PreconditionFailed:
            try:
                self.store.head(victim)
                ok, detail = True, "wrong ETag refused (412), object kept"
            except NotFound:
                ok, detail = False, "refused, yet the object is gone"
        if ok:
            self.store.delete_if_match(victim, created.etag)
            try:
                self.store.head(victim)
                ok, detail = False, detail + "; right ETag did not delete"
            except NotFound:
                detail += "; right ETag deleted"
        return Probe(name="conditional_delete", title="conditional delete (If-Match)",
                     honoured=ok, needed_by="gc", detail=detail)


def _local_rows() -> list[Probe]:
    na = "not applicable: the local store is not versioned"
    return [
        Probe(name="versioned_delete", title="delete by version id", honoured=False,
              needed_by="gc", detail=na),
        Probe(name="checksum_rejection", title="SHA-256 checksum rejection", honoured=None,
              needed_by="integrity", detail="not applicable: the local store computes digests"),
        Probe(name="batch_delete_etag", title="batch delete with per-object ETag",
              honoured=False, needed_by="info", detail="not applicable: no batch delete"),
        Probe(name="versioning", title="versioning", honoured=False, needed_by="info",
              detail=na),
    ]


# -- S3-only probes (raw requests, so the store's own checks cannot mask a gap) ---------


def s3_parts(store: ObjectStore) -> Any:
    if getattr(store, "kind", None) != "s3":
        return None  # and no import of boto3 for a local store (~0.3 s)
    from s3spill.store.s3.store import S3Store

    return store if isinstance(store, S3Store) else None


def _code(exc: Exception) -> str:
    response: Any = getattr(exc, "response", {}) or {}
    return str(response.get("Error", {}).get("Code", type(exc).__name__))


def _s3_probes(store: ObjectStore, s3: Any, scratch: str) -> list[ProbeFn]:
    """The probes only raw S3 requests can run (versions, checksums, batch and multipart)."""
    p = _S3Probes(store, s3, scratch)
    return [p.versioned_delete, p.checksum_rejection, p.batch_delete_etag, p.multipart_if_none_match,
            p.multipart_if_match, p.versioning]


class _S3Probes:
    """The S3-only probes, each a method (its name is the probe's name)."""

    def __init__(self, store: ObjectStore, s3: Any, scratch: str) -> None:
        self.store, self.s3, self.scratch = store, s3, scratch
        self.client, self.bucket = s3.client, s3.bucket

    def _versioning_status(self) -> str:
        return str(self.client.get_bucket_versioning(Bucket=self.bucket).get("Status", "Disabled"))

    def versioning(self) -> Probe:
        status = self._versioning_status()
        return Probe(name="versioning", title="versioning", honoured=status == "Enabled",
                     needed_by="info", detail=f"bucket versioning: {status}")

    def versioned_delete(self) -> Probe:
        if self._versioning_status() != "Enabled":
            return Probe(name="versioned_delete", title="delete by version id", honoured=False,
                         needed_by="gc", detail="not probed: the bucket is not versioned")
        key = f"{self.scratch}/versions"
        first = self.store.put_if_absent(key, b"v1")
        second = self.store.put_if_match(key, b"v2", first.etag)
        if not (first.version_id and second.version_id):
            return Probe(name="versioned_delete", title="delete by version id", honoured=False,
                         needed_by="gc", detail="writes returned no version ids")
        self.store.delete_version(key, second.version_id)
        ok = self.store.get(key) == b"v1"
        return Probe(name="versioned_delete", title="delete by version id", honoured=ok,
                     needed_by="gc", detail="exactly one version removed" if ok
                     else "deleting one version did not restore the previous one")

    def checksum_rejection(self) -> Probe:
        from botocore.exceptions import ClientError

        key = self.s3.full_key(f"{self.scratch}/badsum")
        wrong = b64_sha256(b"not the body")
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=b"the body",
                                   ChecksumSHA256=wrong)
            ok, detail = False, "a PUT with a wrong ChecksumSHA256 was stored (not verified)"
        except ClientError as exc:
            ok, detail = True, f"wrong ChecksumSHA256 refused ({_code(exc)})"
        return Probe(name="checksum_rejection", title="SHA-256 checksum rejection", honoured=ok,
                     needed_by="integrity", detail=detail)

    def batch_delete_etag(self) -> Probe:
        key = f"{self.scratch}/batch"
        self.store.put_if_absent(key, b"x")
        answer = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": [
            {"Key": self.s3.full_key(key), "ETag": '"00000000000000000000000000000000"'}]})
        try:
            self.store.head(key)
            kept = True
        except NotFound:
            kept = False
        errors = [str(e.get("Code")) for e in answer.get("Errors", [])]
        # Only a precondition answer proves the ETag was checked: an AccessDenied (say,
        # from a bucket policy) would also keep the object without proving anything.
        refused = kept and any(code in {"PreconditionFailed", "412"} for code in errors)
        # Positive control: the right ETag must delete, or the batch path is unusable.
        deleted_with_right_etag = False
        if refused:
            right = self.store.head(key).etag
            self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": [
                {"Key": self.s3.full_key(key), "ETag": right}]})
            try:
                self.store.head(key)
            except NotFound:
                deleted_with_right_etag = True
        ok = refused and deleted_with_right_etag
        if ok:
            detail = f"wrong ETag refused per object ({', '.join(errors)}); right ETag deleted"
        elif not kept:
            detail = "DeleteObjects deleted an object despite a wrong per-object ETag"
        elif not refused:
            detail = f"object kept but not by a precondition ({', '.join(errors) or 'no error'})"
        else:
            detail = "a batch delete with the right ETag did not delete"
        return Probe(name="batch_delete_etag", title="batch DeleteObjects with per-object ETag",
                     honoured=ok, needed_by="info", detail=detail)

    def _multipart(self, name: str, title: str, condition: dict[str, str], key: str) -> Probe:
        from botocore.exceptions import ClientError

        client, bucket, full = self.client, self.bucket, self.s3.full_key(key)
        upload = client.create_multipart_upload(Bucket=bucket, Key=full, ChecksumAlgorithm="SHA256")
        upload_id = upload["UploadId"]
        body = b"multipart probe"
        try:
            part = client.upload_part(Bucket=bucket, Key=full, UploadId=upload_id, PartNumber=1,
                                      Body=body, ChecksumSHA256=b64_sha256(body))
            parts = [{"PartNumber": 1, "ETag": part["ETag"], "ChecksumSHA256": b64_sha256(body)}]
            client.complete_multipart_upload(Bucket=bucket, Key=full, UploadId=upload_id,
                                             MultipartUpload={"Parts": parts}, **condition)
            ok, detail = False, "completion ignored the condition and replaced the object"
        except ClientError as exc:
            ok, detail = _code(exc) in ("PreconditionFailed", "NoSuchKey", "412"), (
                f"completion refused ({_code(exc)})")
        finally:
            # Completed, or already gone: then there is nothing pending to remove.
            with contextlib.suppress(ClientError):
                client.abort_multipart_upload(Bucket=bucket, Key=full, UploadId=upload_id)
        return Probe(name=name, title=title, honoured=ok, needed_by="large", detail=detail)

    def multipart_if_none_match(self) -> Probe:
        key = f"{self.scratch}/mp-create"
        self.store.put_if_absent(key, b"existing")
        return self._multipart("multipart_if_none_match", "If-None-Match on multipart completion",
                               {"IfNoneMatch": "*"}, key)

    def multipart_if_match(self) -> Probe:
        key = f"{self.scratch}/mp-replace"
        self.store.put_if_absent(key, b"existing")
        return self._multipart("multipart_if_match", "If-Match on multipart completion",
                               {"IfMatch": '"00000000000000000000000000000000"'}, key)


def cleanup(store: ObjectStore, s3: Any, scratch: str) -> None:
    """Remove every object, version and pending upload under the scratch prefix.

    Each step runs whatever the previous one did: a store without ListObjectVersions
    (many S3-compatible ones answer 501) must still lose its scratch objects through
    ListObjectsV2, and its pending uploads through ListMultipartUploads.
    """
    if s3 is None:
        _cleanup_step(scratch, "objects", lambda: _delete_local(store, scratch))
        return
    client, bucket, prefix = s3.client, s3.bucket, s3.full_key(scratch) + "/"

    def versions() -> None:
        for page in client.get_paginator("list_object_versions").paginate(
                Bucket=bucket, Prefix=prefix):
            for item in page.get("Versions", []) + page.get("DeleteMarkers", []):
                client.delete_object(Bucket=bucket, Key=item["Key"], VersionId=item["VersionId"])

    def objects() -> None:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                client.delete_object(Bucket=bucket, Key=item["Key"])

    def uploads() -> None:
        for page in client.get_paginator("list_multipart_uploads").paginate(
                Bucket=bucket, Prefix=prefix):
            for item in page.get("Uploads", []):
                client.abort_multipart_upload(Bucket=bucket, Key=item["Key"],
                                              UploadId=item["UploadId"])

    for name, step in (("versions", versions), ("objects", objects), ("uploads", uploads)):
        _cleanup_step(scratch, name, step)


def _delete_local(store: ObjectStore, scratch: str) -> None:
    for info in list(store.list(scratch + "/")):
        with contextlib.suppress(NotFound, PreconditionFailed, UnsupportedOperation):
            store.delete_if_match(info.key, info.etag)


def _cleanup_step(scratch: str, name: str, step: Callable[[], None]) -> None:
    try:
        step()
    except Exception as exc:  # noqa: BLE001 - a failed cleanup must not hide the report
        log.warning("doctor.cleanup_failed", prefix=scratch, step=name, error=type(exc).__name__)
