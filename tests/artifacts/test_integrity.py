"""Integrity and isolation: tampered bytes never come back; other sessions' ids are refused."""

from __future__ import annotations

import hashlib
import json

import pytest

from s3spill import keys
from s3spill.artifacts.index import META_INDEX_SHA256, ArtifactIndex
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.errors import IntegrityError, NotFound, SourceIdError
from s3spill.models import ArtifactReference
from s3spill.store import ObjectStore
from tests.artifacts.inspect_store import overwrite

#: Raw frames, so a tampered body can be written as plain bytes (compressed frames: see
#: test_artifacts_compression.py).
CONFIG = TransferConfig(index_chunk_size=64, artifact_compression="none")
DATA = b"".join(b"line %04d of the evidence\n" % i for i in range(400))


def _write(store: ObjectStore) -> tuple[ArtifactStore, ArtifactReference, str, str]:
    arts = ArtifactStore(store, CONFIG, session_id="S")
    ref = arts.write("S", DATA, "bash")
    return (
        arts,
        ref,
        keys.artifact_key(ref.session_hash, ref.name),
        keys.index_key(ref.session_hash, ref.name),
    )


def _all_reads_fail(store: ObjectStore, ref: ArtifactReference, offset: int = 200) -> None:
    fresh = ArtifactStore(store, CONFIG, session_id="S")  # no cached index
    with pytest.raises(IntegrityError, match=ref.source_id):
        fresh.read_page(ref.source_id, offset=offset, limit=5)
    with pytest.raises(IntegrityError, match=ref.source_id):
        fresh.grep(ref.source_id, "line")
    with pytest.raises(IntegrityError, match=ref.source_id):
        fresh.verify(ref.source_id)


def test_overwritten_body_same_size_is_detected(store: ObjectStore) -> None:
    """Flipping bytes in place (metadata kept) fails the chunk digest on read and on grep."""
    arts, ref, akey, _ = _write(store)
    arts.index(ref.source_id)  # verified and cached before the tampering
    meta = dict(store.head(akey).metadata)
    overwrite(store, akey, DATA.replace(b"line 0200", b"LINE 0200"), meta)
    _all_reads_fail(store, ref)
    with pytest.raises(IntegrityError):  # a cached index does not help the forged chunk
        arts.read_page(ref.source_id, offset=200, limit=5)
    # pages whose chunks are untouched still read: damage is reported where it is, not guessed at
    assert (
        arts.read_page(ref.source_id, offset=0, limit=2).lines[0].text
        == "line 0000 of the evidence"
    )


@pytest.mark.parametrize("body", [DATA[:-100], DATA + b"more\n", b""])
def test_overwritten_body_other_size_is_detected(store: ObjectStore, body: bytes) -> None:
    """A shortened, extended or emptied body no longer matches its index."""
    _, ref, akey, _ = _write(store)
    meta = dict(store.head(akey).metadata)
    overwrite(store, akey, body, meta)
    _all_reads_fail(store, ref)


def test_body_without_its_index_pin_is_detected(store: ObjectStore) -> None:
    """A body rewritten without metadata cannot name a trusted index."""
    _, ref, akey, _ = _write(store)
    overwrite(store, akey, DATA)
    _all_reads_fail(store, ref)


def test_forged_index_is_detected(store: ObjectStore) -> None:
    """A valid-looking index with other line tables fails where it lies: on the chunks it misdescribes."""
    _, ref, _, ikey = _write(store)
    forged = json.loads(store.get(ikey))
    forged["chunk_newlines"][0] -= 1
    forged["chunk_newlines"][1] += 1
    ArtifactIndex.model_validate(forged)  # still self-consistent
    overwrite(store, ikey, json.dumps(forged).encode())
    _all_reads_fail(store, ref, offset=0)


@pytest.mark.parametrize("damage", ["garbage", "missing-index-object"])
def test_damaged_index_is_detected(store: ObjectStore, damage: str) -> None:
    """Garbage in place of the index fails closed; without its commit record a body is not found."""
    _, ref, _, ikey = _write(store)
    if damage == "garbage":
        overwrite(store, ikey, b"{not json")
        _all_reads_fail(store, ref)
        return
    store.delete_if_match(ikey, store.head(ikey).etag)
    with pytest.raises(NotFound, match="never committed"):
        ArtifactStore(store, CONFIG, session_id="S").read_page(ref.source_id)


