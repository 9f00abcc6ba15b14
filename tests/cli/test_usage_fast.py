"""The fast read's usage event is the one-shot recorder's: the same part, the same stored object."""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill import keys
from s3spill.cli import usage_fast
from s3spill.store import local, local_record, local_trailer
from s3spill.store.local import LocalStore
from s3spill.usage import events
from s3spill.usage.recorder import part_body

SID = "artifact:" + keys.session_hash("s") + ":20261202T061458Z-a44e5b345012-bench:7309f216cfd8210b"
TEXTS = ["[page]\n     1\tplain ascii\n[EOF]\n", "caf\u00e9 \u4e2d\u6587 \U0001f600 tab\there\n",
         "".join(map(chr, range(32))) + '"quoted" back\\slash \x7f \u2028\n', "",
         "".join(map(chr, range(32))) + '"ascii" back\\slash ~ only\n', 'ascii with a \x7f delete\n',
         "x" * (events.SHOWN_CAP + 5)]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("op", ["read", "grep"])
def test_the_part_is_the_recorders_byte_for_byte(text: str, op: str) -> None:
    """Facts in the recorder's order, orjson's bytes, the shown text capped (ids aside: random)."""
    facts = ({"size_bytes": 1_048_576, "total_lines": 11_651, "first_line": 5826, "last_line": 6229}
             if op == "read" else {"total_matches": 233})
    at = time.time()
    shash, pieces, facts_len, day = usage_fast._part("s", SID, op, text, facts, at)
    body = b"".join(pieces)
    make = events.read_event if op == "read" else events.grep_event
    event = make(keys.session_hash("s"), SID, f"s3spill {op}", text, facts, at=at)
    assert event is not None
    mine_id = json.loads(body.split(b"\n")[0])["id"]
    event.id = mine_id
    assert (body, facts_len) == part_body([event])
    assert shash == event.session and day == event.day


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(["a", " ", "\n", "\t", "\r", "\x00", "\x1b", "\x1f", "\x7f", '"',
                                               "\\", "/", "~", "\u00e9", "\u2028", "\ufeff", "\U0001f600"]),
                    max_size=80))
def test_the_shown_line_in_pieces_is_the_recorders_on_hostile_texts(text: str) -> None:
    """Quotes, backslashes, every kind of control byte, DEL and non-ASCII around the ASCII choice:
    the pieces joined are the recorder's part, byte for byte."""
    at = time.time()
    _, pieces, facts_len, _ = usage_fast._part("s", SID, "read", text, {}, at)
    event = events.read_event(keys.session_hash("s"), SID, "s3spill read", text, {}, at=at)
    assert event is not None
    event.id = json.loads(pieces[0])["id"]
    assert (b"".join(pieces), facts_len) == part_body([event])


@settings(max_examples=500, deadline=None)
@given(ns=st.one_of(st.integers(0, 253_402_300_799_999_999_999), st.sampled_from([
    0, 999, 1_000, 999_999_999, 1_000_000_000, 1_764_770_400_000_000_000, 1_764_770_400_000_000_999,
    1_764_770_400_000_001_000, 1_764_770_400_999_999_999, 253_402_300_799_999_999_999])))
