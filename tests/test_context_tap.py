"""One pass over the output feeds the context side: inline, pointer, compressed view, degraded."""

from __future__ import annotations

import hashlib

from test_context_logcompress import vitest_failure_log

from s3spill.context.policy import KiB, SpillPolicy, ToolPolicy
from s3spill.context.salient import SalientScanner
from s3spill.context.tap import OutputTap, inline_text, render_spilled, render_unsaved

SID = "artifact:0123456789abcdef0123456789abcdef:20250101T000000Z-abcdef012345-bash:89abcdef01234567"


def feed(tap: OutputTap, data: bytes, chunk: int = 65_536) -> None:
    for i in range(0, len(data), chunk):
        tap.push(data[i : i + chunk])


def test_small_output_stays_inline() -> None:
    """Under the threshold the output is returned as it is and nothing needs storing."""
    tap = OutputTap(SpillPolicy(), "bash")
    feed(tap, b"hello\nworld\n")
    assert tap.may_be_inline
    assert inline_text(SpillPolicy(), "bash", tap.finish()) == "hello\nworld\n"


def test_large_output_is_pointed_to_with_bounded_memory() -> None:
    """A 2 MB output: the tap drops its whole copy, keeps head/tail and an early error line."""
    lines = [b"step %06d ok\n" % i for i in range(150_000)]
    lines[70_000] = b"step 070000 ERROR: checksum mismatch on shard 7\n"
    data = b"".join(lines)
    policy = SpillPolicy()
    tap = OutputTap(policy, "bash")
    feed(tap, data)
    assert not tap.may_be_inline
    result = tap.finish()
    assert result.full is None and inline_text(policy, "bash", result) is None
    out = render_spilled(policy, "bash", result, source_id=SID, sha256=hashlib.sha256(data).hexdigest(),
                         exit_code=1, call_id="c1")
    assert policy.budget().fits(out.text)
    assert "  line 70001: step 070000 ERROR: checksum mismatch on shard 7\n" in out.text
    assert out.shown.tail == data[-len(out.shown.tail) :] and len(out.shown.tail) > 24 * KiB  # failure
    assert f"{len(data)} bytes, 150000 lines" in out.text


def test_a_log_compress_tool_previews_the_compressed_view() -> None:
    """For an opted-in test tool the preview is the compressed log; the pointer still names the full one."""
    rule = ToolPolicy(threshold=4 * KiB, head_bytes=4 * KiB, tail_bytes=12 * KiB, log_compress=True)
    policy = SpillPolicy(tools={"vitest": rule})
    log = vitest_failure_log().encode()
    tap = OutputTap(policy, "vitest")
    feed(tap, log, chunk=1000)
    result = tap.finish()
    assert inline_text(policy, "vitest", result) is None
    out = render_spilled(policy, "vitest", result, source_id=SID, sha256="0" * 64, exit_code=1)
    assert " FAIL  src/billing.test.ts > charges the right amount\n" in out.text
    assert "The preview above is a log-compressed view (394 → 37 lines); the stored output is complete." \
        in out.text
    assert f"{len(log)} bytes, 394 lines" in out.text
    assert len(out.text) < len(log) / 3


def test_store_failure_gives_a_bounded_text_without_a_locator() -> None:
    """When the store failed, the text is bounded, says the output could NOT be saved, names no locator."""
    policy = SpillPolicy(hard_cap_chars=5_000)
    tap = OutputTap(policy, "bash")
    feed(tap, b"x" * 1_000_000)
    out = render_unsaved(policy, "bash", tap.finish(), reason="store unavailable after 5.0s", exit_code=0)
    assert len(out.text) <= 5_000 and "could NOT be saved" in out.text and "artifact:" not in out.text


def test_salient_scan_stops_after_its_byte_budget() -> None:
    """The error-line scan looks only so far past the head, bounding its cost on huge outputs."""
    data = b"ok\n" * 10_000 + b"ERROR late\n"
    bounded = SalientScanner(max_scan_bytes=1_000)
    unbounded = SalientScanner()
    for i in range(0, len(data), 500):
        bounded.push(data[i : i + 500])
        unbounded.push(data[i : i + 500])
    assert bounded.finish() == []
    assert [s.number for s in unbounded.finish()] == [10_001]
