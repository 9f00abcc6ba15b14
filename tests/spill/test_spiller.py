"""The Spiller against real stores: inline below the threshold, pointer above it."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from s3spill.artifacts.store import ArtifactStore
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from tests.spill.outputs import follow_pages, numbered_output, preview_part, source_id_of

SESSION = "session-spiller-1"
GAP = re.compile(r"bytes omitted \((?:the rest of line (\d+), )?lines (\d+)–(\d+)"
                 r"(?:, the start of line (\d+))?\)")
Make = Callable[..., Spiller]


@pytest.fixture
def make() -> Iterator[Make]:
    """Spillers closed at teardown, before their store: no liveness write outlives the test."""
    made: list[Spiller] = []

    def build(*args: Any, **kwargs: Any) -> Spiller:
        spiller = Spiller(*args, **kwargs)
        made.append(spiller)
        return spiller

    yield build
    for spiller in made:
        spiller.close(timeout=10)


def _objects(store: ObjectStore) -> list[str]:
    return [info.key for info in store.list("")]


def test_two_megabyte_shell_output_becomes_a_followable_pointer(store: ObjectStore, make: Make) -> None:
    """A 2 MB shell output: bounded text, first and last bytes shown, hints lead back to every byte."""
    data = numbered_output(2 * 1024 * 1024)
    policy = SpillPolicy()
    result = make(store, SESSION, policy).externalize(data, "bash", "call-7")

    text = result.context_text
    assert result.spilled and result.artifact is not None and result.degraded_reason is None
    assert result.total_bytes == len(data) == result.artifact.size_bytes
    assert policy.budget().fits(text)
    assert text.startswith(data[:4096].decode())
    assert preview_part(text).endswith(data[-4096:].decode())
    sid = source_id_of(text)
    assert sid == result.artifact.source_id
    assert f"{len(data)} bytes" in text
    assert "read_artifact(source_id" in text and "grep_artifact(source_id" in text
    assert "Do not re-run" in text
    assert 0 < result.omitted < len(data)

    reader = ArtifactStore(store, session_id=SESSION)
    assert follow_pages(reader, sid) == data
    gap = GAP.search(text)
    assert gap, "no gap marker with a line range"
    first = int(gap.group(1) or gap.group(2))  # the first line holding omitted bytes
    page = reader.read_page(sid, offset=first - 1, limit=1)  # "line N is at offset=N-1"
    assert page.lines[0].number == first


def test_output_under_the_threshold_is_inline_and_not_stored(store: ObjectStore, make: Make) -> None:
    """A short output comes back verbatim and nothing is written to the store."""
    result = make(store, SESSION).externalize("hello\nworld\n", "bash", "c1", exit_code=0)
    assert result.context_text == "hello\nworld\n"
    assert not result.spilled and result.artifact is None and result.mode == "inline"
    assert result.omitted == 0 and result.total_bytes == 12
    assert _objects(store) == []


def test_a_stream_is_consumed_once_and_its_prefix_is_not_lost(store: ObjectStore, make: Make) -> None:
    """An iterator past the threshold is read once; the buffered prefix is stored with the rest."""
    data = numbered_output(300_000)
    pulled: list[int] = []

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(data), 7_000):
            pulled.append(start)
            yield data[start : start + 7_000]

    result = make(store, SESSION).externalize(chunks(), "bash", "c2")
    assert result.spilled and result.artifact is not None
    assert pulled == list(range(0, len(data), 7_000))
    reader = ArtifactStore(store, session_id=SESSION)
    assert b"".join(reader.iter_verified(result.artifact.source_id)) == data


def test_file_objects_and_text_are_accepted(store: ObjectStore, make: Make) -> None:
    """A binary file object and a str with non-ASCII text both spill to the exact UTF-8 bytes."""
    text = "é✓ " * 40_000
    spiller = make(store, SESSION)
    from_str = spiller.externalize(text, "bash", "c3")
    from_file = spiller.externalize(io.BytesIO(text.encode()), "bash", "c4")
    reader = ArtifactStore(store, session_id=SESSION)
    for result in (from_str, from_file):
        assert result.artifact is not None
        assert b"".join(reader.iter_verified(result.artifact.source_id)) == text.encode()
        assert result.context_text.startswith("é✓ é✓")


def test_a_non_spillable_result_is_never_copied(store: ObjectStore, make: Make) -> None:
    """spillable=False (a paged file read) stays inline, clipped to the hard cap, and is not stored."""
    policy = SpillPolicy(hard_cap_chars=10_000)
    data = numbered_output(500_000)
    result = make(store, SESSION, policy).externalize(data, "read", "c5", spillable=False)
    assert not result.spilled and result.mode == "clipped"
    assert len(result.context_text) <= 10_000
    assert result.context_text.startswith(data[:1000].decode())
    assert result.total_bytes == len(data)
    assert result.omitted == len(data) - len(preview_bytes(result.context_text))
    assert _objects(store) == []


def preview_bytes(text: str) -> bytes:
    from s3spill.context.pointer import CLIPPED_MARKER

    return text.removesuffix(CLIPPED_MARKER).encode()


def test_a_failed_command_previews_more_tail(store: ObjectStore, make: Make) -> None:
    """A non-zero exit code shifts the preview toward the tail, where errors and summaries are."""
    data = numbered_output(400_000)
    spiller = make(store, SESSION)
    ok = spiller.externalize(data, "bash", "ok", exit_code=0)
    failed = spiller.externalize(data, "bash", "bad", exit_code=2)
    ok_head = preview_part(ok.context_text).split("[… ")[0]
    bad_head = preview_part(failed.context_text).split("[… ")[0]
    assert len(bad_head) < len(ok_head)
    assert "exit code 2" in failed.context_text
    assert preview_part(failed.context_text).endswith(data[-20_000:].decode())


def test_exit_code_may_be_known_only_when_the_output_ends(store: ObjectStore, make: Make) -> None:
    """A callable exit code is asked once, after the stream, and recorded in the result."""
    asked: list[int] = []

    def status() -> int:
        asked.append(1)
        return 5

    result = make(store, SESSION).externalize(numbered_output(100_000), "bash", "c6", exit_code=status)
    assert asked == [1] and result.exit_code == 5 and "exit code 5" in result.context_text


def test_the_call_id_may_be_known_only_when_the_output_ends(store: ObjectStore, make: Make) -> None:
    """A callable call id is asked once the output has ended (a hook learns it from the fields
    after the output) and is the one in the pointer, the result and the committed index."""
    ended: list[bool] = []

    def output() -> Iterator[bytes]:
        yield numbered_output(100_000)
        ended.append(True)

    def call_id() -> str:
        assert ended, "asked before the output ended"
        return "toolu_late"

    result = make(store, SESSION).externalize(output(), "bash", call_id)
    assert result.call_id == "toolu_late" and "(call toolu_late)" in result.context_text
    index = ArtifactStore(store, session_id=SESSION).index(source_id_of(result.context_text))
    assert index.call_id == "toolu_late"


def test_error_lines_from_the_omitted_middle_are_quoted(store: ObjectStore, make: Make) -> None:
    """An error line deep in the omitted middle is quoted with its line number."""
    head = numbered_output(200_000)
    data = head + b"ERROR: disk quota exceeded on /var\n" + numbered_output(200_000, marker="more")
    result = make(store, SESSION).externalize(data, "bash", "c7")
    line_no = head.count(b"\n") + 1
    assert f"line {line_no}: ERROR: disk quota exceeded on /var" in result.context_text


def test_per_tool_thresholds_apply(store: ObjectStore, make: Make) -> None:
    """A tool's own rule decides: 60 KiB is inline for a tool allowed 100 KiB, stored for the default."""
    policy = SpillPolicy(tools={"big": ToolPolicy(threshold=100 * 1024)})
    data = numbered_output(60 * 1024)
    spiller = make(store, SESSION, policy)
    assert not spiller.externalize(data, "big", "c8").spilled
    assert spiller.externalize(data, "other", "c9").spilled


