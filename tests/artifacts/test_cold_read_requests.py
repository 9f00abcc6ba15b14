"""A page read on S3: the index, then the chunk with If-Match on the ETag the index commits."""

from __future__ import annotations

import pytest

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.errors import ArtifactNotFound, IntegrityError
from s3spill.store.s3.store import S3Store
from s3spill.testing import record_operations
from tests.artifacts.inspect_store import overwrite

CONFIG = TransferConfig(index_chunk_size=64 * 1024)
DATA = b"".join(b"%08d an ordinary log line of moderate length here\n" % i for i in range(40_000))


def _written(store: S3Store) -> tuple[str, str]:
    ref = ArtifactStore(store, CONFIG, session_id="S").write("S", DATA, "bash")
    return ref.source_id, keys.artifact_key(ref.session_hash, ref.name)


def test_a_cold_page_costs_two_requests_and_a_warm_one_in_another_chunk_one(server_store: S3Store) -> None:
    """Cold: GET index + GET chunk (no HEAD); the next page, in another chunk: one GET."""
    source_id, _ = _written(server_store)
    sent = record_operations(server_store.client)
    arts = ArtifactStore(server_store, CONFIG, session_id="S")
    page = arts.read_page(source_id, offset=30_000, limit=100)
    assert sent == ["GetObject", "GetObject"] and page.lines[0].text.startswith("00030000")
    arts.read_page(source_id, offset=0, limit=100)
    assert sent[2:] == ["GetObject"]


def test_a_body_replaced_after_its_index_fails_closed(server_store: S3Store) -> None:
    """Other bytes under the body's key: the If-Match GET fails, the read raises IntegrityError."""
    source_id, akey = _written(server_store)
    overwrite(server_store, akey, DATA.replace(b"ordinary", b"ORDINARY"))
    with pytest.raises(IntegrityError):
        ArtifactStore(server_store, CONFIG, session_id="S").read_page(source_id, offset=100, limit=10)


def test_a_deleted_body_reads_as_not_found_in_the_usual_words(server_store: S3Store) -> None:
    """The index is there, the body is gone: the page read says so, as the HEAD path always did."""
    source_id, akey = _written(server_store)
    server_store.client.delete_object(Bucket=server_store.bucket, Key=server_store.full_key(akey))
    with pytest.raises(ArtifactNotFound, match="body is gone"):
        ArtifactStore(server_store, CONFIG, session_id="S").read_page(source_id, offset=100, limit=10)
