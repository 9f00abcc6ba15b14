"""Helpers for the Spiller tests: outputs with known bytes, and a reader that follows hints."""

from __future__ import annotations

import re

from s3spill.artifacts.paging import unrender
from s3spill.artifacts.store import ArtifactStore

SOURCE_ID = re.compile(r'source_id="(artifact:[^"]+)"')
CONTINUE = re.compile(r"continue with offset=(\d+), char_offset=(\d+)\]\s*$")
FOOTER_START = "\n[s3spill] "


def numbered_output(size: int, *, marker: str = "line") -> bytes:
    """Whole numbered lines, at most ``size`` bytes; every line differs, so a misplaced byte shows."""
    out = bytearray()
    i = 0
    while True:
        line = f"{marker} {i:07d} {'x' * (i % 37)}\n".encode()
        if len(out) + len(line) > size:
            return bytes(out)
        out += line
        i += 1


def source_id_of(context_text: str) -> str:
    found = SOURCE_ID.search(context_text)
    assert found, "the context text names no source id"
    return found.group(1)


def preview_part(context_text: str) -> str:
    """The context text before the notice (head, gap marker, tail, with its last newline)."""
    cut = context_text.rfind(FOOTER_START)
    assert cut >= 0, "no notice in the context text"
    return context_text[: cut + 1]


def follow_pages(arts: ArtifactStore, source_id: str, *, max_chars: int = 40_000) -> bytes:
    """Read from the first page to EOF, taking each next offset from the rendered footer."""
    out = bytearray()
    offset, char_offset = 0, 0
    for _ in range(100_000):
        text = arts.read_page(source_id, offset=offset, char_offset=char_offset,
                              max_chars=max_chars).render()
        out += unrender(text)
        footer = text.rstrip("\n").rsplit("\n", 1)[-1]
        if footer.startswith("[EOF"):
            return bytes(out)
        found = CONTINUE.search(footer)
        assert found, f"a page footer gives no way on: {footer!r}"
        offset, char_offset = int(found.group(1)), int(found.group(2))
    raise AssertionError("too many pages")
