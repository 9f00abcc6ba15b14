"""A CSV record longer than a page: the page keeps to max_chars and says exactly where the rest is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from s3spill.artifacts.store import ArtifactStore
from s3spill.store.local import LocalStore

SESSION = "records-cut"
NOTE = re.compile(r"read the rest with "
                  r"(?:offset=(\d+), char_offset=(\d+)|--offset (\d+) --char-offset (\d+))\]")
LONG = "99," + "".join(chr(0x61 + i % 26) for i in range(5000)) + ",w"
QUOTED = '7,"' + "p" * 150 + "\n" + "q" * 3000 + "\n" + "r" * 40 + '",end'


@pytest.fixture(params=[LONG, QUOTED], ids=["one-line", "quoted-newlines"])
def arts(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[ArtifactStore, str]:
    """An artifact store holding a CSV whose record 52 is thousands of characters long."""
    request.node.long_record = request.param
    data = "a,b,c\n" + "".join(f"{i},{'x' * 20},y\n" for i in range(50)) + request.param + "\n1,q,r\n"
    store = ArtifactStore(LocalStore(tmp_path / "store"), session_id=SESSION)
    ref = store.write(SESSION, [data.encode()], "bash", output_kind="csv")
    return store, ref.source_id


@pytest.mark.parametrize("max_chars", [500, 601, 1000, 2500])
@pytest.mark.parametrize("style", ["cli", "call"])
def test_a_cut_record_fits_the_page_and_names_the_line_to_continue(
        arts: tuple[ArtifactStore, str], max_chars: int, style: str,
        request: pytest.FixtureRequest) -> None:
    """The page, header and footer included, is at most max_chars; the note names a line
    offset and char offset from which a line read gives exactly the rest of the record."""
    store, sid = arts
    page = store.read_records(sid, 51, limit=3, max_chars=max_chars)
    text = page.render(style)  # type: ignore[arg-type]
    assert len(text) <= max_chars, (len(text), max_chars)
    found = NOTE.search(text)
    assert found, text[-300:]
    offset, char_offset = (int(g) for g in found.groups() if g is not None)
    (row,) = page.rows
    shown = "\n".join(row.lines)
    rest = store.read_page(sid, offset=offset, char_offset=char_offset, limit=1, max_chars=20_000)
    record: str = request.node.long_record
    rest_of_line = "".join(line.text for line in rest.lines)
    assert record.startswith(shown + rest_of_line) and record[len(shown + rest_of_line):][:1] in "\n,"


def test_a_page_of_whole_records_keeps_to_max_chars(arts: tuple[ArtifactStore, str]) -> None:
    """Whole records stop before the page would pass max_chars, in either style."""
    store, sid = arts
    for offset in (0, 1, 30):
        page = store.read_records(sid, offset, limit=40, max_chars=700)
        assert all(len(page.render(s)) <= 700 for s in ("cli", "call"))  # type: ignore[arg-type]
        assert not any(row.cut for row in page.rows)
