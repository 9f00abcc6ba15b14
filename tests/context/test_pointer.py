"""The model-facing pointer: one verbatim template, never over its budget."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.context.budget import ContextBudget
from s3spill.context.pointer import (
    CLIPPED_MARKER,
    DegradedFacts,
    PointerFacts,
    render_degraded,
    render_pointer,
    summarize,
)
from s3spill.context.policy import SpillPolicy
from s3spill.context.retention import RetainedText, TextRetainer, TextStrategy
from s3spill.context.salient import SalientScanner
from s3spill.context.tokens import estimate_tokens
from tests.examples import examples

SID = "artifact:0123456789abcdef0123456789abcdef:20250101T000000Z-abcdef012345-bash:89abcdef01234567"
SHA = "89abcdef01234567" + "0" * 48


def facts(**kw: object) -> PointerFacts:
    base: dict[str, object] = {
        "source_id": SID, "tool": "bash", "sha256": SHA, "summary": 'bash exit 3: "line 01"',
        "call_id": "c-7", "exit_code": 3,
    }
    base.update(kw)
    return PointerFacts(**base)  # type: ignore[arg-type]


def thirty_lines() -> bytes:
    return b"".join(b"line %02d\n" % i for i in range(1, 31)).replace(b"line 15", b"Error 15")


def test_pointer_template_verbatim() -> None:
    """Head, exact gap marker with quoted error lines, tail, then locator, size, digest and hints."""
    data = thirty_lines()
    scanner = SalientScanner(skip_bytes=16)
    scanner.push(data)
    out = render_pointer(
        facts(), RetainedText.of(data), head_bytes=16, tail_bytes=24,
        budget=ContextBudget(100_000), salient=scanner.finish(),
    )
    assert out.text == (
        "line 01\n"
        "line 02\n"
        "[… 201 bytes omitted (lines 3–27); error lines among them:\n"
        "  line 15: Error 15\n"
        "…]\n"
        "line 28\n"
        "line 29\n"
        "line 30\n"
        "[s3spill] Full output of bash (call c-7, exit code 3): 241 bytes, 30 lines, "
        f'SHA-256 89abcdef01234567, stored as source_id="{SID}".\n'
        'Summary: bash exit 3: "line 01"\n'
        "Page it with read_artifact(source_id, offset=<lines to skip>, limit=<number of lines>) - "
        "line N is at offset=N-1; add char_offset=<n> to continue a very long line - or search it "
        'with grep_artifact(source_id, pattern="<regex>"). '
        "Do not re-run the command: its full output is already stored."
    )
    assert out.mode == "pointer"
    assert out.omitted.amount == 201
    assert [s.number for s in out.salient] == [15]


def test_degraded_template_verbatim_has_no_locator() -> None:
    """When the store failed, the text says the output could NOT be saved and names no locator."""
    out = render_degraded(
        DegradedFacts("bash", "store unavailable: deadline 5s exceeded", "c-7", 3),
        RetainedText.of(thirty_lines()), head_bytes=16, tail_bytes=24, budget=ContextBudget(100_000),
    )
    assert out.text == (
        "line 01\n"
        "line 02\n"
        "[… 201 bytes omitted (lines 3–27) …]\n"
        "line 28\n"
        "line 29\n"
        "line 30\n"
        "[s3spill] The output of bash (call c-7, exit code 3) was too large for the context and the "
        "full output could NOT be saved (store unavailable: deadline 5s exceeded).\n"
        "Only the part shown above is available: 241 bytes, 30 lines in total. If you need the omitted "
        "part, re-run the command with narrower output."
    )
    assert "artifact:" not in out.text and out.mode == "degraded"


def test_a_preview_that_holds_everything_has_no_gap_marker() -> None:
    """If nothing is omitted the whole output is shown, followed by the notice alone."""
    out = render_pointer(facts(), RetainedText.of(b"short\n"), head_bytes=100, tail_bytes=100,
                         budget=ContextBudget(100_000))
    assert out.text.startswith("short\n[s3spill] Full output of bash")
    assert "omitted" not in out.text and out.omitted.kind == "none"


def test_two_megabyte_output_with_the_default_shell_policy() -> None:
    """2 MB of output: within budget, first bytes first, tail ends with the last bytes, hints present."""
    data = b"".join(b"row %d: id=%d name=user_%d status=active\n" % (i, i * 7, i) for i in range(44_000))
    assert len(data) > 2_000_000
    policy = SpillPolicy()
    rule = policy.for_tool("bash")
    retainer = TextRetainer(rule.retention())
    for i in range(0, len(data), 65_536):
        retainer.push(data[i : i + 65_536])
    retained = retainer.finish()
    head, tail = rule.preview(0)
    f = facts(exit_code=0, summary=summarize(retained, "bash", 0),
              sha256=hashlib.sha256(data).hexdigest())
    out = render_pointer(f, retained, head_bytes=head, tail_bytes=tail, budget=policy.budget())
    budget = policy.budget()
    assert budget.fits(out.text)
    text = out.text
    # Short lines are shown whole: the 6 KiB head ends at the last line end inside it, and
    # the 24 KiB tail starts at the first line start inside it (issue 30).
    head_end = data.rindex(b"\n", 0, 6 * 1024) + 1
    tail_start = data.index(b"\n", len(data) - 24 * 1024) + 1
    assert text.startswith(data[:head_end].decode())
    footer_at = text.index("[s3spill] Full output of bash")
    assert text[:footer_at].endswith(data[tail_start:].decode())
    assert out.shown.head == data[:head_end] and out.shown.tail == data[tail_start:]
    assert f'source_id="{SID}"' in text and f"{len(data)} bytes, 44000 lines" in text
    assert "read_artifact(source_id, offset=" in text and "grep_artifact(source_id" in text
    assert "Do not re-run the command" in text
    # The gap marker's line range covers every omitted byte exactly.
    shown = out.shown
    first, last = shown.gap_lines
    lines = data.splitlines(keepends=True)
    # 6 KiB of head would end inside line 145 and the 24 KiB tail start inside line 43519:
    # both move to a line boundary, so the marker names whole lines only.
    assert (first, last) == (145, 43519)
    assert f"[… {shown.omitted_bytes} bytes omitted (lines 145–43519) …]" in text
    rebuilt = b"".join(lines[: first - 1])
    rebuilt += b"".join(lines[first - 1 : last])
    rebuilt += b"".join(lines[last:])
    assert rebuilt == data
    assert shown.head + data[len(shown.head) : len(data) - len(shown.tail)] + shown.tail == data
    assert len(shown.head) + len(shown.tail) + shown.omitted_bytes == len(data)


def test_failure_preview_favours_the_tail() -> None:
    """A non-zero exit code moves the preview towards the tail, where errors and summaries are."""
    rule = SpillPolicy().for_tool("bash")
    ok_head, ok_tail = rule.preview(0)
    bad_head, bad_tail = rule.preview(2)
    assert (ok_head, ok_tail) == (6 * 1024, 24 * 1024)
    assert bad_head < ok_head and bad_tail > ok_tail and bad_head + bad_tail == ok_head + ok_tail


def test_token_budget_too_small_for_the_notice_falls_back_to_the_hard_cap() -> None:
    """If even the worst-case notice is over the token budget, the hard cap alone decides."""
    data = b"x" * 100_000
    out = render_pointer(facts(), RetainedText.of(data), head_bytes=2048, tail_bytes=2048,
                         budget=ContextBudget(5_000, max_tokens=20))
    assert out.mode == "pointer_hard_cap"
    assert len(out.text) <= 5_000 and SID in out.text


def test_a_hard_cap_too_small_for_any_notice_clips_with_a_fixed_marker() -> None:
    """With a cap below the notice, the text is clipped with the fixed marker, never over the cap."""
    out = render_pointer(facts(), RetainedText.of(b"y" * 10_000), head_bytes=100, tail_bytes=100,
                         budget=ContextBudget(300))
    assert out.mode == "clipped"
    assert len(out.text) == 300 and out.text.endswith(CLIPPED_MARKER)


def test_salient_lines_are_quoted_only_from_the_gap() -> None:
    """Error lines visible in the head or tail are not repeated; those in the gap carry line numbers."""
    lines = [b"ok %04d\n" % i for i in range(2000)]
    lines[1] = b"error in head\n"
    lines[900] = b"FAILED: middle test\n"
    lines[1998] = b"error in tail\n"
    data = b"".join(lines)
    scanner = SalientScanner(skip_bytes=0, max_lines=5)
    for i in range(0, len(data), 97):
        scanner.push(data[i : i + 97])
    found = scanner.finish()
    assert [s.number for s in found] == [2, 901, 1999]
    out = render_pointer(facts(), RetainedText.of(data), head_bytes=100, tail_bytes=100,
                         budget=ContextBudget(100_000), salient=found)
    assert [s.number for s in out.salient] == [901]
    assert "  line 901: FAILED: middle test\n" in out.text


def test_summary_is_one_bounded_line() -> None:
    """The default summary is the first non-empty line (and the last on failure), capped, one line."""
    res = RetainedText.of(b"\n\n  first\tline\x1b[31m\nmiddle\nlast words\n")
    assert summarize(res, "bash", None) == 'bash: "first line [31m"'
    assert summarize(res, "bash", 1) == 'bash exit 1: "first line [31m" … "last words"'
    long = summarize(RetainedText.of(b"z" * 1000), "bash", None, limit=60)
    assert len(long) == 60 and "\n" not in long


def _weird_counter(text: str) -> int:
    """A counter unlike the estimate: one token per word plus one per non-ASCII char."""
    return len(text.split()) + sum(1 for c in text if ord(c) > 127)


contents = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=3000),
    st.binary(max_size=3000).map(lambda b: b.decode("utf-8", "surrogateescape")),
)


@settings(max_examples=examples(suite=50, thorough=200), deadline=None)
@given(
    content=st.one_of(contents, st.builds(lambda s, n: s * n, contents, st.integers(1, 40))),
    max_chars=st.integers(0, 6000),
    max_tokens=st.one_of(st.none(), st.integers(0, 3000)),
    head=st.integers(0, 4000),
    tail=st.integers(0, 4000),
    exit_code=st.one_of(st.none(), st.integers(-9, 255)),
    weird=st.booleans(),
    degraded=st.booleans(),
)
def test_context_text_never_exceeds_the_budget(
    content: str, max_chars: int, max_tokens: int | None, head: int, tail: int,
    exit_code: int | None, weird: bool, degraded: bool,
) -> None:
    """For any content and budget the text fits the hard cap, and the token budget in pointer mode."""
    data = content.encode("utf-8", "surrogateescape")
    retainer = TextRetainer(TextStrategy.head_tail(head, tail))
    retainer.push(data)
    retained = retainer.finish()
    scanner = SalientScanner(skip_bytes=0)
    scanner.push(data)
    counter = _weird_counter if weird else estimate_tokens
    budget = ContextBudget(max_chars, max_tokens, counter)
    if degraded:
        out = render_degraded(DegradedFacts("bash", "boom", "c", exit_code), retained,
                              head_bytes=head, tail_bytes=tail, budget=budget, salient=scanner.finish())
        assert "artifact:" not in out.text
    else:
        out = render_pointer(facts(exit_code=exit_code), retained, head_bytes=head, tail_bytes=tail,
                             budget=budget, salient=scanner.finish())
    assert len(out.text) <= max_chars
    if out.mode in ("pointer", "degraded") and max_tokens is not None:
        assert counter(out.text) <= max_tokens
    shown = out.shown
    assert data.startswith(shown.head) and data.endswith(shown.tail)
    assert len(shown.head) + len(shown.tail) + shown.omitted_bytes == len(data)
    if out.mode != "clipped":
        assert out.text.startswith(shown.head_text)


def test_the_gap_marker_is_exact_about_partial_lines() -> None:
    """Cuts inside lines: the marker names the rest / the start / the middle of a line, not whole lines.

    A cut stays inside a line only where the piece it would drop is not short (a quarter
    of what is kept or more; shorter pieces move the cut to the line's edge)."""
    data = b"".join(b"line %02d is here\n" % i for i in range(1, 21))  # 20 lines of 16 bytes

    def gap(head: int, tail: int, of: bytes = data) -> str:
        text = render_pointer(facts(), RetainedText.of(of), head_bytes=head, tail_bytes=tail,
                              budget=ContextBudget(100_000)).text
        return text[text.index("[… ") : text.index(" …]") + 3]

    assert gap(16 * 2, 16 * 3) == "[… 240 bytes omitted (lines 3–17) …]"  # both cuts on line edges
    assert gap(16 * 2 + 5, 16 * 3 + 4) == "[… 240 bytes omitted (lines 3–17) …]"  # short pieces: edges
    assert gap(16 * 2 + 12, 16 + 12) == \
        "[… 248 bytes omitted (the rest of line 3, lines 4–18, the start of line 19) …]"
    assert gap(16 * 2 + 12, 16 * 3) == "[… 228 bytes omitted (the rest of line 3, lines 4–17) …]"
    long_third = data[:32] + b"x" * 400 + b"\n" + data[48:80]
    assert gap(32 + 200, len(long_third) - 242, long_third) == \
        "[… 10 bytes omitted (the middle of line 3) …]"
