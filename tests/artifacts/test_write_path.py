"""The one-pass write path: no spool, the index commits the body, zstd frames per chunk."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import MiB
from s3spill.context.policy import SpillPolicy
from s3spill.errors import DanglingReference, IntegrityError, StreamNotReplayable
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.leases.journal import LeaseJournal
from s3spill.models import ArtifactRetentionClaim
from s3spill.spill.spiller import Spiller
from s3spill.store import ObjectStore
from s3spill.store.commit import content_info
from s3spill.store.s3.store import S3Store
from s3spill.testing import drop_response_after_send, inject_http_errors
from tests.artifacts.inspect_store import CountingStore, overwrite, read_all, stored_content
from tests.conftest import TEST_CONFIG, Refuse
from tests.gc.aged_artifacts import later

CHUNK = 4096
TEXT = TEST_CONFIG.model_copy(update={"index_chunk_size": CHUNK})
RAW = TEXT.model_copy(update={"artifact_compression": "none"})


def _log(lines: int) -> bytes:
    return b"".join(b"2026-12-01T04:%02d:%02d INFO [worker-%d] step %d done (%d ms)\n"
                    % (i % 60, i % 60, i % 4, i, i % 997) for i in range(lines))


def _stream(data: bytes, piece: int = 100_000) -> Iterator[bytes]:
    for i in range(0, len(data), piece):
        yield data[i : i + piece]


@pytest.fixture
def no_spool(refuse: Refuse) -> None:
    """Any temporary file the write path might open fails the test."""
    refuse("the write path opened a temporary file", (tempfile, "TemporaryFile"),
           (tempfile, "SpooledTemporaryFile"), (tempfile, "NamedTemporaryFile"))


def test_a_large_one_shot_stream_goes_in_parts_without_a_spool(
    server_store: S3Store, no_spool: None
) -> None:
    """A stream above the multipart threshold is sent in parts from memory and reads back exactly."""
    data = os.urandom(13 * MiB)  # incompressible: the body itself needs three 5 MiB parts
    calls: list[str] = []
    server_store.client.meta.events.register(
        "before-send.s3.UploadPart", lambda **_: calls.append("part"))
    arts = ArtifactStore(server_store, TEXT, session_id="S")
    ref = arts.write("S", _stream(data), "bash")
    index = arts.index(ref.source_id)
    assert index.codec == "identity" and len(calls) == 3
    assert b"".join(arts.iter_verified(ref.source_id)) == data
    assert ref.sha256 == hashlib.sha256(data).hexdigest()


def test_a_large_compressed_stream_round_trips(moto_store: S3Store) -> None:
    """A text stream far above the threshold is stored as frames and verifies end to end."""
    data = _log(220_000)
    arts = ArtifactStore(moto_store, TEXT, session_id="S")
    ref = arts.write("S", _stream(data), "bash")
    index = arts.index(ref.source_id)
    akey = keys.artifact_key(ref.session_hash, ref.name)
    assert index.codec == "zstd" and index.stored_size == moto_store.head(akey).size
    assert b"".join(arts.iter_verified(ref.source_id)) == data
    assert arts.verify(ref.source_id).sha256 == ref.sha256 == hashlib.sha256(data).hexdigest()


def test_the_index_is_the_commit_record(store: ObjectStore) -> None:
    """The body defers its digest to the index, which pins the body's ETag and holds the full SHA-256."""
    arts = ArtifactStore(store, TEXT, session_id="S")
    data = _log(3000)
    ref = arts.write("S", _stream(data, 999), "bash")
    akey = keys.artifact_key(ref.session_hash, ref.name)
    head = store.head(akey)
    record = json.loads(store.get(keys.index_key(ref.session_hash, ref.name)))
    assert record["schema_version"] == 2 and record["body_etag"] == head.etag
    assert record["sha256"] == ref.sha256
    assert content_info(store, head).sha256 == ref.sha256  # what the journal and GC see
    overwrite(store, akey, data, dict(head.metadata))
    assert content_info(store, store.head(akey)).sha256 is None  # another body: no digest


