"""A value with a trailing newline is refused by every key and id check (``$`` matched before it)."""

from __future__ import annotations

import pytest

from s3spill import keys
from s3spill.errors import InvalidKey, SourceIdError
from s3spill.store.base import validate_key

SHASH = "0123456789abcdef0123456789abcdef"
NAME = "20261203T061000Z-0123456789ab-bash"
SHA64 = "ab" * 32


def test_validate_key_refuses_a_segment_ending_in_a_newline() -> None:
    """The store's key check refuses ``a\\n/b`` and a last segment ending in a newline."""
    for key in ("a\n/b", "a/b\n", f"v1/sessions/{SHASH}\n/artifacts/{NAME}"):
        with pytest.raises(InvalidKey):
            validate_key(key)


def test_session_hash_and_name_checks_refuse_a_trailing_newline() -> None:
    """``check_session_hash`` and ``check_artifact_name`` refuse a value that ends in a newline."""
    assert keys.check_session_hash(SHASH) == SHASH
    with pytest.raises(InvalidKey):
        keys.check_session_hash(SHASH + "\n")
    with pytest.raises(InvalidKey):
        keys.check_artifact_name(NAME + "\n")
    with pytest.raises(InvalidKey):
        keys.artifact_key(SHASH + "\n", NAME)


def test_source_id_with_a_newline_inside_is_refused() -> None:
    """A model-sent source id with a newline before an inner colon is refused, not parsed."""
    good = f"artifact:{SHASH}:{NAME}:0123456789abcdef"
    assert str(keys.SourceId.parse(good)) == good
    for bad in (f"artifact:{SHASH}\n:{NAME}:0123456789abcdef", f"artifact:{SHASH}:{NAME}\n:0123456789abcdef"):
        with pytest.raises(SourceIdError):
            keys.SourceId.parse(bad)


def test_digest_and_scope_checks_refuse_a_trailing_newline() -> None:
    """Segment, live, usage and GC-lock keys refuse digests and scopes that end in a newline."""
    with pytest.raises(InvalidKey):
        keys.segment_key(SHASH, 1, 2, SHA64 + "\n")
    with pytest.raises(InvalidKey):
        keys.live_segment_key(SHASH, NAME, 1, SHA64 + "\n")
    with pytest.raises(InvalidKey):
        keys.usage_day_key(SHASH, "2026-12-03", SHA64 + "\n")
    with pytest.raises(InvalidKey):
        keys.gc_lock_key("all\n")


def test_parse_key_classifies_newline_leaves_as_unknown() -> None:
    """A listed key whose leaf ends in a newline is ``unknown`` (GC leaves it), never an artifact."""
    assert keys.parse_key(f"v1/sessions/{SHASH}/artifacts/{NAME}").kind == "artifact"
    for leaf in (NAME + "\n", NAME + keys.INDEX_SUFFIX + "\n"):
        assert keys.parse_key(f"v1/sessions/{SHASH}/artifacts/{leaf}").kind == "unknown"
