"""A huge payload's string spilled while stdin is read: the answer the spooled reading gives."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from s3spill.adapters import harness_hooks, hook_stream
from s3spill.adapters.hook_stream import SpooledPayload, read_payload, streamed_field
from s3spill.adapters.hook_streaming import stream_tool
from s3spill.artifacts.store import ArtifactStore
from s3spill.context.policy import SpillPolicy
from s3spill.keys import INDEX_SUFFIX
from s3spill.store.local import LocalStore
from tests.examples import examples

#: Pieces of a string body: every JSON escape, surrogate pairs, lone surrogates escaped and
#: as bytes (json.loads of bytes takes them), multi-byte characters, runs of backslashes.
BODY = st.lists(st.sampled_from([
    b"a", b"line\\n", b"\\\\", b'\\"', b"\\/", b"\\b", b"\\f", b"\\r", b"\\t", b"\\u00e9", b"\\u0000",
    b"\\u001b[0m", b"\\udce9", b"\\ud800", b"\\udfff", b"\\ud83d\\ude00", b"\\\\ud83d", b"\\\\\\\\u",
    b"\\\\\\\"", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80", b"x" * 9,
    b"error: failed\\n"]), min_size=1, max_size=60)
#: A body long enough to be spooled (over the patched LONG_BYTES) and over the hard cap.
LONG = 31_000
SID = re.compile(r"artifact:[0-9a-f]{32}:[^:\"\s]+:[0-9a-f]{16}")


class Trickle(io.RawIOBase):
    """stdin that hands out at most ``most`` bytes a read, as a pipe may."""

    def __init__(self, data: bytes, most: int) -> None:
        self.data, self.most, self.at = data, most, 0

    def read(self, n: int = -1) -> bytes:
        n = self.most if n < 0 else min(n, self.most)
        piece = self.data[self.at:self.at + n]
        self.at += len(piece)
        return piece


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Spool past 1,000 bytes, strings over 30,000 bytes are long, a 2,000-character hard cap."""
    monkeypatch.setattr(hook_stream, "SPOOL_BYTES", 1000)
    monkeypatch.setattr(hook_stream, "LONG_BYTES", 30_000)
    policy = harness_hooks.hook_policy

    def capped(harness: harness_hooks.Harness, server: str = "s3spill") -> SpillPolicy:
        return policy(harness, server).model_copy(update={"hard_cap_chars": 2000})

    monkeypatch.setattr(harness_hooks, "hook_policy", capped)
    yield


