"""The preview shows short lines whole: a head or tail cut falls between lines where lines are short."""

from __future__ import annotations

import re
from pathlib import Path

from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore

GAP = re.compile(r"^\[… [\d,]+ bytes omitted \((.*)\) …\]$", re.M)


def _preview(tmp_path: Path, data: bytes) -> str:
    with Spiller(LocalStore(tmp_path / "store"), "preview-lines", journal=None) as spiller:
        result = spiller.externalize(iter([data[i:i + 65536] for i in range(0, len(data), 65536)]),
                                     "bash")
    assert result.spilled
    return result.context_text


def test_seq_shows_every_previewed_line_whole(tmp_path: Path) -> None:
    """`seq 1 300000`: the line before the gap is a whole number (it was "1" for line 1451),
    the line after it too, and the marker names whole lines only."""
    text = _preview(tmp_path, b"".join(b"%d\n" % i for i in range(1, 300_001)))
    found = GAP.search(text)
    assert found and found.group(1).startswith("lines "), found and found.group(0)
    first, last = (int(n.replace(",", "")) for n in re.findall(r"[\d,]+", found.group(1)))
    before = text[: found.start()].splitlines()
    after = text[found.end() + 1:].splitlines()
    assert before[-1] == str(first - 1) and after[0] == str(last + 1), (before[-1], after[0])
    assert [int(n) for n in before] == list(range(1, first))


def test_one_long_line_is_still_cut_inside(tmp_path: Path) -> None:
    """A single long line (minified JSON, a log without newlines) keeps a full head: the cut
    stays inside the line rather than dropping the whole preview."""
    text = _preview(tmp_path, b"x" * 3_000_000 + b"\nend\n")
    found = GAP.search(text)
    assert found and ("the middle of line 1" in found.group(1) or "the rest of line 1" in found.group(1))
    assert text.startswith("x" * 1000)
