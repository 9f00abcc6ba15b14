"""The framework adapters' session records usage like the MCP server does (no ``usage=`` needed)."""

from __future__ import annotations

from pathlib import Path

from s3spill.adapters._common import Session
from s3spill.store.local import LocalStore
from s3spill.usage.source import part_events, usage_objects


def test_an_adapter_session_records_its_spills_and_reads(tmp_path: Path) -> None:
    """A spilled tool result and the model's page read of it are two events of the session."""
    store = LocalStore(tmp_path / "s")
    session = Session.open(store, "adapter-session")
    spilled = session.spill_sync("".join(f"row {n}\n" for n in range(12_000)), "search", "c1")
    sid = spilled.split('source_id="', 1)[1].split('"', 1)[0]
    assert not session.tools.tools.call(session.tools.read_name, {"source_id": sid}).is_error
    recorder = session.spiller.spiller.usage
    assert recorder is not None and recorder is session.tools.tools.usage
    recorder.close()  # type: ignore[attr-defined]
    events = [e for o in usage_objects(store) for e in part_events(store.get(o.key))]
    assert sorted((e["op"], e["tool"]) for e in events) == [("read", "search"), ("spill", "search")]
    assert len(list(usage_objects(store))) == 1  # one batch, written at close