def _long(parts: list[bytes]) -> bytes:
    one = b"".join(parts)
    return one * (LONG // len(one) + 1)


def _answer(doc: bytes, store: LocalStore, read: int, *, stream: bool, session: str | None = None) -> bytes:
    pause = (lambda p, s: streamed_field(p, s) is not None) if stream else None
    raw = read_payload(b"", Trickle(doc, read), pause=pause)
    assert isinstance(raw, SpooledPayload) and raw.paused == stream  # streamed: paused at the string
    return harness_hooks.answer("claude-code", raw, lambda: store, session=session)


def _normal(out: bytes, store: LocalStore, session: str) -> tuple[str, list[bytes]]:
    """The answer with its source ids as SID, and what each names, in order."""
    text = out.decode()
    stored = [b"".join(ArtifactStore(store, session_id=session).iter_verified(sid))
              for sid in SID.findall(text)]
    return SID.sub("SID", text), stored


@settings(max_examples=examples(suite=15, thorough=60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(body=[b"\xed\xa0\x80", b"\xe2\x82\xac", b"a", b"\\\\\\\\u"], second=None, before=False, whole=False,
         call="after", big_input=False, piece=7, read=1)  # the kind detected from a prefix of another length
@given(body=BODY, second=st.one_of(st.none(), BODY), before=st.booleans(), whole=st.booleans(),
       call=st.sampled_from(["after", "before", None]), big_input=st.booleans(), piece=st.integers(7, 300),
       read=st.integers(1, 5000))
def test_the_streamed_answer_is_the_spooled_answer(
        small: None, tmp_path_factory: pytest.TempPathFactory, body: list[bytes], second: list[bytes] | None,
        before: bool, whole: bool, call: str | None, big_input: bool, piece: int, read: int) -> None:
    """Over payloads with escapes cut by every read and piece boundary, a second long string
    or none, a small field before the big one or none, ``tool_response`` a string or Bash's
    dict, the call id after it (Claude Code's order), before it or absent, and a long string
    before it that is not streamed (in ``tool_input``): the streamed answer is the spooled
    answer byte for byte (source ids aside), each artifact holds what the spooled one holds,
    and the streamed artifact's index has the call id."""
    hook_stream._PIECE = piece
    try:
        raw = _long(body)
        fields = b'"a": "small", ' if before else b""
        tail = b'"stderr": "' + (_long(second) if second else b"warn\\n") + b'", "interrupted": false'
        response = b'"' + raw + b'"' if whole else b"{" + fields + b'"stdout": "' + raw + b'", ' + tail + b"}"
        head = b'{"session_id": "s-1", "hook_event_name": "PostToolUse", "tool_name": "Bash", '
        ident = b'"tool_use_id": "toolu_9", '
        command = b"m" * LONG if big_input else b"make"
        doc = (head + (ident if call == "before" else b"")
               + b'"tool_input": {"command": "' + command + b'"}, '
               + b'"tool_response": ' + response + (b', "tool_use_id": "toolu_9"' if call == "after" else b"")
               + b"}")
        json.loads(doc)  # a valid payload
        store = LocalStore(tmp_path_factory.mktemp("store"))
        old = _answer(doc, store, read, stream=False)
        new = _answer(doc, store, read, stream=True)
        assert old and new
        assert _normal(new, store, "s-1") == _normal(old, store, "s-1")
        assert len(_artifacts(store.root)) == 2 * len(SID.findall(new.decode()))
        sid = SID.findall(new.decode())[0]
        assert ArtifactStore(store, session_id="s-1").index(sid).call_id == ("toolu_9" if call else None)
    finally:
        hook_stream._PIECE = hook_stream.PIECE


def _payload(stdout: bytes, **extra: Any) -> bytes:
    doc = {"session_id": "s-2", "hook_event_name": "PostToolUse", "tool_name": "Bash",
           "tool_response": {"stdout": "STDOUT", "stderr": ""}, **extra}
    return json.dumps(doc).encode().replace(b'"STDOUT"', b'"' + stdout + b'"')


def _artifacts(root: Path) -> list[Path]:
    """The committed artifacts under ``root`` (their indexes: a body alone is not one)."""
    return sorted(p for p in root.rglob(f"artifacts/*{INDEX_SUFFIX}") if p.is_file())


#: After the string turns long, far enough on that the read it turns long in does not end it.
FAR = b"x" * LONG + b"y" * 9000


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "spooled"])
@pytest.mark.parametrize("doc", [
    _payload(FAR)[:-10],  # cut off after the string
    _payload(FAR)[:LONG + 5000],  # cut off inside it
    _payload(FAR + b"\\q" + FAR),  # an escape JSON has not
    _payload(FAR + b"\x01" + FAR),  # a raw control character
    _payload(FAR + b"\xff" + FAR),  # not UTF-8
], ids=["after", "inside", "escape", "control", "utf8"])
def test_a_payload_that_is_not_json_fails_open_and_stores_nothing(small: None, tmp_path: Path, doc: bytes,
                                                                  stream: bool) -> None:
    """Invalid anywhere, in its long string too, streamed or spooled: no answer (the harness
    keeps its result, as for a small payload; the spooled reading answered a bad string with
    the Spiller's "could NOT be saved" and a partial preview), no artifact committed, and no
    usage event for a spill the model never sees."""
    store = LocalStore(tmp_path / "store")
    assert _answer(doc, store, 4096, stream=stream) == b""
    assert _artifacts(tmp_path) == []
    assert list(tmp_path.rglob("usage/*/*.ndjson")) == []


def test_a_key_repeated_after_the_string_overturns_the_stream(small: None, tmp_path: Path) -> None:
    """A ``tool_name`` repeated after the streamed string (JSON's last one wins) makes it
    another answer: the streamed upload is abandoned, nothing committed, and the answer,
    which would need the string whole, fails open."""
    doc = _payload(FAR)[:-1] + b', "tool_name": "mcp__fs__read"}'
    store = LocalStore(tmp_path / "store")
    assert _answer(doc, store, 4096, stream=True) == b""
    assert _artifacts(tmp_path) == []


def test_a_repeated_tool_response_leaves_the_streamed_string_out(small: None, tmp_path: Path) -> None:
    """A second ``tool_response`` after the streamed one replaces it (as json.loads reads it):
    the answer is the spooled reading's for the later one, and the streamed string is not
    committed."""
    doc = _payload(FAR)[:-1] + b', "tool_response": {"stdout": "' + b"y" * LONG + b'"}}'
    store = LocalStore(tmp_path / "old")
    old = _normal(_answer(doc, store, 4096, stream=False), store, "s-2")
    store = LocalStore(tmp_path / "new")
    new = _normal(_answer(doc, store, 4096, stream=True), store, "s-2")
    assert new == old and new[1] == [b"y" * LONG]
    assert len(_artifacts(tmp_path / "new")) == 1


@pytest.mark.parametrize(("before", "streams"), [
    ({}, True), ({"a": "small", "interrupted": False, "n": 1, "none": None}, True),
    ({"a": "\x00s3spill-long:0123456789abcdef:0"}, False),  # a long string in the spool: spilled first
    ({"a": "x" * 2001}, False), ({"a": {"b": "c"}}, False), ({"a": ["b"]}, False),
], ids=["nothing", "scalars", "spooled", "over-the-cap", "object", "list"])
def test_only_a_string_with_nothing_to_spill_before_it_streams(small: None, tmp_path: Path,
                                                               before: dict[str, Any], streams: bool) -> None:
    """The string streams only when no field before it in ``tool_response`` could be spilled
    (spilling it first would change the order of the spills), and never for our own tools,
    a Read or an MCP tool, or a persisted Bash result."""
    spill = harness_hooks.HookSpiller(LocalStore(tmp_path / "store"), "s-3", "claude-code")
    payload = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "x" * LONG},
               "tool_response": {**before, "stdout": "LIVE"}}
    assert stream_tool(payload, "LIVE", LONG, spill) == ("Bash" if streams else None)
    for tool in ("mcp__s3spill__read_artifact", "Read", "mcp__fs__read"):
        assert stream_tool({**payload, "tool_name": tool}, "LIVE", LONG, spill) is None
    persisted = {**payload, "tool_response": {"stdout": "LIVE", "persistedOutputPath": "/tmp/x"}}
    assert stream_tool(persisted, "LIVE", LONG, spill) is None
    assert stream_tool(payload, "LIVE", 2000 * 12, spill) is None  # may be under the hard cap
    spill.close()


def test_a_payload_with_a_long_skeleton_is_not_paused(small: None, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    """Past PREFIX_BYTES of skeleton before the long string the reading does not pause (each
    try parses the skeleton so far): the payload is spooled and answered as before."""
    doc = json.dumps({"session_id": "s-2", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                      "tool_input": {"files": [f"f{i}" for i in range(200)]},
                      "tool_response": {"stdout": "STDOUT"}}).encode().replace(b'"STDOUT"', b'"' + FAR + b'"')
    monkeypatch.setattr(hook_stream, "PREFIX_BYTES", 1000)
    raw = read_payload(b"", Trickle(doc, 4096), pause=lambda p, s: streamed_field(p, s) is not None)
    assert isinstance(raw, SpooledPayload) and not raw.paused
    store = LocalStore(tmp_path / "store")
    answer = harness_hooks.answer("claude-code", raw, lambda: store)
    assert _normal(answer, store, "s-2")[1] == [FAR]
