"""Key layout and source-id parsing."""

import pytest

from s3spill import keys
from s3spill.errors import InvalidKey, SourceIdError


def test_layout_round_trips_through_parse_key() -> None:
    """Every key the layout builds is classified back to its kind and session."""
    sh = keys.session_hash("session-1")
    name = keys.new_artifact_name("bash")
    assert keys.parse_key(keys.artifact_key(sh, name)) == keys.ParsedKey("artifact", sh, name)
    assert keys.parse_key(keys.index_key(sh, name)) == keys.ParsedKey("index", sh, name)
    assert keys.parse_key(keys.manifest_key(sh)).kind == "manifest"
    assert keys.parse_key(keys.segment_key(sh, 0, 99)).kind == "segment"
    assert keys.parse_key(keys.owner_slot_key(sh, "tx-1")).kind == "owner"
    assert keys.parse_key("v1/sessions/../x").kind == "unknown"


@pytest.mark.parametrize(
    "bad", ["", "/abs", "a//b", "a/../b", "..", "a/./b", "a\x00b", "%2e%2e/x", "é", "a/"]
)
def test_validate_key_refuses_escapes(bad: str) -> None:
    """Keys that could leave the prefix are refused outright."""
    with pytest.raises(InvalidKey):
        keys.validate_key(bad)


def test_tool_token_is_safe_for_hostile_names() -> None:
    """Hostile tool names reduce to the key alphabet and stay distinguishable."""
    a, b = keys.tool_token("../../etc/passwd"), keys.tool_token("../../etc/shadow")
    assert a != b
    for tok in (a, b, keys.tool_token("x" * 10_000), keys.tool_token("🔥")):
        assert len(tok) <= 24
        keys.validate_key(tok)


def test_source_id_refuses_foreign_and_malformed() -> None:
    """A source id parses strictly and belongs to exactly one session."""
    sh = keys.session_hash("A")
    sid = keys.SourceId(sh, keys.new_artifact_name("bash"), "0" * 16)
    assert keys.SourceId.parse(str(sid)) == sid
    sid.require_session("A")
    with pytest.raises(SourceIdError):
        sid.require_session("B")
    for bad in ["artifact:../..", f"artifact:{sh}:x:y", f"{sid}:extra", "/etc/passwd", ""]:
        with pytest.raises(SourceIdError):
            keys.SourceId.parse(bad)