def test_a_token_budget_spills_and_bounds_the_text(store: ObjectStore, make: Make) -> None:
    """With max_inline_tokens, a short output over the token budget is stored and the text fits it."""
    policy = SpillPolicy(max_inline_tokens=1_500)
    data = numbered_output(20_000)
    result = make(store, SESSION, policy).externalize(data, "bash", "c10")
    assert result.spilled and result.mode == "pointer"
    assert policy.counter()(result.context_text) <= 1_500


COMPRESSING = SpillPolicy(tools={"vitest": ToolPolicy(threshold=50 * 1024, log_compress=True),
                                 "eslint": ToolPolicy(threshold=50 * 1024, log_compress=True)})


def test_a_compressed_test_log_is_stored_in_full_and_pointed_to(store: ObjectStore, make: Make) -> None:
    """A vitest failure log under the threshold shows its compressed view; the full text is stored."""
    from tests.context.test_logcompress import STACK, vitest_failure_log

    log = vitest_failure_log()
    result = make(store, SESSION, COMPRESSING).externalize(log, "vitest", "t1", exit_code=1)
    assert result.spilled and result.artifact is not None
    text = result.context_text
    assert "log-compressed view (394 → " in text and source_id_of(text) == result.artifact.source_id
    for line in STACK + [ln for ln in log.splitlines() if "FAIL" in ln or "Error" in ln]:
        assert line in text
    assert len(text) < 0.35 * len(log)
    assert 0 < result.omitted < len(log.encode())
    reader = ArtifactStore(store, session_id=SESSION)
    assert b"".join(reader.iter_verified(result.artifact.source_id)) == log.encode()


