"""Text and image blocks priced against one token budget; omitted images named by locator."""

from __future__ import annotations

import struct
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.context.block_plan import (
    MAX_LOCATOR_CHARS,
    UNKNOWN_IMAGE_TOKENS,
    Block,
    ImageBlock,
    TextBlock,
    default_image_price,
    full_text_chunks,
    image_dimensions,
    plan_blocks,
    render_blocks,
)
from s3spill.context.budget import ContextBudget
from s3spill.context.pointer import PointerFacts
from s3spill.context.tokens import estimate_tokens
from tests.examples import examples

SID = "artifact:0123456789abcdef0123456789abcdef:20250101T000000Z-abcdef012345-browser:89abcdef01234567"
IMG_SID = "artifact:0123456789abcdef0123456789abcdef:20250101T000000Z-0123456789ab-browser:0011223344556677"
FACTS = PointerFacts(SID, "browser", "89abcdef01234567" + "0" * 48, "screenshot of the login page")


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))


def price_of(blocks: list[Block], budget: ContextBudget) -> tuple[int, int]:
    tokens = sum(budget.count_tokens(b.text) if isinstance(b, TextBlock) else default_image_price(b)
                 for b in blocks)
    chars = sum(len(b.text) for b in blocks if isinstance(b, TextBlock))
    return tokens, chars


def test_image_sizes_are_read_from_headers_and_priced() -> None:
    """PNG, GIF and JPEG headers give the size; unknown formats pay the per-image ceiling."""
    assert image_dimensions(png(800, 600)) == (800, 600)
    assert image_dimensions(b"GIF89a" + struct.pack("<HH", 32, 16)) == (32, 16)
    jpeg = b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 4) + b"\x00\x00" + b"\xff\xc0" + struct.pack(
        ">HBHH", 11, 8, 480, 640) + b"\x03"
    assert image_dimensions(jpeg) == (640, 480)
    assert default_image_price(ImageBlock(png(800, 600))) == 640
    assert default_image_price(ImageBlock(png(4000, 4000))) == UNKNOWN_IMAGE_TOKENS
    assert default_image_price(ImageBlock(b"not an image")) == UNKNOWN_IMAGE_TOKENS


def test_a_result_within_budget_is_returned_as_is() -> None:
    """Text plus a small image under the token budget stays inline; nothing to store."""
    blocks: list[Block] = [TextBlock("page loaded"), ImageBlock(png(100, 100))]
    plan = plan_blocks(blocks, ContextBudget(10_000, 1_000), FACTS)
    assert plan.inline and not plan.omitted
    assert render_blocks(plan, FACTS, {}) == blocks


def test_an_expensive_image_is_omitted_and_named_by_its_locator() -> None:
    """A screenshot over the token budget is left out; the notice names where it is stored."""
    blocks: list[Block] = [
        TextBlock("Navigated to https://example.test/login\n"),
        ImageBlock(png(1568, 1568)),
        TextBlock("Console: 2 warnings\n"),
    ]
    budget = ContextBudget(20_000, max_tokens=1_000)
    plan = plan_blocks(blocks, budget, FACTS)
    assert [i for i, _ in plan.omitted_images] == [1]
    assert plan.omitted_text_bytes == 0
    out = render_blocks(plan, FACTS, {1: IMG_SID})
    assert all(isinstance(b, TextBlock) for b in out)
    text = "".join(b.text for b in out if isinstance(b, TextBlock))
    assert text.startswith(
        "Navigated to https://example.test/login\n[… 0 bytes of text omitted and 1 image(s): "
    )
    assert f'image #2 (image/png, 1568x1568, {len(png(1, 1))} bytes) stored as source_id="{IMG_SID}"' in text
    assert "Console: 2 warnings\n" in text and f'source_id="{SID}"' in text
    tokens, chars = price_of(out, budget)
    assert tokens <= 1_000 and chars <= 20_000


def test_an_image_that_could_not_be_stored_is_said_so() -> None:
    """If storing an omitted image failed, the notice says it could NOT be saved (no locator)."""
    blocks: list[Block] = [ImageBlock(png(1568, 1568)), TextBlock("x")]
    plan = plan_blocks(blocks, ContextBudget(20_000, max_tokens=900), FACTS)
    text = "".join(b.text for b in render_blocks(plan, FACTS, {0: None}) if isinstance(b, TextBlock))
    assert "image #1 (image/png, 1568x1568, 33 bytes) could NOT be saved" in text


