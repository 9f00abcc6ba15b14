"""The CLI's ``read`` and ``grep`` (where a pointer sends a model) leave usage events."""

from __future__ import annotations

from pathlib import Path

import pytest

from s3spill.spill.spiller import Spiller
from s3spill.usage.source import part_events, usage_objects
from tests.cli.in_process import cli_call, local_cli_env
from tests.usage.conftest import SECRET, SESSION, _source_id


def test_cli_read_and_grep_record_what_they_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """One small object per command, holding the printed (masked) text; none for --show-secrets."""
    store = local_cli_env(tmp_path, monkeypatch, SESSION)
    with Spiller(store, SESSION, journal=None) as spiller:
        result = spiller.externalize("".join(f"line {n} key={SECRET}\n" for n in range(1500)), "build")
    sid = _source_id(result.context_text)
    code, page, _ = cli_call(["read", sid, "--offset", "10"], capsys)
    assert code == 0 and SECRET not in page
    code, found, _ = cli_call(["grep", sid, "line 42 "], capsys)
    assert code == 0
    assert cli_call(["read", sid, "--show-secrets"], capsys)[0] == 0
    events = sorted((e for o in usage_objects(store) for e in part_events(store.get(o.key))),
                    key=lambda e: e["op"])
    assert [(e["op"], e["via"], e["tool"]) for e in events] == [("grep", "s3spill grep", "build"),
                                                                 ("read", "s3spill read", "build")]
    grep, read = events
    assert read["shown"] == page and read["first_line"] == 11 and read["total_lines"] == 1500
    assert grep["shown"] == found and grep["matches"] == 1
    assert all(SECRET not in e["shown"] for e in events)
