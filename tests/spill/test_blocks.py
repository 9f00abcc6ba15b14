"""Text and image blocks through the Spiller: omitted images become artifacts named by locator."""

from __future__ import annotations

import re
import struct

from s3spill.artifacts.store import ArtifactStore
from s3spill.context.block_plan import ImageBlock, TextBlock, default_image_price
from s3spill.context.policy import SpillPolicy
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import Fault, FaultyStore

SESSION = "session-blocks"
LOCATOR = re.compile(r'image #(\d+) \([^)]*\) stored as source_id="(artifact:[^"]+)"')


def png(width: int, height: int, payload: int = 5_000) -> bytes:
    """A PNG signature and IHDR header (what the pricer reads), then filler bytes."""
    return b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", width, height) + \
        bytes(range(256)) * (payload // 256)


def _blocks() -> list[TextBlock | ImageBlock]:
    return [TextBlock("screenshot report\n" + "row of text\n" * 300),
            ImageBlock(png(1600, 1200)), ImageBlock(png(1024, 768)), ImageBlock(png(800, 600)),
            TextBlock("summary: 3 screenshots\n")]


def _text(blocks: list[TextBlock | ImageBlock]) -> str:
    return "".join(b.text for b in blocks if isinstance(b, TextBlock))


def test_omitted_images_are_stored_and_named_by_locator(store: ObjectStore) -> None:
    """Over a token budget, omitted images are their own artifacts; the notice names each one."""
    policy = SpillPolicy(max_inline_tokens=3_000)
    blocks = _blocks()
    with Spiller(store, SESSION, policy) as spiller:
        result = spiller.externalize_blocks(blocks, "browser", "c1")
    assert result.spilled and result.artifact is not None and result.degraded_reason is None
    text = result.text
    named = {int(n) - 1: sid for n, sid in LOCATOR.findall(text)}
    assert named and set(named) == set(result.images)
    reader = ArtifactStore(store, session_id=SESSION)
    for index, sid in named.items():
        image = blocks[index]
        assert isinstance(image, ImageBlock)
        assert b"".join(reader.iter_verified(sid)) == image.data
        assert not any(b is image for b in result.blocks)
    full = b"".join(reader.iter_verified(result.artifact.source_id)).decode()
    assert "row of text" in full and all(sid in full for sid in named.values())
    price = sum(default_image_price(b) for b in result.blocks if isinstance(b, ImageBlock))
    assert price + policy.counter()(text) <= 3_000
    assert len(text) <= policy.hard_cap_chars


def test_blocks_within_the_budget_are_returned_as_they_are(store: ObjectStore) -> None:
    """Nothing over budget: the same blocks back, nothing stored."""
    blocks = [TextBlock("ok\n"), ImageBlock(png(100, 100))]
    with Spiller(store, SESSION, SpillPolicy(max_inline_tokens=5_000)) as spiller:
        result = spiller.externalize_blocks(blocks, "browser", "c2")
    assert result.blocks == blocks and not result.spilled
    assert list(store.list("")) == []


def test_with_the_store_down_no_locator_is_named(local_store: LocalStore) -> None:
    """Images and text that could not be stored are said to be NOT saved; no locator appears."""
    store = FaultyStore(local_store, [Fault("*", "unavailable", times=10**9)])
    policy = SpillPolicy(max_inline_tokens=3_000)
    result = Spiller(store, SESSION, policy).externalize_blocks(_blocks(), "browser", "c3")
    assert not result.spilled and result.degraded_reason
    text = result.text
    assert "artifact:" not in text and "could NOT be saved" in text
    assert result.images and all(ref is None for ref in result.images.values())
    assert len(text) <= policy.hard_cap_chars


def test_a_tiny_budget_points_at_the_text_that_names_every_image(local_store: LocalStore) -> None:
    """When not even the notice fits beside the blocks, every image is stored and the text points on."""
    policy = SpillPolicy(max_inline_tokens=10, hard_cap_chars=2_000)
    blocks = [TextBlock("x" * 3_000)] + [ImageBlock(png(500, 500)) for _ in range(12)]
    with Spiller(local_store, SESSION, policy) as spiller:
        result = spiller.externalize_blocks(blocks, "browser", "c4")
    assert result.artifact is not None and len(result.images) == 12
    assert all(ref is not None for ref in result.images.values())
    assert len(result.text) <= 2_000 and result.artifact.source_id in result.text
    full = b"".join(ArtifactStore(local_store, session_id=SESSION)
                    .iter_verified(result.artifact.source_id)).decode()
    assert all(ref is not None and ref.source_id in full for ref in result.images.values())


def test_a_block_result_makes_one_usage_event_with_its_images_sizes(tmp_path: object) -> None:
    """One ``spill`` event per block result: raw bytes of text and images, stored bytes of every
    artifact, and what was shown — text blocks, and a line naming each image kept inline."""
    from s3spill.usage.recorder import UsageRecorder
    from s3spill.usage.source import part_events, usage_objects

    store = LocalStore(f"{tmp_path}/s")
    rec = UsageRecorder(store, batch=False)
    blocks = _blocks()
    with Spiller(store, SESSION, SpillPolicy(max_inline_tokens=3_000), usage=rec) as spiller:
        result = spiller.externalize_blocks(blocks, "browser", "c1")
    (event,) = [e for o in usage_objects(store) for e in part_events(store.get(o.key))]
    raw = sum(len(b.data) if isinstance(b, ImageBlock) else len(b.text.encode()) for b in blocks)
    kept = [b for b in result.blocks if isinstance(b, ImageBlock)]
    assert result.artifact is not None
    assert (event["op"], event["mode"], event["tool"]) == ("spill", "blocks", "browser")
    assert event["spilled"] and event["raw_bytes"] == raw and event["artifact"] == result.artifact.name
    assert event["stored_bytes"] > 0 and event["shown"].count("[image image/png") == len(kept)
    assert all(b.text in event["shown"] for b in result.blocks if isinstance(b, TextBlock))