def test_a_claim_on_a_streamed_artifact_is_accepted(store: ObjectStore) -> None:
    """The lease journal verifies a claim against the digest in the commit record."""
    ref = ArtifactStore(store, TEXT, session_id="S").write("S", _stream(_log(2000)), "bash")
    journal = LeaseJournal(store, "S", TEXT)
    journal.prepare(ArtifactRetentionClaim(source_id=ref.source_id, sha256=ref.sha256), "tx-1")
    wrong = ArtifactRetentionClaim(source_id=ref.source_id, sha256=ref.sha256[:16] + "0" * 48)
    with pytest.raises(DanglingReference):
        journal.prepare(wrong, "tx-2")


def test_text_is_compressed_and_binary_is_not(store: ObjectStore) -> None:
    """Text is stored as zstd frames (much smaller); output with NUL bytes is stored raw."""
    arts = ArtifactStore(store, TEXT, session_id="S")
    text = _log(20_000)
    ref = arts.write("S", text, "bash")
    akey = keys.artifact_key(ref.session_hash, ref.name)
    assert store.head(akey).size * 5 < len(text)
    assert stored_content(store, akey) == text
    binary = os.urandom(50_000) + b"\0"
    bref = arts.write("S", binary, "cat")
    assert arts.index(bref.source_id).codec == "identity"
    assert store.get(keys.artifact_key(bref.session_hash, bref.name)) == binary


def test_every_frame_decodes_alone(store: ObjectStore) -> None:
    """Each chunk's frame is an independent zstd frame of exactly that chunk's raw bytes."""
    arts = ArtifactStore(store, TEXT, session_id="S")
    data = _log(5000)
    ref = arts.write("S", data, "bash")
    index = arts.index(ref.source_id)
    body = store.get(keys.artifact_key(ref.session_hash, ref.name))
    for k in range(index.chunk_count):
        start, end = index.stored_range(k)
        raw_start, raw_end = index.chunk_range(k)
        assert zstandard.ZstdDecompressor().decompress(body[start:end]) == data[raw_start:raw_end]


def test_compressed_pages_reproduce_the_bytes(store: ObjectStore) -> None:
    """Following the footers over a compressed artifact gives back every byte."""
    data = _log(3000) + "ünïcode ✓ line\n".encode() * 50 + b"\xff\xfe no newline"
    arts = ArtifactStore(store, TEXT, session_id="S")
    ref = arts.write("S", _stream(data, 777), "bash")
    raw, shown, _ = read_all(arts, ref.source_id, max_chars=8000, limit=200)
    assert raw == data and shown == data


def test_a_page_fetches_only_its_frames(store: ObjectStore) -> None:
    """A page in the middle reads the index and at most its own frames plus two, not the body."""
    counting = CountingStore(store)
    data = _log(40_000)
    ref = ArtifactStore(counting, TEXT, session_id="S").write("S", data, "bash")
    arts = ArtifactStore(counting, TEXT, session_id="S")
    index = arts.index(ref.source_id)
    counting.reset()
    page = arts.read_page(ref.source_id, offset=20_000, limit=50)
    assert data[page.byte_start : page.byte_end] == page.raw()
    first, last = page.byte_start // CHUNK, (page.byte_end - 1) // CHUNK
    allowed = sum(index.stored_range(k)[1] - index.stored_range(k)[0]
                  for k in range(max(0, first - 1), min(index.chunk_count, last + 2)))
    assert 0 < counting.bytes_read <= allowed
    assert counting.bytes_read < index.stored_size // 10


