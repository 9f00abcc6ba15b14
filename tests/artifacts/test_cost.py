"""Cost: a page read deep inside a large artifact transfers O(page), not O(artifact)."""

from __future__ import annotations

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.store import ObjectStore
from tests.artifacts.inspect_store import CountingStore

CHUNK = 64 * 1024


def test_deep_page_read_transfers_page_plus_two_chunks_plus_index(store: ObjectStore) -> None:
    """2000 lines from the middle of ~6 MB cost at most page bytes + 2 chunks + the index."""
    counting = CountingStore(store)
    data = b"".join(b"%08d some ordinary log line of moderate length\n" % i for i in range(120_000))
    writer = ArtifactStore(counting, TransferConfig(index_chunk_size=CHUNK), session_id="S")
    ref = writer.write("S", data, "bash")
    index_size = len(store.get(keys.index_key(ref.session_hash, ref.name)))
    for offset in (0, 60_000, 119_000):
        counting.reset()
        reader = ArtifactStore(counting, TransferConfig(index_chunk_size=CHUNK), session_id="S")
        page = reader.read_page(ref.source_id, offset=offset, limit=2000)
        assert data[page.byte_start : page.byte_end] == page.raw()
        page_bytes = page.byte_end - page.byte_start
        assert counting.bytes_read <= page_bytes + 2 * CHUNK + index_size, (
            offset,
            counting.bytes_read,
        )
        assert counting.bytes_read < len(data) / 20
        # a second read of the same artifact reuses the verified index: chunks only
        counting.reset()
        reader.read_page(ref.source_id, offset=offset + 10, limit=10)
        assert [op for op, _, _ in counting.requests] == ["get"] * len(counting.requests)
        assert counting.bytes_read <= 2 * CHUNK


def test_char_offset_deep_in_one_long_line_fetches_one_chunk(store: ObjectStore) -> None:
    """Continuing a 4 MB line at char 3,000,000 fetches the index and the page's chunks only."""
    counting = CountingStore(store)
    line = ("abcé" * 1_000_000).encode()
    arts = ArtifactStore(counting, TransferConfig(index_chunk_size=CHUNK), session_id="S")
    ref = arts.write("S", line, "bash")
    index_size = len(store.get(keys.index_key(ref.session_hash, ref.name)))
    counting.reset()
    reader = ArtifactStore(counting, TransferConfig(index_chunk_size=CHUNK), session_id="S")
    page = reader.read_page(ref.source_id, offset=0, char_offset=3_000_000, max_chars=2000)
    assert page.lines[0].text.startswith("abcé")
    assert page.byte_start == len(("abcé" * 750_000).encode())
    assert counting.bytes_read <= (page.byte_end - page.byte_start) + 2 * CHUNK + index_size