def test_a_log_that_does_not_compress_stays_inline(store: ObjectStore, make: Make) -> None:
    """An eslint report saving under 15% is returned unchanged and not stored."""
    from tests.context.test_logcompress import eslint_log

    log = eslint_log()
    result = make(store, SESSION, COMPRESSING).externalize(log, "eslint", "t2", exit_code=1)
    assert result.context_text == log and not result.spilled
    assert _objects(store) == []


def test_a_compressed_log_falls_back_to_inline_when_the_store_fails(
    local_store: ObjectStore, make: Make
) -> None:
    """Stored only because compression dropped lines: if the store fails the full log stays inline."""
    from s3spill.testing import Fault, FaultyStore
    from tests.context.test_logcompress import vitest_failure_log

    log = vitest_failure_log()
    store = FaultyStore(local_store, [Fault("*", "unavailable", times=10**9)])
    result = make(store, SESSION, COMPRESSING).externalize(log, "vitest", "t3", exit_code=1)
    assert result.context_text == log and result.mode == "inline" and not result.spilled
    assert result.degraded_reason and "StoreUnavailable" in result.degraded_reason


def test_a_spill_marks_the_session_alive_at_most_once_per_interval(
    local_store: ObjectStore, make: Make
) -> None:
    """Two spills in a row write last_active once; the mark is visible in the session's journal."""
    from s3spill.leases.journal import LeaseJournal
    from s3spill.testing import FaultyStore

    store = FaultyStore(local_store)
    spiller = make(store, SESSION, touch_interval=3600)
    spiller.externalize(numbered_output(100_000), "bash", "a")
    spiller.externalize(numbered_output(100_000), "bash", "b")
    spiller.close(timeout=10)
    manifest_writes = [op for op, key, _ in store.log
                       if key.endswith("journal/manifest.json") and op.startswith("put")]
    assert len(manifest_writes) == 1
    assert LeaseJournal(local_store, SESSION).view().last_active is not None


def test_inline_results_do_not_touch_the_journal(local_store: ObjectStore, make: Make) -> None:
    """Nothing stored, nothing to keep alive: an inline result writes nothing at all."""
    spiller = make(local_store, SESSION)
    spiller.externalize("short", "bash", "a")
    spiller.close(timeout=10)
    assert _objects(local_store) == []


def test_the_preview_shows_invalid_utf8_as_read_does(store: ObjectStore, make: Make) -> None:
    """A spilled preview and an inline result show caf\\xe9 as `read` does, never U+FFFD."""
    line = b"caf\xe9 au lait \\ one backslash\n"
    middle = b"filler line of plain text\n" * 1_500
    data = line + middle + b"error: caf\xe9 broke\n" + middle + line
    spiller = make(store, SESSION)
    result = spiller.externalize(io.BytesIO(data), "bash")
    assert result.spilled and result.artifact is not None
    shown = "caf\\xe9 au lait \\\\ one backslash\n"
    assert result.context_text.startswith(shown) and "\ufffd" not in result.context_text
    assert preview_part(result.context_text).endswith(shown)
    assert "line 1502: error: caf\\xe9 broke" in result.context_text  # the quoted error line too
    page = ArtifactStore(store, session_id=SESSION).read_page(result.artifact.source_id, limit=1)
    assert page.lines[0].text + "\n" == shown
    small = spiller.externalize(b"ok\n\xff\n", "bash")
    assert small.mode == "inline" and small.context_text == "ok\n\\xff\n"