def test_a_version_1_artifact_still_reads(store: ObjectStore) -> None:
    """An artifact written the old way (index first, pinned by the body, raw body) reads and verifies."""
    _, ref, akey, ikey = _write(store)
    old = json.loads(store.get(ikey))
    for field in ("codec", "chunk_stored", "body_etag"):
        del old[field]
    old["schema_version"] = 1
    raw = json.dumps(old).encode()
    overwrite(store, ikey, raw)
    overwrite(store, akey, DATA, {META_INDEX_SHA256: hashlib.sha256(raw).hexdigest()})
    fresh = ArtifactStore(store, CONFIG, session_id="S")
    assert fresh.index(ref.source_id).schema_version == 1
    assert fresh.read_page(ref.source_id, offset=200, limit=1).lines[0].text == "line 0200 of the evidence"
    assert fresh.verify(ref.source_id).sha256 == ref.sha256
    overwrite(store, ikey, raw.replace(b'"tool": "bash"', b'"tool": "evil"'))
    with pytest.raises(IntegrityError, match="index does not match"):  # v1 pins the whole index
        ArtifactStore(store, CONFIG, session_id="S").read_page(ref.source_id)


def test_consistent_forgery_is_caught_by_full_verification(store: ObjectStore) -> None:
    """Body and index replaced together, claiming the old SHA-256: grep and verify still refuse."""
    _, ref, akey, ikey = _write(store)
    other = ArtifactStore(store, CONFIG, session_id="S").write(
        "S", DATA.replace(b"0200", b"XXXX"), "bash"
    )
    okey, oidx = (
        keys.artifact_key(other.session_hash, other.name),
        keys.index_key(other.session_hash, other.name),
    )
    overwrite(store, akey, store.get(okey), dict(store.head(okey).metadata))
    forged = json.loads(store.get(oidx))
    forged.update(name=ref.name, sha256=ref.sha256, created_at=ref.created_at.isoformat(),
                  body_etag=store.head(akey).etag)
    overwrite(store, ikey, json.dumps(forged).encode())
    fresh = ArtifactStore(store, CONFIG, session_id="S")
    with pytest.raises(IntegrityError, match="full SHA-256"):
        fresh.grep(ref.source_id, "XXXX")
    with pytest.raises(IntegrityError, match="full SHA-256"):
        fresh.verify(ref.source_id)


def test_missing_artifact_is_not_found(store: ObjectStore) -> None:
    """A well-formed id of this session with nothing behind it is NotFound, not IntegrityError."""
    arts = ArtifactStore(store, CONFIG, session_id="S")
    sid = keys.SourceId(keys.session_hash("S"), keys.new_artifact_name("bash"), "0" * 16)
    with pytest.raises(NotFound):
        arts.read_page(str(sid))


def test_other_sessions_ids_are_refused(store: ObjectStore) -> None:
    """A source id from session A is refused in session B, by id and by memory reference."""
    ref = ArtifactStore(store, CONFIG, session_id="A").write("A", DATA, "bash")
    b = ArtifactStore(store, CONFIG, session_id="B")
    for call in (
        lambda: b.read_page(ref.source_id),
        lambda: b.grep(ref.source_id, "x"),
        lambda: b.read_page(ref.for_memory()),
        lambda: b.resolve(ref),
    ):
        with pytest.raises(SourceIdError, match="does not belong to this session"):
            call()
    assert ArtifactStore(store, CONFIG).read_page(ref.source_id, session_id="A").lines


@pytest.mark.parametrize(
    "crafted",
    [
        "artifact:../..",
        "artifact:../../etc/passwd:x:y",
        "/etc/passwd",
        "../artifacts/x",
        "",
        "artifact:{sh}:{name}:{sha}:extra",
        "artifact:{sh}:{name}",
        "artifact:{sh}:../{name}:{sha}",
        "artifact:{other}:{name}:{sha}",
        "artifact:{sh}:{name}:{sha}/..",
        "ARTIFACT:{sh}:{name}:{sha}",
        "artifact:{sh}:{name}:{sha_upper}",
        "artifact:{sh}:{name}.idx:{sha}",
    ],
)
def test_crafted_ids_are_refused(store: ObjectStore, crafted: str) -> None:
    """Malformed, path-like, wrong-hash and extra-field ids never reach the store."""
    arts = ArtifactStore(store, CONFIG, session_id="S")
    ref = arts.write("S", DATA, "bash")
    text = crafted.format(
        sh=ref.session_hash,
        name=ref.name,
        sha=ref.sha256[:16],
        sha_upper=ref.sha256[:16].upper(),
        other=keys.session_hash("other"),
    )
    with pytest.raises(SourceIdError):
        arts.read_page(text)


def test_memory_reference_with_another_digest_is_refused(store: ObjectStore) -> None:
    """A memory reference resolves only through the same checks, including its full SHA-256."""
    arts = ArtifactStore(store, CONFIG, session_id="S")
    ref = arts.write("S", DATA, "bash")
    assert arts.read_page(ref.for_memory(), limit=1).lines[0].number == 1
    bad = ref.for_memory().model_copy(update={"sha256": ref.sha256[:16] + "0" * 48})
    with pytest.raises(IntegrityError):
        ArtifactStore(store, CONFIG, session_id="S").read_page(bad)
    worse = ref.for_memory().model_copy(update={"sha256": "f" * 64})
    with pytest.raises(SourceIdError):
        arts.read_page(worse)
