"""NDJSON, CSV and TSV: previews and pages by record, exact record counts, the header repeated."""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.agent.tools import AgentTools
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.errors import InvalidRequest
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from tests.spill.outputs import follow_pages, preview_part, source_id_of
from tests.typed.samples import csv_with_quoted_newlines, ndjson

SESSION = "session-records-1"
RECORDS = re.compile(r"Records: ([\d,]+) \(record 1 is the header\); the preview shows records "
                     r"1–([\d,]+) and ([\d,]+)–([\d,]+); ([\d,]+) records omitted")
GAP = "\n[… "


def _n(text: str) -> int:
    return int(text.replace(",", ""))


def _rows(data: bytes, delimiter: str = ",") -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode(), newline=""), delimiter=delimiter))


def _whole_records(text: str, data: bytes) -> tuple[list[list[str]], ...]:
    """Checks the preview's head is the first records of ``data`` and its tail the last, each
    whole; returns all the records, the head's and the tail's."""
    head, rest = preview_part(text).split(GAP, 1)
    tail = rest.split("…]\n", 1)[1]
    rows = _rows(data)
    head_rows, tail_rows = _rows(head.encode()), _rows(tail.encode())
    assert head_rows == rows[: len(head_rows)] and tail_rows == rows[len(rows) - len(tail_rows) :]
    return rows, head_rows, tail_rows


def _spill(store: ObjectStore, data: bytes) -> str:
    with Spiller(store, SESSION, journal=None) as spiller:
        result = spiller.externalize(iter([data[i : i + 65536] for i in range(0, len(data), 65536)]),
                                     "bash")
    assert result.spilled
    return result.context_text


def test_csv_preview_shows_whole_records_and_exact_counts(store: ObjectStore) -> None:
    """Head and tail hold whole records (quoted newlines kept inside); the counts are exact."""
    data = csv_with_quoted_newlines(30_000)
    text = _spill(store, data)
    rows, head_rows, tail_rows = _whole_records(text, data)
    found = RECORDS.search(text)
    assert found, text[-800:]
    total, head_end, tail_start, tail_end, omitted = map(_n, found.groups())
    assert total == tail_end == len(rows) == 30_001
    assert head_end == len(head_rows) and tail_start == total - len(tail_rows) + 1
    assert omitted == total - len(head_rows) - len(tail_rows)
    assert "record_offset=<records to skip>" in text


def test_csv_pages_by_record_with_the_header_repeated(local_store: LocalStore) -> None:
    """Following record_offset gives every record exactly once; pages after the first repeat the header."""
    data = csv_with_quoted_newlines(5000)
    sid = source_id_of(_spill(local_store, data))
    tools = AgentTools(local_store, SESSION)
    got: list[list[str]] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        out = tools.call("read_artifact", {"source_id": sid, "record_offset": offset})
        assert not out.is_error and out.structured is not None, out.text
        page = ArtifactStore(local_store, session_id=SESSION).read_records(
            sid, offset, limit=2000, max_chars=tools.page_chars)
        assert page.render() == out.text
        if offset:
            assert page.header is not None and _rows(page.header.raw()) == [["id", "name", "comment"]]
        for row in page.rows:
            got += _rows(row.raw())
        offset = out.structured["next_record_offset"]
        pages += 1
    assert got == _rows(data) and pages > 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text(alphabet='a,"\n\té', max_size=8), st.integers(0, 99)),
                min_size=1, max_size=60), st.integers(16, 64))
def test_record_table_survives_quotes_across_chunks(cells: list[tuple[str, int]], chunk: int) -> None:
    """Any quoting, any chunk size: every record read by number equals csv's parse.

    (A lone CR outside quotes is left out: csv ends a record there, RFC 4180 does not.)
    """
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["text", "n"])
    for text, n in cells:
        writer.writerow([text, n])
    data = buf.getvalue().encode()
    with tempfile.TemporaryDirectory() as tmp:
        arts = ArtifactStore(LocalStore(tmp), TransferConfig(index_chunk_size=chunk), session_id=SESSION)
        ref = arts.write(SESSION, data, "t", output_kind="csv", output_description="CSV")
        rows = _rows(data)
        for k in range(len(rows)):
            page = arts.read_records(ref.source_id, k, limit=1)
            assert _rows(page.rows[0].raw() + b"\n") == [rows[k]]
        assert arts.read_records(ref.source_id, 0).total_records == len(rows)


def test_ndjson_preview_counts_records_and_lines_page_them(local_store: LocalStore) -> None:
    """NDJSON: whole records in the preview, exact counts, and line pages give back every record."""
    data = ndjson(60_000)
    text = _spill(local_store, data)
    found = re.search(r"Records: ([\d,]+); the preview shows records 1–([\d,]+) and ([\d,]+)–([\d,]+);"
                      r" ([\d,]+) records omitted", text)
    assert found
    total, head_end, tail_start, _, omitted = map(_n, found.groups())
    head, rest = preview_part(text).split(GAP, 1)
    tail = rest.split("…]\n", 1)[1]
    records = data.splitlines()
    assert [json.loads(r) for r in head.splitlines()] == [json.loads(r) for r in records[:head_end]]
    assert tail.encode() == b"\n".join(records[tail_start - 1 :]) + b"\n"
    assert total == 60_000 and omitted == total - head_end - (total - tail_start + 1)
    stored = follow_pages(ArtifactStore(local_store, session_id=SESSION), source_id_of(text))
    assert [json.loads(r) for r in stored.splitlines()] == [json.loads(r) for r in records]


