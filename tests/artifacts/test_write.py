"""Writing artifacts: one pass, create-once, collisions retried under new names, no overwrite."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import pytest

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.errors import AlreadyExists
from s3spill.models import ArtifactReference
from s3spill.store import ObjectStore
from s3spill.store.commit import COMMIT_SIDECAR, META_COMMIT
from tests.artifacts.inspect_store import stored_content

CONFIG = TransferConfig(index_chunk_size=64)


def test_write_returns_a_complete_reference(store: ObjectStore) -> None:
    """The reference names size, lines, full SHA-256, tool and a bounded summary; no key or path."""
    arts = ArtifactStore(store, CONFIG, session_id="S")
    data = b"\n  first line here\nsecond\r\nthird"
    ref = arts.write("S", data, "bash", call_id="call-1", label="make test")
    assert (ref.size_bytes, ref.line_count, ref.tool, ref.call_id) == (
        len(data),
        4,
        "bash",
        "call-1",
    )
    assert ref.summary == "first line here (32 bytes, 4 lines)"
    assert ref.source_id == f"artifact:{keys.session_hash('S')}:{ref.name}:{ref.sha256[:16]}"
    assert arts.reference(ref.source_id) == ref
    mem = ref.for_memory().model_dump()
    assert (
        "content" not in mem
        and "key" not in str(mem)
        and data.decode(errors="replace") not in str(mem)
    )
    akey = keys.artifact_key(ref.session_hash, ref.name)
    assert stored_content(store, akey) == data
    assert store.head(akey).metadata[META_COMMIT] == COMMIT_SIDECAR


@pytest.mark.parametrize("shape", ["bytes", "file", "chunks", "empty-iter"])
def test_every_body_shape_is_consumed_once_and_stored_exactly(
    store: ObjectStore, shape: str
) -> None:
    """Bytes, a binary file and a one-shot generator are all stored byte for byte."""
    data = b"".join(b"row %d \xff\n" % i for i in range(5000)) if shape != "empty-iter" else b""
    consumed = []

    def gen() -> Iterator[bytes]:
        for i in range(0, len(data), 777):
            consumed.append(i)
            yield data[i : i + 777]

    body = {"bytes": data, "file": io.BytesIO(data), "chunks": gen(), "empty-iter": gen()}[shape]
    arts = ArtifactStore(store, CONFIG, session_id="S")
    ref = arts.write("S", body, "tool")
    assert stored_content(store, keys.artifact_key(ref.session_hash, ref.name)) == data
    assert arts.verify(ref.source_id).sha256 == ref.sha256
    if shape == "chunks":
        assert consumed == list(range(0, len(data), 777))  # exactly one pass


def test_hostile_tool_names_never_reach_the_key(store: ObjectStore) -> None:
    """Tool, call id and label are data, not key segments."""
    arts = ArtifactStore(store, CONFIG, session_id="S")
    ref = arts.write("S", b"x", "../../etc/passwd", call_id="/abs", label="\x00")
    assert ref.tool == "../../etc/passwd"
    keys.check_artifact_name(ref.name)
    assert [o.key for o in store.list("")] == sorted(
        [keys.artifact_key(ref.session_hash, ref.name), keys.index_key(ref.session_hash, ref.name)]
    )


class _Repeating:
    """A broken name generator: the first ``times`` calls repeat one name (a restarted counter)."""

    def __init__(self, times: int) -> None:
        self.fixed = keys.new_artifact_name("bash")
        self.left = times
        self.lock = threading.Lock()
        self.real = keys.new_artifact_name

    def __call__(self, tool: str | None, now: object = None) -> str:
        with self.lock:
            if self.left > 0:
                self.left -= 1
                return self.fixed
        return self.real(tool)


def test_colliding_names_never_overwrite(
    store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers forced onto one name both end with intact, distinct artifacts."""
    gen = _Repeating(times=2)
    monkeypatch.setattr(keys, "new_artifact_name", gen)
    arts = ArtifactStore(store, CONFIG, session_id="S")
    first = arts.write("S", (c for c in [b"first writer\n" * 100]), "bash")
    second = arts.write("S", (c for c in [b"second writer\n" * 100]), "bash")
    assert first.name == gen.fixed and second.name != gen.fixed
    assert arts.verify(first.source_id).sha256 == first.sha256
    assert arts.verify(second.source_id).sha256 == second.sha256
    assert stored_content(store, keys.artifact_key(first.session_hash, first.name)) == (
        b"first writer\n" * 100)


def test_concurrent_writers_on_one_name_all_survive(
    race_store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight threads drawing one name: one keeps it; all eight artifacts are intact and distinct."""
    store = race_store
    gen = _Repeating(times=8)
    monkeypatch.setattr(keys, "new_artifact_name", gen)
    arts = ArtifactStore(store, CONFIG, session_id="S")
    refs: list[ArtifactReference] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def writer(i: int) -> None:
        body = (b"writer %d\n" % i) * 500
        barrier.wait()
        try:
            refs.append(arts.write("S", iter([body[:100], body[100:]]), "bash"))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(refs) == 8 and len({r.name for r in refs}) == 8
    assert sum(r.name == gen.fixed for r in refs) == 1
    for r in refs:
        assert ArtifactStore(store, CONFIG, session_id="S").verify(r.source_id).sha256 == r.sha256


def test_a_foreign_body_under_a_won_name_is_left_alone(
    store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stray object at the body key is not overwritten; the write moves to a fresh name."""
    gen = _Repeating(times=1)
    monkeypatch.setattr(keys, "new_artifact_name", gen)
    shash = keys.session_hash("S")
    store.put_if_absent(keys.artifact_key(shash, gen.fixed), b"foreign")
    ref = ArtifactStore(store, CONFIG, session_id="S").write("S", b"mine", "bash")
    assert ref.name != gen.fixed
    assert store.get(keys.artifact_key(shash, gen.fixed)) == b"foreign"


def test_gives_up_after_bounded_attempts(
    store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generator stuck on one name ends in AlreadyExists, not a loop or an overwrite."""
    fixed = keys.new_artifact_name("bash")
    monkeypatch.setattr(keys, "new_artifact_name", lambda tool, now=None: fixed)
    arts = ArtifactStore(store, CONFIG, session_id="S")
    arts.write("S", b"one", "bash")
    with pytest.raises(AlreadyExists):
        arts.write("S", b"two", "bash")
    assert stored_content(store, keys.artifact_key(keys.session_hash("S"), fixed)) == b"one"
