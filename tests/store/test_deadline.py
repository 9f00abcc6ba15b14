"""The store's deadline bounds every request, against an endpoint that accepts and never answers."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.errors import StoreUnavailable
from s3spill.store.s3.store import S3Store

#: Short, so the test is quick; the default read timeout (20 s) is far above it on purpose.
DEADLINE = 5.0
TOLERANCE = 5.0


@pytest.fixture
def black_hole(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A local TCP port whose kernel completes every handshake and nobody ever reads or answers."""
    for name, value in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
                        "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def _artifacts(endpoint: str) -> ArtifactStore:
    store = S3Store("bucket", "p", config=TransferConfig(deadline=DEADLINE), endpoint_url=endpoint)
    return ArtifactStore(store, session_id="S")


def test_spill_gives_up_at_the_deadline(black_hole: str) -> None:
    """A write, and the put-id HEAD that tries to resolve it, end within the deadline ±5 s."""
    arts = _artifacts(black_hole)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        arts.write("S", b"some tool output\n" * 10, "bash")
    assert abs(time.monotonic() - started - DEADLINE) <= TOLERANCE


def test_read_gives_up_at_the_deadline(black_hole: str) -> None:
    """A page read against a silent endpoint ends within the deadline ±5 s."""
    arts = _artifacts(black_hole)
    sid = keys.SourceId(keys.session_hash("S"), keys.new_artifact_name("bash"), "0" * 16)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        arts.read_page(str(sid))
    assert abs(time.monotonic() - started - DEADLINE) <= TOLERANCE
