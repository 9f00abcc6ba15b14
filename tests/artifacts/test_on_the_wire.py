"""Artifacts over real HTTP (the serialized moto server): cost measured on the wire, tampering
through boto3, concurrent writers, and the CLI against an s3:// URL."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.cli import main
from s3spill.config import TransferConfig
from s3spill.errors import IntegrityError
from s3spill.models import ArtifactReference
from s3spill.store.s3.store import S3Store
from s3spill.testing import EmbeddedS3
from tests.artifacts.inspect_store import overwrite

pytestmark = pytest.mark.slow
CHUNK = 64 * 1024
CONFIG = TransferConfig(index_chunk_size=CHUNK)


class WireBytes:
    """Counts the body bytes of every GetObject response, from botocore's own events."""

    def __init__(self, client: Any) -> None:
        self.bytes = 0
        self.calls: list[str] = []
        client.meta.events.register("after-call.s3.*", self._after)

    def _after(self, http_response: Any, model: Any, **_: Any) -> None:
        self.calls.append(model.name)
        if model.name == "GetObject":
            self.bytes += int(http_response.headers.get("content-length", 0))

    def reset(self) -> None:
        self.bytes = 0
        self.calls.clear()


def test_deep_page_read_on_the_wire(server_store: S3Store) -> None:
    """Over HTTP, a deep page read of ~6 MB transfers at most page bytes + 2 chunks + index."""
    data = b"".join(b"%08d an ordinary log line of moderate length here\n" % i for i in range(120_000))
    ref = ArtifactStore(server_store, CONFIG, session_id="S").write("S", data, "bash")
    index_size = len(server_store.get(keys.index_key(ref.session_hash, ref.name)))
    wire = WireBytes(server_store.client)
    page = ArtifactStore(server_store, CONFIG, session_id="S").read_page(ref.source_id, offset=90_000)
    assert data[page.byte_start : page.byte_end] == page.raw()
    assert wire.bytes <= (page.byte_end - page.byte_start) + 2 * CHUNK + index_size
    assert wire.calls == ["GetObject", "GetObject"]  # the index, then the chunk with If-Match


def test_boto3_overwrites_are_detected(server_store: S3Store) -> None:
    """An unconditional boto3 put over the body, then over the index, makes reads fail closed."""
    data = b"".join(b"evidence line %05d\n" % i for i in range(5000))
    ref = ArtifactStore(server_store, CONFIG, session_id="S").write("S", data, "bash")
    akey = keys.artifact_key(ref.session_hash, ref.name)
    meta = dict(server_store.head(akey).metadata)
    overwrite(server_store, akey, data.replace(b"04000", b"0400X"), meta)
    fresh = ArtifactStore(server_store, CONFIG, session_id="S")
    with pytest.raises(IntegrityError, match=ref.source_id):
        fresh.read_page(ref.source_id, offset=3999, limit=3)
    with pytest.raises(IntegrityError, match=ref.source_id):
        fresh.grep(ref.source_id, "0400X")
    second = ArtifactStore(server_store, CONFIG, session_id="S").write("S", data, "bash")
    ikey = keys.index_key(second.session_hash, second.name)
    forged = json.loads(server_store.get(ikey))
    forged["chunk_sha256"] = ["0" * 64] * len(forged["chunk_sha256"])  # ...index forged
    overwrite(server_store, ikey, json.dumps(forged).encode())
    with pytest.raises(IntegrityError, match="does not match its index"):
        ArtifactStore(server_store, CONFIG, session_id="S").read_page(second.source_id)


def test_concurrent_writers_on_one_name_over_http(
    server_store: S3Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six writers drawing one name against a real server: six intact, distinct artifacts."""
    fixed = keys.new_artifact_name("bash")
    real = keys.new_artifact_name
    lock, left = threading.Lock(), [6]

    def repeating(tool: str | None, now: object = None) -> str:
        with lock:
            if left[0]:
                left[0] -= 1
                return fixed
        return real(tool)

    monkeypatch.setattr(keys, "new_artifact_name", repeating)
    arts = ArtifactStore(server_store, CONFIG, session_id="S")
    refs: list[ArtifactReference] = []
    barrier = threading.Barrier(6)

    def writer(i: int) -> None:
        barrier.wait()
        refs.append(arts.write("S", iter([b"writer %d\n" % i] * 300), "bash"))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({r.name for r in refs}) == 6 and sum(r.name == fixed for r in refs) == 1
    for r in refs:
        assert ArtifactStore(server_store, CONFIG, session_id="S").verify(r.source_id).sha256 == r.sha256


def test_cli_against_an_s3_url(
    moto_server: EmbeddedS3,
    server_store: S3Store,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """spill, read and a tampered read through `s3://` with the standard AWS environment."""
    for name, value in moto_server.env().items():
        monkeypatch.setenv(name, value)
    url = server_store.url
    data = b"".join(b"row %d\n" % i for i in range(3000))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["--store", url, "--session", "S", "spill"]) == 0
    sid = capsysbinary.readouterr().out.splitlines()[0].decode()
    assert main(["--store", url, "--session", "S", "read", sid, "--offset", "2998"]) == 0
    assert b"  3000\trow 2999\n[EOF" in capsysbinary.readouterr().out
    parsed = keys.SourceId.parse(sid)
    akey = keys.artifact_key(parsed.session_hash, parsed.name)
    overwrite(
        server_store,
        akey,
        data.replace(b"row 2999", b"row 9999"),
        dict(server_store.head(akey).metadata),
    )
    assert main(["--store", url, "--session", "S", "read", sid, "--offset", "2998"]) == 5  # ExitCode.CORRUPT
    out, err = capsysbinary.readouterr()
    assert out == b"" and b"IntegrityError" in err and sid.encode() in err
