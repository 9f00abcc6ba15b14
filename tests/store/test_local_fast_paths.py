"""The shortcuts of the local store's hot paths behave as the code they replace (issue 35)."""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from s3spill.errors import IntegrityError
from s3spill.gc.plan_rules import _name_time
from s3spill.keys import ParsedKey, artifact_key, index_key, parse_key, session_hash
from s3spill.store import local_trailer
from s3spill.store.base import ObjectInfo
from s3spill.store.local import LocalStore
from s3spill.store.local_batch import _read_all


def test_object_info_of_is_the_constructor() -> None:
    """``ObjectInfo.of`` and ``with_sha256`` give what the constructor and ``replace`` give:
    equal, frozen, the same fields."""
    stamp = datetime(2026, 12, 2, 13, 0, 0, 5, tzinfo=UTC)
    fast = ObjectInfo.of("k", 3, '"e"', stamp, None, None, {"m": "v"})
    slow = ObjectInfo(key="k", size=3, etag='"e"', last_modified=stamp, metadata={"m": "v"})
    assert fast == slow and repr(fast) == repr(slow)
    assert dataclasses.asdict(fast) == dataclasses.asdict(slow)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.size = 4  # type: ignore[misc]
    assert fast.with_sha256("a" * 64) == dataclasses.replace(slow, sha256="a" * 64)
    assert fast.with_sha256(None) == slow


@pytest.mark.parametrize("field,value", [
    ("etag", 5), ("etag", None), ("size", "3"), ("size", None), ("sha256", 7), ("last_modified", 1),
    ("last_modified", "yesterday"), ("metadata", []), ("metadata", None)])
def test_a_trailer_with_a_field_of_the_wrong_type_is_damaged(field: str, value: object) -> None:
    """Every field of the trailer is checked for its type, as the loop over ``_FIELDS`` did."""
    good = {"etag": '"e"', "size": 1, "sha256": None, "last_modified": "2026-12-02T13:00:00+00:00",
            "metadata": {}}
    raw = local_trailer.encode(good)
    assert local_trailer.parse(raw[:-local_trailer.TAIL.size], 10, "k")["size"] == 1
    bad = local_trailer.encode({**good, field: value})[:-local_trailer.TAIL.size]
    with pytest.raises(IntegrityError):
        local_trailer.parse(bad, 10, "k")
    del good[field]
    missing = local_trailer.encode(good)[:-local_trailer.TAIL.size]
    if field == "sha256":  # absent reads as None, as it always did (a streamed body has none)
        assert local_trailer.parse(missing, 10, "k").get("sha256") is None
        return
    with pytest.raises(IntegrityError):
        local_trailer.parse(missing, 10, "k")


def _old_name_time(name: str) -> datetime:
    stamp = name[:16]
    if len(stamp) != 16 or stamp[8] != "T" or stamp[15] != "Z" or not (stamp[:8] + stamp[9:15]).isdigit():
        raise ValueError("no stamp")
    return datetime(int(stamp[:4]), int(stamp[4:6]), int(stamp[6:8]), int(stamp[9:11]),
                    int(stamp[11:13]), int(stamp[13:15]), tzinfo=UTC)


@given(st.text(alphabet="0123456789", min_size=14, max_size=14), st.text(max_size=20))
def test_a_name_stamp_reads_as_the_six_integers_did(digits: str, tail: str) -> None:
    """Any 14 ASCII digits: the same date, or a ValueError for both (month 13, hour 24, ...)."""
    name = f"{digits[:8]}T{digits[8:]}Z-{tail}"
    try:
        expected = _old_name_time(name)
    except ValueError:
        with pytest.raises(ValueError):
            _name_time(name)
        return
    assert _name_time(name) == expected and _name_time(name).utcoffset() == expected.utcoffset()


def test_read_all_reads_to_the_end_whatever_fstat_said(tmp_path: Path) -> None:
    """One read when it returns exactly the size ``fstat`` gave; a file that grew, or a short
    read (a pipe here), is read on to its end."""
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read_all(fd, 10) == b"0123456789"
        os.lseek(fd, 0, os.SEEK_SET)
        assert _read_all(fd, 4) == b"0123456789"  # grew since the fstat
        os.lseek(fd, 0, os.SEEK_SET)
        assert _read_all(fd, 0) == b"0123456789"
    finally:
        os.close(fd)
    r, w = os.pipe()
    os.write(w, b"abc")
    os.close(w)
    try:
        assert _read_all(r, 10) == b"abc"  # short: read on until the end
    finally:
        os.close(r)


def test_an_empty_object_reads_back_in_a_batch(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put_if_absent("a/empty", b"")
    store.put_if_absent("a/full", b"x" * 70000)
    assert store.get_many(["a/empty", "a/full"]) == {"a/empty": b"", "a/full": b"x" * 70000}


def test_a_parsed_key_of_is_the_constructor() -> None:
    """The listing's artifact and sidecar keys parse to what the constructor builds."""
    shash = session_hash("s")
    name = "20261202T131012Z-0123456789ab-bash"
    assert parse_key(artifact_key(shash, name)) == ParsedKey("artifact", shash, name)
    assert parse_key(index_key(shash, name)) == ParsedKey("index", shash, name)
    assert repr(ParsedKey.of("index", shash, name)) == repr(ParsedKey("index", shash, name))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ParsedKey.of("index", shash, name).kind = "artifact"  # type: ignore[misc]


def test_walk_keys_lists_in_key_order_with_prefix_and_start(tmp_path: Path) -> None:
    """The one-generator walk lists what S3 would: every key with the prefix, after
    ``start_after``, in byte order (``a/x`` before ``a0``), whatever the nesting."""
    import random

    from s3spill.store.local_paths import walk_keys

    rng = random.Random(7)
    for _ in range(300):
        path = tmp_path.joinpath(*(rng.choice("ab0-") + rng.choice("ab0") for _ in range(rng.randint(1, 4))))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_text("x")
        except (FileExistsError, NotADirectoryError):
            pass  # an object where a directory would go: the layout cannot hold both
    (tmp_path / "empty").mkdir()
    every = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert list(walk_keys(tmp_path, "", "", None)) == every
    starts = [None, "", *rng.sample(every, 20), *(k[:rng.randint(0, len(k))] for k in rng.sample(every, 20))]
    for prefix in ["", "a", "ab/", "b0/a", "zz", *(k[:3] for k in every[:15])]:
        for start in starts:
            expected = [k for k in every if k.startswith(prefix) and (start is None or k > start)]
            assert list(walk_keys(tmp_path, "", prefix, start)) == expected, (prefix, start)
