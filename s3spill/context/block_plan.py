"""Tool results made of text and image blocks, priced against one token budget.

An image can cost more than pages of text, so a result of a few kilobytes can still
be over budget. Blocks are priced (text by the token counter, images by a
pluggable pricer), and when the total is over budget the result keeps blocks from
its start and its end and omits the middle: text bytes counted exactly, whole images
listed so that each can be stored as its own artifact and named in the notice.

Three pure steps around the Spiller's I/O::

    plan = plan_blocks(blocks, budget, facts, price_image=...)   # which blocks stay
    # Spiller: store plan.omitted_images, and full_text_chunks(blocks, ...) as one artifact
    out = render_blocks(plan, facts, image_locators)               # final blocks, in budget

``plan_blocks`` reserves the worst-case notice (every image omitted, every locator
at its maximum length) before choosing, so the final blocks fit once the real, never
longer, locators are known.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from s3spill.context.budget import ContextBudget
from s3spill.context.pointer import DegradedFacts, PointerFacts, degraded_footer, one_line, pointer_footer
from s3spill.context.retention import RetainedText
from s3spill.context.utf8 import safe_head_cut, safe_tail_start, to_bytes

#: Longest locator a notice may name (a SourceId is at most 200 characters).
MAX_LOCATOR_CHARS = 200
#: Price of an image whose size cannot be read: the per-image ceiling of common models.
UNKNOWN_IMAGE_TOKENS = 1600


@dataclass(frozen=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class ImageBlock:
    data: bytes = field(repr=False)
    media_type: str = "image/png"
    width: int | None = None
    height: int | None = None
    type: Literal["image"] = "image"

    def data_line(self) -> str:
        """The line that stands for this image where only text is kept (usage records)."""
        return f"[image {self.media_type}, {len(self.data)} bytes]\n"

    def dimensions(self) -> tuple[int, int] | None:
        if self.width and self.height:
            return (self.width, self.height)
        return image_dimensions(self.data)


Block = TextBlock | ImageBlock
ImagePricer = Callable[[ImageBlock], int]


def image_dimensions(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF or JPEG header; None for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return (width, height)
    if data[:4] == b"GIF8" and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return (width, height)
    if data[:2] == b"\xff\xd8":
        pos = 2
        while pos + 9 <= len(data):
            if data[pos] != 0xFF:
                return None
            marker = data[pos + 1]
            length = struct.unpack(">H", data[pos + 2 : pos + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
                return (width, height)
            pos += 2 + length
    return None


def default_image_price(image: ImageBlock) -> int:
    """Approximate vision pricing: about width*height/750 tokens after scaling the long
    edge to 1568 px, capped at 1600; unknown sizes pay the cap. Plug in the provider's
    own calculator for exact prices (the billing model's, ideally)."""
    dims = image.dimensions()
    if not dims or dims[0] <= 0 or dims[1] <= 0:
        return UNKNOWN_IMAGE_TOKENS
    width, height = dims
    scale = min(1.0, 1568 / max(width, height))
    return min(UNKNOWN_IMAGE_TOKENS, max(1, math.ceil(width * scale * height * scale / 750)))


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class BlockPlan:
    """Which blocks stay. Cut text blocks appear as their kept prefix/suffix."""

    head: tuple[Block, ...]
    tail: tuple[Block, ...]
    omitted_text_bytes: int
    omitted_images: tuple[tuple[int, ImageBlock], ...]  # (index in the input, image)
    total_text_bytes: int
    image_count: int
    inline: bool  # True: everything fits, nothing to store
    #: True when even the worst-case notice was over the token budget: the hard
    #: character cap alone decided, and no image was kept.
    hard_cap: bool = False

    @property
    def omitted(self) -> bool:
        return bool(self.omitted_text_bytes or self.omitted_images)


def _price(block: Block, budget: ContextBudget, price_image: ImagePricer) -> tuple[int, int]:
    """(tokens, chars) of one block; images cost no characters."""
    if isinstance(block, ImageBlock):
        return (price_image(block), 0)
    return (budget.count_tokens(block.text), len(block.text))


def binary_kind(media_type: str) -> str:
    """What a binary block is called in a notice: an MCP result also carries audio and files."""
    major = media_type.partition("/")[0].lower()
    return major if major in ("image", "audio") else "file"


def _image_label(index: int, image: ImageBlock) -> str:
    dims = image.dimensions()
    size = f", {dims[0]}x{dims[1]}" if dims else ""
    kind = binary_kind(image.media_type)
    return f"{kind} #{index + 1} ({one_line(image.media_type, 40)}{size}, {len(image.data)} bytes)"


def _gap_text(omitted_bytes: int, images: Sequence[tuple[int, ImageBlock]],
              locators: Mapping[int, str | None]) -> str:
    parts = [f"[… {omitted_bytes} bytes of text omitted"]
    if images:
        named = []
        for index, image in images:
            loc = locators.get(index)
            where = f'stored as source_id="{one_line(loc, MAX_LOCATOR_CHARS)}"' if loc \
                else "could NOT be saved"
            named.append(f"{_image_label(index, image)} {where}")
        kinds = {binary_kind(image.media_type) for _, image in images}
        word = f"{kinds.pop()}(s)" if len(kinds) == 1 else "attachment(s)"
        parts.append(f" and {len(images)} {word}: " + "; ".join(named))
    return "".join(parts) + " …]\n"


def _footer(facts: PointerFacts) -> str:
    return pointer_footer(facts, RetainedText.of(b""))


def _worst_notice(blocks: Sequence[Block], facts: PointerFacts) -> str:
    images = [(i, b) for i, b in enumerate(blocks) if isinstance(b, ImageBlock)]
    total = sum(len(to_bytes(b.text)) for b in blocks if isinstance(b, TextBlock))
    worst_loc = {i: "f" * MAX_LOCATOR_CHARS for i, _ in images}
    return _gap_text(total, images, worst_loc) + "\n" + _footer(facts)


def plan_blocks(
    blocks: Sequence[Block],
    budget: ContextBudget,
    facts: PointerFacts,
    *,
    price_image: ImagePricer = default_image_price,
) -> BlockPlan:
    """Keep blocks from the start and the end within ``budget``; omit the middle.

    The head may use half of what is left after the worst-case notice, the tail the
    rest. Images are kept or omitted whole; a text block at the edge is cut UTF-8
    safely. When the worst-case notice is over the token budget, the hard character
    cap alone decides and every image is omitted (``hard_cap``); ``ValueError`` only
    when the notice is over the hard cap too (the caller then clips or degrades).
    """
    images = sum(isinstance(b, ImageBlock) for b in blocks)
    total_text = sum(len(to_bytes(b.text)) for b in blocks if isinstance(b, TextBlock))
    prices = [_price(b, budget, price_image) for b in blocks]
    tokens = sum(p[0] for p in prices)
    chars = sum(p[1] for p in prices)
    if chars <= budget.max_chars and (budget.max_tokens is None or tokens <= budget.max_tokens):
        return BlockPlan(tuple(blocks), (), 0, (), total_text, images, inline=True)
    notice = _worst_notice(blocks, facts)
    # +2: a separator before the gap marker may add a token to each seam it touches.
    reserve_t = budget.count_tokens(notice) + 2 if budget.max_tokens is not None else 0
    if len(notice) > budget.max_chars:
        raise ValueError("the worst-case notice does not fit the hard character cap")
    hard_cap = budget.max_tokens is not None and reserve_t > budget.max_tokens
    if hard_cap:
        budget = budget.chars_only()
    room_t = (budget.max_tokens - reserve_t) if budget.max_tokens is not None else None
    room_c = budget.max_chars - len(notice) - 1  # the separator before the gap marker

    n = len(blocks)
    allow_images = not hard_cap
    head = _take(blocks, range(n), budget, price_image, _half(room_t), room_c // 2, allow_images)
    rest_t = None if room_t is None else room_t - head.tokens
    h = head.boundary
    tail_blocks = list(blocks)
    edge = blocks[h] if h < n else None
    if isinstance(edge, TextBlock):
        # The tail may take a suffix of the block the head cut; never the same bytes.
        tail_blocks[h] = TextBlock(to_bytes(edge.text)[head.cut_bytes :].decode("utf-8", "replace"))
    tail = _take(tail_blocks, range(n - 1, h - 1, -1), budget, price_image, rest_t, room_c - head.chars,
                 allow_images)
    omitted_images = tuple(
        (i, b) for i, b in enumerate(blocks) if isinstance(b, ImageBlock) and h <= i < tail.boundary
    )
    kept_text = head.text_bytes + tail.text_bytes
    return BlockPlan(
        head.kept, tuple(reversed(tail.kept)), total_text - kept_text, omitted_images, total_text, images,
        inline=False, hard_cap=hard_cap,
    )


def _half(value: int | None) -> int | None:
    return None if value is None else value // 2


@dataclass(frozen=True)
class _Taken:
    kept: tuple[Block, ...]  # in visiting order
    #: Forward: the first index not wholly kept. Backward: the lowest index wholly
    #: kept (one past the range's end when none).
    boundary: int
    tokens: int
    chars: int
    text_bytes: int
    cut_bytes: int  # bytes kept of the block that was cut (0 if none)


def _take(
    blocks: Sequence[Block], order: range, budget: ContextBudget, price_image: ImagePricer,
    room_t: int | None, room_c: int, allow_images: bool = True,
) -> _Taken:
    """Greedy whole blocks in ``order``; the first text block that does not fit is cut."""
    from_end = order.step < 0
    kept: list[Block] = []
    used_t = used_c = kept_bytes = cut_bytes = 0
    boundary = order.stop if not from_end else order.start + 1
    for i in order:
        block = blocks[i]
        tok, ch = _price(block, budget, price_image)
        fits = (room_t is None or used_t + tok <= room_t) and used_c + ch <= room_c
        if fits and (allow_images or isinstance(block, TextBlock)):
            kept.append(block)
            used_t, used_c = used_t + tok, used_c + ch
            if isinstance(block, TextBlock):
                kept_bytes += len(to_bytes(block.text))
            boundary = i if from_end else i + 1
            continue
        if isinstance(block, TextBlock):
            part, cut_bytes = _cut_text(block.text, budget, None if room_t is None else room_t - used_t,
                                        room_c - used_c, from_end=from_end)
            if part:
                kept.append(TextBlock(part))
                used_t += budget.count_tokens(part)
                used_c += len(part)
                kept_bytes += cut_bytes
        if not from_end:
            boundary = i
        break
    return _Taken(tuple(kept), boundary, used_t, used_c, kept_bytes, cut_bytes)


def _cut_text(
    text: str, budget: ContextBudget, room_t: int | None, room_c: int, *, from_end: bool
) -> tuple[str, int]:
    """Longest prefix (or suffix) of ``text`` within the rooms, cut UTF-8 safely: (text, bytes)."""
    raw = to_bytes(text)

    def piece(n: int) -> bytes:
        if from_end:
            return raw[safe_tail_start(raw, len(raw) - n):]
        return raw[: safe_head_cut(raw, n)]

    def fits(chunk: bytes) -> bool:
        s = chunk.decode("utf-8", "replace")
        return len(s) <= room_c and (room_t is None or budget.count_tokens(s) <= room_t)

    lo, hi = 0, len(raw)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(piece(mid)):
            lo = mid
        else:
            hi = mid - 1
    chunk = piece(lo)
    return chunk.decode("utf-8", "replace"), len(chunk)


# --------------------------------------------------------------------------- rendering


def render_blocks(
    plan: BlockPlan, facts: PointerFacts, image_locators: Mapping[int, str | None],
) -> list[Block]:
    """Head blocks, the gap marker naming each omitted image, tail blocks, the notice.

    ``image_locators`` maps an omitted image's index to its stored source id, or to
    ``None`` when storing it failed (the notice then says it could NOT be saved).
    Locators longer than :data:`MAX_LOCATOR_CHARS` are capped, so the budget reserved
    by :func:`plan_blocks` holds.
    """
    if plan.inline:
        return list(plan.head)
    gap = _gap_text(plan.omitted_text_bytes, plan.omitted_images, image_locators)
    return _assemble(plan, gap, "\n" + _footer(facts))


def _assemble(plan: BlockPlan, gap: str, notice: str) -> list[Block]:
    out: list[Block] = []
    for block in [*plan.head, None, *plan.tail, TextBlock(notice)]:
        if block is None:  # the gap marker starts on a line of its own
            prev = out[-1] if out else None
            sep = "\n" if isinstance(prev, TextBlock) and prev.text and not prev.text.endswith("\n") else ""
            block = TextBlock(sep + gap)
        if out and isinstance(block, TextBlock) and isinstance(out[-1], TextBlock):
            out[-1] = TextBlock(out[-1].text + block.text)  # adjacent text merges, nothing added
        else:
            out.append(block)
    return out


def render_blocks_degraded(
    plan: BlockPlan, facts: DegradedFacts, image_locators: Mapping[int, str | None], whole: RetainedText,
) -> list[Block]:
    """Like :func:`render_blocks` when the full text could NOT be stored: no text locator.

    ``whole`` carries the size and line count of the full text (its bytes may be
    empty). Images stored on their own are still named by locator. The degraded notice
    is never longer than the pointer notice :func:`plan_blocks` reserved, for the same
    tool, call id and exit code.
    """
    if plan.inline:
        return list(plan.head)
    gap = _gap_text(plan.omitted_text_bytes, plan.omitted_images, image_locators)
    return _assemble(plan, gap, "\n" + degraded_footer(facts, whole))


def full_text_chunks(blocks: Sequence[Block], image_locators: Mapping[int, str | None]) -> Iterator[bytes]:
    """The stored form of a block result: text as is, each image as one reference line."""
    for index, block in enumerate(blocks):
        if isinstance(block, TextBlock):
            yield to_bytes(block.text)
        else:
            loc = image_locators.get(index)
            if index not in image_locators:
                where = "shown inline, not stored"
            elif loc:
                where = f"stored as {loc}"
            else:
                where = "omitted from the context and could NOT be saved"
            yield f"\n[{_image_label(index, block)}: {where}]\n".encode()
