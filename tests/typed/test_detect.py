"""Output kinds detected from the first bytes, stored in the index, named in the pointer."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.artifacts.index import ArtifactIndex, OutputKind
from s3spill.artifacts.index_builder import build_stats
from s3spill.artifacts.store import ArtifactStore
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.typed.detect import OUTPUT_KINDS, SNIFF_BYTES, detect
from tests.spill.outputs import source_id_of
from tests.typed.samples import csv_with_quoted_newlines, gzip_file, ndjson, one_line_json, png

SESSION = "session-detect-1"


def test_random_bytes_are_binary_data() -> None:
    """Random bytes match no magic number and are plain binary data."""
    found = detect(random.Random(3).randbytes(100_000))
    assert (found.kind, found.description) == ("binary", "binary data")


def test_png_is_named_with_its_size() -> None:
    """A PNG is binary, named by the magic database, with its width and height."""
    found = detect(png(64, 48))
    assert found.kind == "binary"
    assert "Portable Network Graphics" in found.description and found.description.endswith("64x48")
    assert found.mime == "image/png"


def test_gzip_and_elf_are_named() -> None:
    """gzip and ELF files are named from their magic numbers."""
    assert "GZIP" in detect(gzip_file(50_000)).description
    elf = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x02\x00\x3e\x00" + os.urandom(2000)
    assert detect(elf).description == "ELF executable"


@pytest.mark.parametrize("data", [
    b"\x1b[31mFAILED\x1b[0m test_x\r\n" * 200,  # colours and CRs are terminal text
    "café naïve déjà vu\n".encode("latin-1") * 200,  # not UTF-8, still text
    b"[INFO] starting\n[1/10] building\n" * 100,  # brackets but not JSON
    b"a line, with one comma\nand another, here\n" * 2 + b"then none\n",
    b"",
])
def test_text_stays_text(data: bytes) -> None:
    """Terminal text, Latin-1 text, log lines with brackets or commas are text."""
    assert detect(data).kind == "text"


def test_json_prefix_is_json_even_when_cut() -> None:
    """A JSON document cut by the sample is JSON; a syntax error inside the sample is not."""
    doc = one_line_json(2000)
    assert len(doc) > SNIFF_BYTES
    assert detect(doc[:100_000]).kind == "json"
    assert detect(doc, complete=True).description == "JSON document (top-level object)"
    assert detect(b'{"a": 1} trailing', complete=True).kind == "text"
    assert detect(b'{"a" 1, "b": 2}\n' * 10).kind == "text"


def test_ndjson_csv_tsv() -> None:
    """One value per line is NDJSON; rows of equal width are CSV or TSV, quoted newlines included."""
    assert detect(ndjson(5000)).kind == "ndjson"
    found = detect(csv_with_quoted_newlines(10_000))
    assert (found.kind, found.description) == ("csv", "CSV table (3 columns)")
    assert detect(b"a\tb\tc\n1\t2\t3\n4\t5\t6\n", complete=True).kind == "tsv"


def test_byte_order_marks() -> None:
    """UTF-16 is shown as bytes (named as such); a UTF-8 BOM does not hide JSON."""
    assert detect("\ufeffhello".encode("utf-16-le")).description.startswith("UTF-16 LE text")
    found = detect(b"\xef\xbb\xbf" + json.dumps([1, 2, 3]).encode(), complete=True)
    assert found.kind == "json" and found.bom


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000), st.booleans())
def test_detection_never_raises(data: bytes, complete: bool) -> None:
    """Any bytes get a kind from the known list."""
    assert detect(data, complete=complete).kind in OUTPUT_KINDS


def test_index_kinds_match_the_detector() -> None:
    """The index's list of kinds is the detector's (the layers cannot share the type)."""
    assert get_args(OutputKind) == OUTPUT_KINDS


def _index(kind: OutputKind, description: str | None) -> ArtifactIndex:
    stats = build_stats(b"abc\n", 16)
    return stats.to_index(session_hash="0" * 32, name="n", created_at=datetime(2026, 1, 1, tzinfo=UTC),
        tool="t", call_id=None, label=None, body_etag="e", output_kind=kind,
        output_description=description)


def test_text_index_bytes_do_not_name_a_kind_and_old_indexes_read_as_text() -> None:
    """A text index is written as before (older readers parse it); one without the field is text."""
    text = _index("text", None)
    raw = text.to_bytes()
    assert b"output_kind" not in raw
    assert ArtifactIndex.model_validate_json(raw).output_kind == "text"
    typed = _index("binary", "PNG\x00 image")
    again = ArtifactIndex.model_validate_json(typed.to_bytes())
    assert (again.output_kind, again.output_description) == ("binary", "PNG image")
    assert again.summary.startswith("PNG image (")


# The outputs are made by each test, not at collection (which every worker does).
@pytest.mark.parametrize(("make", "kind", "words"), [
    (partial(one_line_json, 3000), "json", "Type: JSON document (top-level object)"),
    (partial(ndjson, 20_000), "ndjson", "Type: NDJSON"),
    (partial(csv_with_quoted_newlines, 20_000), "csv", "Type: CSV table (3 columns)"),
    (lambda: b"plain line\n" * 20_000, "text", None),
], ids=["json", "ndjson", "csv", "text"])
def test_spilled_kind_is_in_the_index_and_the_pointer(store: ObjectStore, make: Callable[[], bytes],
                                                      kind: str, words: str | None) -> None:
    """The Spiller stores the detected kind in the index and names it in the pointer."""
    with Spiller(store, SESSION, journal=None) as spiller:
        result = spiller.externalize(make(), "bash")
    assert result.spilled
    index = ArtifactStore(store, session_id=SESSION).index(source_id_of(result.context_text))
    assert index.output_kind == kind
    if words is None:
        assert "Type:" not in result.context_text
    else:
        assert words in result.context_text