def test_full_text_renders_each_image_as_one_reference_line() -> None:
    """The stored form keeps the text and replaces every image by a one-line reference."""
    blocks: list[Block] = [TextBlock("before"), ImageBlock(png(2, 3)), TextBlock("after")]
    stored = b"".join(full_text_chunks(blocks, {1: IMG_SID}))
    assert stored == f"before\n[image #2 (image/png, 2x3, 33 bytes): stored as {IMG_SID}]\nafter".encode()


block_st = st.one_of(
    st.builds(lambda t, n: TextBlock(t * n), st.text(max_size=60), st.integers(1, 200)),
    st.builds(lambda w, h: ImageBlock(png(w, h)), st.integers(1, 3000), st.integers(1, 3000)),
)


@settings(max_examples=examples(suite=50, thorough=200), deadline=None)
@given(
    st.lists(block_st, min_size=1, max_size=8),
    st.integers(1_200, 6_000),
    st.one_of(st.none(), st.integers(500, 3_000)),
    st.lists(st.integers(20, MAX_LOCATOR_CHARS), min_size=8, max_size=8),
)
def test_rendered_blocks_never_exceed_the_budget(
    blocks: list[Block], max_chars: int, max_tokens: int | None, locator_lengths: list[int]
) -> None:
    """With real locators of any allowed length, the final blocks fit the budget and counts are exact."""
    budget = ContextBudget(max_chars, max_tokens, estimate_tokens)
    try:
        plan = plan_blocks(blocks, budget, FACTS)
    except ValueError:
        return  # the worst-case notice alone is over the hard cap: the caller clips
    locators = {i: ("a" * n) for (i, _), n in zip(plan.omitted_images, locator_lengths, strict=False)}
    out = render_blocks(plan, FACTS, locators)
    tokens, chars = price_of(out, budget)
    assert chars <= max_chars
    if max_tokens is not None and not plan.hard_cap:
        assert tokens <= max_tokens
    if plan.hard_cap:
        assert not any(isinstance(b, ImageBlock) for b in out)
    kept = sum(len(b.text.encode()) for b in plan.head + plan.tail if isinstance(b, TextBlock))
    assert kept + plan.omitted_text_bytes == plan.total_text_bytes
    kept_images = [b for b in plan.head + plan.tail if isinstance(b, ImageBlock)]
    assert len(kept_images) + len(plan.omitted_images) == plan.image_count


def test_a_long_text_block_keeps_its_start_and_end_with_exact_counts() -> None:
    """One long text block over budget keeps a prefix and a suffix; the gap counts the rest exactly."""
    text = "".join(f"line {i}: ünïcode\n" for i in range(2_000))
    budget = ContextBudget(4_000, max_tokens=1_000)
    plan = plan_blocks([TextBlock(text)], budget, FACTS)
    (head,), (tail,) = plan.head, plan.tail
    assert isinstance(head, TextBlock) and isinstance(tail, TextBlock)
    assert text.startswith(head.text) and text.endswith(tail.text) and head.text and tail.text
    omitted = len(text.encode()) - len(head.text.encode()) - len(tail.text.encode())
    assert plan.omitted_text_bytes == omitted
    out = render_blocks(plan, FACTS, {})
    assert len(out) == 1 and isinstance(out[0], TextBlock)
    assert f"[… {omitted} bytes of text omitted …]" in out[0].text
    assert estimate_tokens(out[0].text) <= 1_000 and len(out[0].text) <= 4_000


def test_a_token_budget_too_small_for_the_notice_falls_back_to_the_hard_cap() -> None:
    """If the worst-case notice is over the token budget, the character cap decides and images go."""
    blocks: list[Block] = [TextBlock("a" * 5_000), ImageBlock(png(10, 10)), TextBlock("b" * 5_000)]
    plan = plan_blocks(blocks, ContextBudget(3_000, max_tokens=50), FACTS)
    assert plan.hard_cap and [i for i, _ in plan.omitted_images] == [1]
    out = render_blocks(plan, FACTS, {1: IMG_SID})
    assert len(out) == 1 and isinstance(out[0], TextBlock) and len(out[0].text) <= 3_000
    assert out[0].text.startswith("a") and IMG_SID in out[0].text
