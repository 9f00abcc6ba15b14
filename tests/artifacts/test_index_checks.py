"""The index's hand checks refuse every index the pydantic model refused, and read the others alike."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from s3spill.artifacts.index import ArtifactIndex
from s3spill.artifacts.index_builder import build_stats
from s3spill.artifacts.index_fields import FIELDS, OUTPUT_KINDS, IndexInvalid
from tests.artifacts.old_index_model import OldArtifactIndex

#: Values each field is set to in turn: every JSON type, bounds, near-miss digests and dates.
VALUES: list[Any] = [
    None, "", "x", "text", "zstd", "identity", "artifact_index", 0, 1, 2, 3, -1, -2, 15, 16, 2**40, True,
    False, 5.0, 1.5, "5", "2", [], [0], [1], [-2], [4], ["a"], [True], [1.0], [None], {}, {"a": 1},
    "0" * 32, "0" * 31, "0" * 33, "A" * 32, "0" * 32 + "\n", "0" * 64, "f" * 64, "0" * 63 + "g",
    "2026-12-02T03:13:35Z", "2026-12-02T03:13:35.5+01:00", "2026-13-02T03:13:35Z", "yesterday",
    1700000000, "x" * 200, "x" * 201, "x" * 500, "x" * 501, '"etag"',
]


def _lax(name: str, original: object, value: object) -> bool:
    """Where the model's lax mode coerced and the hand checks are strict (our writer writes none of
    these): a value of another JSON type than the field's (``1`` for ``true``, ``5.0``, ``"5"`` or
    ``true`` for an integer, a number for a date), also in a table, or a date written as a number
    in a string."""
    if type(value) is not type(original):
        return value is not None and not isinstance(value, list | dict)
    if isinstance(value, list) and isinstance(original, list):  # the same, element by element
        return any(_lax(name, o, v) for o, v in zip(original, value, strict=False))
    return name == "created_at" and isinstance(value, str) and value.lstrip("-").replace(".", "").isdigit()


def _valid(data: bytes = b"line one\nline two\n" * 40, chunk: int = 256, **kw: Any) -> dict[str, Any]:
    stats = build_stats(data, chunk)
    index = stats.to_index(session_hash="0" * 32, name="20261202T000000Z-abc-n",
                           created_at=datetime(2026, 12, 2, 3, 13, 35, 171927, tzinfo=UTC), tool="bash",
                           call_id="call-1", label=None, body_etag='"etag"', **kw)
    out: dict[str, Any] = json.loads(index.to_bytes())
    return out


def _both(raw: bytes) -> tuple[OldArtifactIndex | None, ArtifactIndex | None]:
    try:
        old: OldArtifactIndex | None = OldArtifactIndex.model_validate_json(raw)
    except ValidationError:
        old = None
    try:
        new: ArtifactIndex | None = ArtifactIndex.model_validate_json(raw)
    except IndexInvalid:
        new = None
    return old, new


def _agree(raw: bytes, name: str, original: object, value: object) -> None:
    old, new = _both(raw)
    if old is None:
        assert new is None, raw[:300]
        return
    if new is None:
        assert _lax(name, original, value), raw[:300]
        return
    assert new.model_dump() == {name: getattr(old, name) for name in FIELDS}


@pytest.mark.parametrize("base", ["text", "csv", "binary"])
def test_each_field_set_to_each_value_is_refused_where_the_model_refused_it(base: str) -> None:
    """Every field of a text, a CSV (record table) and a binary index (kind and description), set to
    each of ~50 values or dropped: refused by the hand checks wherever the model refused it, read
    as the same fields where both accept it."""
    extra = {"output_kind": base, "output_description": "PNG image" if base == "binary" else None}
    good = _valid(**extra)
    if base == "csv":
        stats = build_stats(b"a,b\n1,2\n" * 40, 256)
        good["chunk_records"], good["chunk_quoted"] = [0] * len(stats.chunk_sha256), [False] * len(
            stats.chunk_sha256)
    for name in FIELDS:
        original = good.get(name)
        dropped = {k: v for k, v in good.items() if k != name}
        _agree(json.dumps(dropped).encode(), name, original, None)
        for value in VALUES:
            changed = dict(good, **{name: value})
            if isinstance(value, list) and isinstance(original, list) and original:
                changed[name] = value * len(original)  # a table of the right length
            _agree(json.dumps(changed).encode(), name, original, value)


def test_whole_documents_the_model_refused_are_refused() -> None:
    """Not JSON, not an object, not UTF-8, a lone surrogate, an unknown field, UTF-16: refused as before."""
    good = json.dumps(_valid())
    cases = [b"", b"{", b"[]", b'"x"', b"null", good.encode()[:-1], good.encode() + b"x",
             good.replace('"bash"', '"ba\\ud800sh"').encode(),
             good.replace("bash", "ba\xffsh").encode("latin-1"),
             good.encode("utf-16"), good.replace('"tool"', '"extra":1,"tool"').encode()]
    for raw in cases:
        old, new = _both(raw)
        assert old is None and new is None, raw[:100]


def test_our_writer_writes_what_the_model_wrote() -> None:
    """The stored bytes are the model's ``model_dump_json`` of the same fields, byte for byte."""
    for extra in ({}, {"output_kind": "binary", "output_description": "PNG image, 2x2"}):
        good = _valid(**extra)
        new = ArtifactIndex.model_validate(good)
        old = OldArtifactIndex.model_validate(good)
        exclude = {"chunk_records", "chunk_quoted"} | ({"output_kind", "output_description"} if not extra
                                                      else set())
        assert new.to_bytes() == old.model_dump_json(exclude=exclude).encode()


def test_output_kinds_match_the_literal() -> None:
    """The hand checks know the output kinds the type names."""
    from typing import get_args

    from s3spill.artifacts.index import OutputKind

    assert get_args(OutputKind) == OUTPUT_KINDS