@pytest.mark.parametrize("damage", ["bit-flip", "truncated-frame"])
def test_a_corrupted_frame_is_an_integrity_error(store: ObjectStore, damage: str) -> None:
    """A damaged frame fails the page that needs it (IntegrityError); untouched frames still read."""
    arts = ArtifactStore(store, TEXT, session_id="S")
    data = _log(5000)
    ref = arts.write("S", data, "bash")
    index = arts.index(ref.source_id)  # cached: the ETag pin is not what catches this
    akey = keys.artifact_key(ref.session_hash, ref.name)
    body = bytearray(store.get(akey))
    k = index.chunk_count // 2
    start, end = index.stored_range(k)
    if damage == "bit-flip":
        body[(start + end) // 2] ^= 0x55
    else:
        body[start:end] = body[start : end - 7] + b"\0" * 7
    overwrite(store, akey, bytes(body), dict(store.head(akey).metadata))
    line = data[: index.chunk_range(k)[0] + 10].count(b"\n")
    with pytest.raises(IntegrityError, match=ref.source_id):
        arts.read_page(ref.source_id, offset=line, limit=1)
    with pytest.raises(IntegrityError, match=ref.source_id):
        arts.verify(ref.source_id)
    assert arts.read_page(ref.source_id, offset=0, limit=1).lines[0].text.startswith("2026-12-01")


def test_a_409_on_completing_a_one_shot_stream_fails_honestly(server_store: S3Store) -> None:
    """A stream cannot be sent twice: a 409 on completion is StreamNotReplayable, nothing committed."""
    arts = ArtifactStore(server_store, RAW, session_id="S")
    faults = inject_http_errors(server_store.client, "CompleteMultipartUpload", status=409)
    try:
        with pytest.raises(StreamNotReplayable):
            arts.write("S", _stream(os.urandom(11 * MiB)), "bash")
    finally:
        faults.remove()
    assert faults.fired == 1
    assert [o.key for o in server_store.list("")] == []
    listed = server_store.client.list_multipart_uploads(Bucket=server_store.bucket,
                                                        Prefix=server_store.prefix)
    assert listed.get("Uploads", []) == []  # aborted, no parts left behind


def test_the_spiller_degrades_on_a_409_at_completion(server_store: S3Store) -> None:
    """A Spiller whose large spill meets the 409 returns the preview saying it was NOT saved."""
    policy = SpillPolicy(store_deadline=30.0)
    spiller = Spiller(ArtifactStore(server_store, RAW, session_id="S"), "S", policy, journal=None)
    data = b"".join(b"%07d " % i + os.urandom(40).hex().encode() + b"\n" for i in range(130_000))
    faults = inject_http_errors(server_store.client, "CompleteMultipartUpload", status=409)
    try:
        result = spiller.externalize(_stream(data, 65536), "bash", "call-1")
    finally:
        faults.remove()
        spiller.close()
    assert not result.spilled and result.artifact is None
    assert result.degraded_reason and "StreamNotReplayable" in result.degraded_reason
    assert "could NOT be saved" in result.context_text and "artifact:" not in result.context_text
    assert not [o for o in server_store.list("") if o.key.endswith(".idx")]


def test_a_lost_answer_to_a_streamed_completion_is_read_back(server_store: S3Store) -> None:
    """The completion lands but its answer is lost: the put id found by HEAD makes it a win."""
    arts = ArtifactStore(server_store, RAW, session_id="S")
    data = os.urandom(11 * MiB)
    faults = drop_response_after_send(server_store.client, "CompleteMultipartUpload")
    try:
        ref = arts.write("S", _stream(data), "bash")
    finally:
        faults.remove()
    assert faults.fired == 1
    assert b"".join(arts.iter_verified(ref.source_id)) == data


def test_gc_deletes_an_orphaned_committed_artifact_and_keeps_a_claimed_one(
    store: ObjectStore, tmp_path: Path
) -> None:
    """GC reads a streamed artifact's digest from its commit record: claimed stays, orphan goes."""
    arts = ArtifactStore(store, TEXT, session_id="s1")
    orphan = arts.write("s1", _stream(_log(3000)), "bash")
    kept = arts.write("s1", _stream(_log(2000)), "bash")
    LeaseJournal(store, "s1").publish_reference(
        ArtifactRetentionClaim(source_id=kept.source_id, sha256=kept.sha256), lambda: None,
        transaction_id="tx-kept")
    policy = CleanupPolicy(dry_run=False)
    plan = plan_cleanup(store, CleanupScope(), policy, out=tmp_path / "p", now=later())
    statuses = {e.name: e.status for e in plan.entries() if e.object_kind == "artifact"}
    assert statuses == {orphan.name: "planned_delete", kept.name: "retained_referenced"}
    assert apply_cleanup(store, plan, now=later).counts["deleted"] == 1
    assert [o.key for o in store.list("") if "/artifacts/" in o.key] == sorted(
        [keys.artifact_key(kept.session_hash, kept.name), keys.index_key(kept.session_hash, kept.name)])
    assert arts.verify(kept.source_id).sha256 == kept.sha256
