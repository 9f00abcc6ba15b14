"""A huge hook payload is spooled and its long strings streamed: same text, bounded memory."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3spill.adapters import hook_stream
from s3spill.artifacts.store import ArtifactStore
from s3spill.spill import json_spool
from s3spill.store.local import LocalStore
from s3spill.testing import child_env

#: Every code point, lone surrogates included (a JSON escape can carry one).
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=3000)


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spool past 1,000 bytes, keep strings over 300 in the file, read it 64 bytes at a time."""
    monkeypatch.setattr(hook_stream, "SPOOL_BYTES", 1000)
    monkeypatch.setattr(hook_stream, "LONG_BYTES", 300)
    monkeypatch.setattr(hook_stream, "_PIECE", 64)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT, ascii_only=st.booleans())
def test_streamed_strings_decode_as_json_loads_does(small_limits: None, text: str, ascii_only: bool) -> None:
    """The pieces of a long string join to what json.loads gives (escapes, characters and
    surrogate pairs never cut), and a payload read back whole is json.loads' dict."""
    doc = {"hook_event_name": "PostToolUse", "tool_response": {"stdout": text, "other": [text]}, text: 1}
    raw = json.dumps(doc, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    want = json.loads(raw)
    got = hook_stream.read_payload(raw[:10], io.BytesIO(raw[10:]))
    if isinstance(got, bytes):
        assert got == raw
        return
    assert got.raw() == raw and got.event() == "PostToolUse"
    assert got.decode(lambda _: False) == want
    streamed = got.decode(lambda _: True)
    assert streamed is not None
    stdout = streamed["tool_response"]["stdout"]
    if isinstance(stdout, hook_stream.LongString):
        assert "".join(stdout.pieces()) == want["tool_response"]["stdout"]
    else:
        assert stdout == want["tool_response"]["stdout"]
    assert streamed["tool_response"]["other"] == want["tool_response"]["other"]


@settings(max_examples=300, deadline=None)
@given(body=st.lists(st.sampled_from([b"a", b"\\", b'"', b"\\u00e9", b"\xc3\xa9"]), max_size=400))
def test_the_closing_quote_is_found_as_the_uniform_masking_finds_it(body: list[bytes]) -> None:
    """The quick search (quote by quote, backslashes before each) and its fallback for many
    escaped quotes (masking) agree on every body, including a trailing lone backslash, and
    so do both when told where the body ends in a longer buffer (what follows is not read)."""
    buf = b"".join(body)
    assert json_spool._string_end(buf, 0) == json_spool._masked_end(buf, 0)
    longer = bytearray(buf + b'\\"x"')
    assert json_spool._string_end(longer, 0, len(buf)) == json_spool._string_end(buf, 0)
    assert json_spool._masked_end(longer, 0, len(buf)) == json_spool._masked_end(buf, 0)


#: Starts the hook and reports its peak RSS. Why a launcher: a child's ``ru_maxrss`` starts at
#: the high-water mark of the process it was forked from (kept across exec), and this test
#: process holds the 40 MB text; the launcher is small, so what it reports is the hook's own.
LAUNCH = """
import os, subprocess, sys
payload, *argv = sys.argv[1:]
with open(payload, "rb") as stdin:
    proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
sys.stdout.buffer.write(b"%d %d\\n" % (os.waitstatus_to_exitcode(status), usage.ru_maxrss) + out)
"""


def _hook(payload: Path, store: str) -> tuple[bytes, int]:
    """``s3spill hook claude-code`` with ``payload`` on stdin: its answer and peak RSS (KiB)."""
    env = child_env({})
    env.pop("S3SPILL_SESSION", None)
    argv = [sys.executable, "-c", LAUNCH, str(payload), sys.executable, "-m", "s3spill", "--store", store,
            "hook", "claude-code"]
    proc = subprocess.run(argv, capture_output=True, env=env, timeout=300, check=True)
    first, _, out = proc.stdout.partition(b"\n")
    code, rss = (int(x) for x in first.split())
    assert code == 0, proc.stderr.decode()[-2000:]
    return out, rss


def test_a_40_mb_bash_payload_is_stored_whole_in_less_memory_than_itself(tmp_path: Path) -> None:
    """The answer is Bash's shape with a pointer, the artifact is the stdout byte for byte, and
    the hook's peak memory over the same hook on a 40 KB payload stays under the payload's size
    (reading it whole held ~3x)."""
    line = 'step {i}: "ok" \\ done\tcafé ☕\n'
    stdout = "".join(line.format(i=i) for i in range(1_000_000))
    session = "stream-test"

    def payload(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({"session_id": session, "hook_event_name": "PostToolUse",
                                    "tool_name": "Bash", "tool_input": {"command": "make"},
                                    "tool_response": {"stdout": text, "stderr": "warn\n",
                                                      "interrupted": False}}))
        return path

    big = payload("big.json", stdout)
    small = payload("small.json", stdout[:40_000])
    store = LocalStore(tmp_path / "store")
    out, rss = _hook(big, store.url)
    _, small_rss = _hook(small, store.url)
    updated = json.loads(out)["hookSpecificOutput"]["updatedToolOutput"]
    assert set(updated) == {"stdout", "stderr", "interrupted"} and updated["stderr"] == "warn\n"
    sid = re.findall(r'source_id="([^"]+)"', updated["stdout"])[-1]
    stored = b"".join(ArtifactStore(store, session_id=session).iter_verified(sid))
    assert stored == stdout.encode()
    assert (rss - small_rss) * 1024 < big.stat().st_size, (rss, small_rss)
