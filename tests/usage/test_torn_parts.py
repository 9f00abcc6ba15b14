"""usage.engine.gather_parts skips a damaged usage part instead of failing the whole query."""

from __future__ import annotations

from pathlib import Path

import pytest

from s3spill.store.local import LocalStore
from s3spill.usage.engine import gather_parts
from s3spill.usage.recorder import UsageRecorder
from s3spill.usage.source import part_events, usage_objects
from tests.usage.test_parts import _event


@pytest.mark.parametrize(("damage", "shown"), [("cut", False), ("cut", True), ("byte", True)])
def test_a_damaged_part_is_skipped_and_the_others_are_gathered(tmp_path: Path, damage: str, shown: bool,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """A part cut mid-write, or one whose bytes no longer match their SHA-256 (seen when it is read
    whole, with the shown text), is left out with a warning; the other parts' events are all there."""
    store = LocalStore(tmp_path / "s")
    rec = UsageRecorder(store, batch=False)
    for i in range(3):
        rec.record(_event(i, "read"))
    parts = sorted(usage_objects(store), key=lambda o: o.key)
    kept = {e["id"] for p in (parts[0], parts[2]) for e in part_events(store.get(p.key))}
    path = Path(store.root, "objects", parts[1].key)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2] if damage == "cut" else raw[:3] + bytes([raw[3] ^ 0x20]) + raw[4:])
    out = tmp_path / "gathered.ndjson"
    with caplog.at_level("WARNING", logger="s3spill.usage"):
        gather_parts(store, parts, out, shown=shown)
    gathered = out.read_bytes()
    ids = {e["id"] for e in part_events(gathered)} if shown else {
        line.split(b'"id":"')[1].split(b'"')[0].decode() for line in gathered.splitlines()}
    assert ids == kept and len(kept) == 2
    assert "usage.part_damaged" in caplog.text and parts[1].key in caplog.text