def test_the_clock_reading_is_datetimes(ns: int) -> None:
    """At any clock reading (whole seconds, sub-microsecond rests and the last second of 9999
    included): the local store's ``datetime.now(UTC).isoformat()`` and local_record's microseconds."""
    when = local_record._EPOCH + timedelta(microseconds=ns // 1000)  # datetime floors the clock so
    assert usage_fast._stamped(ns) == (when.isoformat(), (when - local_record._EPOCH) // local_record._US)


def test_the_clock_is_the_one_datetime_now_reads() -> None:
    """Read between two ``datetime.now(UTC)``, the stamp falls between them, and reads back."""
    before = datetime.now(UTC)
    iso, micros = usage_fast._now()
    after = datetime.now(UTC)
    stamp = datetime.fromisoformat(iso)
    assert before <= stamp <= after and (stamp - local_record._EPOCH) // local_record._US == micros


def test_event_ids_are_one_prefix_and_a_counter_per_process() -> None:
    """As usage.events: 48 random bits, then a counter, so two events of a process never collide."""
    first = json.loads(usage_fast._part("s", SID, "read", "a", {}, time.time())[1][0])["id"]
    second = json.loads(usage_fast._part("s", SID, "read", "a", {}, time.time())[1][0])["id"]
    assert first[:12] == second[:12] and int(second[12:], 16) == int(first[12:], 16) + 1


def test_the_object_reads_back_as_the_stores_own_put(tmp_path: Path) -> None:
    """Trailer, listing record, modes, lock stripe, no temporary left: what put_if_absent leaves."""
    store = LocalStore(tmp_path / "store")
    usage_fast.record_read(str(store.root), "s", SID, "read", TEXTS[1], {"size_bytes": 9})
    [info] = list(store.list(keys.usage_prefix(keys.session_hash("s"))))
    body = store.get(info.key)
    facts_len = info.key.rpartition("-f")[2].removesuffix(".ndjson")
    assert int(facts_len) == len(body.split(b"\n")[0]) + 1
    assert json.loads(body.split(b"\n")[1])["shown"] == TEXTS[1]
    twin = "v1/twin.ndjson"
    store.put_if_absent(twin, body, content_type="application/x-ndjson")
    mine, theirs = store.head(info.key), store.head(twin)
    assert (mine.size, mine.sha256, set(mine.metadata)) == (theirs.size, theirs.sha256, set(theirs.metadata))
    path = Path(store.root, "objects", info.key)
    trailer = local_trailer.read_from(path.open("rb"), info.key)
    assert trailer["content_type"] == "application/x-ndjson" and trailer["etag"] == mine.etag
    record = local_record.read(path, info.key)
    assert record is not None and (record.etag, record.size, record.last_modified) == (
        mine.etag, mine.size, mine.last_modified)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not list(Path(store.root, "tmp").iterdir())
    stripe = LocalStore._stripe(info.key)
    assert Path(store.root, "locks", f"{stripe:02d}.lock").exists()


def test_an_erased_session_and_a_text_with_no_utf8_form_go_the_recorders_way(tmp_path: Path) -> None:
    """A sealed session keeps nothing; a lone surrogate loses the event (orjson refuses it)."""
    store = LocalStore(tmp_path / "store")
    usage_fast.record_read(str(store.root), "s", SID, "read", "bad \ud800", {})
    assert not list(store.list(keys.usage_prefix(keys.session_hash("s"))))
    store.put_if_absent(keys.erasure_key(keys.session_hash("s")), b"{}")
    usage_fast.record_read(str(store.root), "s", SID, "read", "fine", {})
    assert not list(store.list(keys.usage_prefix(keys.session_hash("s"))))


@pytest.mark.parametrize("values", [(b"\x00" * 16, 0, 0, 0, 0),
                                    (b"\xff" * 16, 2**64 - 1, 2**64 - 1, -2**63, 2**63 - 1),
                                    (bytes(range(16)), 290, 2422, 1764689658123456789, -1)])
def test_its_listing_record_is_local_records_layout(values: tuple[bytes, int, int, int, int]) -> None:
    """The record's bytes, built without ``struct``, are ``struct.pack(">B16sQQqq", ...)``'s."""
    import struct

    assert usage_fast._record(*values) == struct.pack(">B16sQQqq", local_record._VERSION, *values)


def test_its_constants_are_the_librarys() -> None:
    """Each spelled-out constant equals the one it stands for."""
    assert usage_fast._SESSIONS == keys.SESSIONS and usage_fast._ERASURES == keys.ERASURES
    assert (usage_fast.SHOWN_CAP, usage_fast.SCHEMA_VERSION) == (events.SHOWN_CAP, events.SCHEMA_VERSION)
    assert usage_fast._MAGIC == local_trailer.MAGIC and usage_fast._XATTR == local_record.XATTR
    assert usage_fast._RECORD_VERSION == local_record._VERSION
    assert usage_fast._LOCK_STRIPES == local._LOCK_STRIPES
    assert usage_fast._no_record() == local_record._NO_RECORD and errno.ENODATA in usage_fast._no_record()
    assert os.path.basename(keys.erasure_key(keys.session_hash("s"))) == keys.session_hash("s") + ".json"