def test_tsv_is_paged_by_record(local_store: LocalStore) -> None:
    """A TSV is detected as such and read by record."""
    data = b"a\tb\n" + b"".join(f"{i}\tvalue {i}\n".encode() for i in range(20_000))
    text = _spill(local_store, data)
    assert "Type: TSV table (2 columns)" in text
    page = ArtifactStore(local_store, session_id=SESSION).read_records(source_id_of(text), 19_990)
    assert [_rows(r.raw(), "\t")[0] for r in page.rows] == _rows(data, "\t")[19_990:] and page.eof


def test_record_reads_refuse_other_kinds(local_store: LocalStore) -> None:
    """record_offset on a text artifact says to read it by line."""
    sid = source_id_of(_spill(local_store, b"plain text line\n" * 20_000))
    with pytest.raises(InvalidRequest, match="not a CSV/TSV artifact"):
        ArtifactStore(local_store, session_id=SESSION).read_records(sid, 0)
    out: Any = AgentTools(local_store, SESSION).call("read_artifact", {"source_id": sid,
                                                                       "record_offset": 3})
    assert out.is_error and "\n" not in out.text


def test_grep_names_the_record_of_each_match(local_store: LocalStore) -> None:
    """In a CSV, a match on a quoted field's second line names its record, not just its line."""
    data = csv_with_quoted_newlines(5000)
    sid = source_id_of(_spill(local_store, data))
    arts = ArtifactStore(local_store, session_id=SESSION)
    result = arts.grep(sid, r'^line, (100|4995)"')
    assert [m.record_number for m in result.matches] == [102, 4997]
    rows = _rows(data)
    assert rows[101][2] == "multi\nline, 100" and rows[4996][2] == "multi\nline, 4995"
    assert "[record 102] line, 100" in result.render()
    assert arts.read_records(sid, 101, limit=1).rows[0].number == 102
    plain = arts.grep(source_id_of(_spill(local_store, ndjson(20_000))), '"n": 7,')
    assert plain.matches[0].record_number is None and "[record" not in plain.render()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200).map(lambda b: b.replace(b"x", b'"').replace(b"y", b"\n")), st.booleans())
def test_both_record_counters_agree(data: bytes, quoted: bool) -> None:
    """The context layer's record counter and the artifact writer's count the same ends."""
    from s3spill.typed.cuts import record_ends as preview_ends
    from s3spill.typed.record_ends import record_end_positions
    from s3spill.typed.record_ends import record_ends as stored_ends

    assert preview_ends(data, quoted) == stored_ends(data, quoted) == len(
        record_end_positions(data, quoted))


def test_a_tight_token_budget_still_cuts_between_records(local_store: LocalStore) -> None:
    """When the budget shrinks the preview, it is cut between records again and the counts
    describe the preview actually shown."""
    from s3spill.context.policy import SpillPolicy

    data = csv_with_quoted_newlines(30_000)
    policy = SpillPolicy(max_inline_tokens=1500)
    with Spiller(local_store, SESSION, policy, journal=None) as spiller:
        result = spiller.externalize(data, "bash")
    text = result.context_text
    assert result.spilled and policy.budget().fits(text)
    _, head_rows, tail_rows = _whole_records(text, data)
    found = RECORDS.search(text)
    if found:  # a settled cut names its ranges, exactly
        total, head_end, tail_start, _, _ = map(_n, found.groups())
        assert head_end == len(head_rows) and tail_start == total - len(tail_rows) + 1
    else:  # it did not settle: only the total is stated
        assert "Records: 30,001 (record 1 is the header)." in text


def test_a_degraded_csv_preview_is_cut_between_records(local_store: LocalStore) -> None:
    """When the store fails, the honest degraded preview still shows whole records."""
    from s3spill.testing import Fault, FaultyStore

    data = csv_with_quoted_newlines(30_000)
    store = FaultyStore(local_store, [Fault("*", "unavailable", times=10**9)])
    with Spiller(store, SESSION, journal=None) as spiller:
        result = spiller.externalize(data, "bash")
    assert result.mode == "degraded" and "could NOT be saved" in result.context_text
    head, rest = result.context_text.split(GAP, 1)
    tail = rest.split("…]\n", 1)[1].split("\n[s3spill]", 1)[0] + "\n"
    rows = _rows(data)
    head_rows, tail_rows = _rows(head.encode()), _rows(tail.encode())
    assert head_rows == rows[: len(head_rows)] and tail_rows == rows[len(rows) - len(tail_rows) :]
