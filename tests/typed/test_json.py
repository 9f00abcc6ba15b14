"""JSON outputs: previews cut between elements with an outline; reads by JSON Pointer, by element."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from s3spill.agent.tools import AgentTools
from s3spill.artifacts.store import ArtifactStore
from s3spill.context.policy import SpillPolicy
from s3spill.errors import InvalidRequest
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import child_env
from s3spill.typed.cuts import json_head_cut, json_tail_start
from tests.examples import examples
from tests.spill.outputs import preview_part, source_id_of
from tests.typed.samples import one_line_json

SESSION = "session-json-1"
GAP = "\n[… "


def _structural_commas(doc: bytes) -> set[int]:
    """Positions just after each comma outside strings (a reference scanner, byte by byte)."""
    out, in_string, escaped = set(), False, False
    for i, b in enumerate(doc):
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:
                escaped = True
            elif b == 0x22:
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b == 0x2C:
            out.add(i + 1)
    return out


#: A backslash and the byte it escapes, left to right (``\\`` is one pair: a quote after it ends the string).
_ESCAPE = re.compile(rb"\\[\s\S]")


def _after_structural_comma(doc: bytes, end: int) -> bool:
    """Whether ``end`` is just after a comma outside strings: with each escape pair blanked
    (same length), a byte is outside strings when an even number of quotes stands before it.
    The same answer as ``end in _structural_commas(doc)`` for a JSON document, in C, for the
    30 MB one (the byte loop costs seconds there)."""
    plain = _ESCAPE.sub(b"__", doc)
    return plain[end - 1:end] == b"," and plain.count(b'"', 0, end) % 2 == 0


def _spill(store: ObjectStore, data: bytes, tool: str = "bash") -> str:
    with Spiller(store, SESSION, journal=None) as spiller:
        result = spiller.externalize(_chunks(data), tool)
    assert result.spilled, result.degraded_reason
    assert SpillPolicy().budget().fits(result.context_text)
    return result.context_text


def _chunks(data: bytes, size: int = 1 << 20) -> Any:
    return iter([data[i : i + size] for i in range(0, len(data), size)])


@pytest.fixture(scope="module")
def big_doc() -> bytes:
    """A 30 MB minified JSON document on one line."""
    doc = one_line_json(77_000)
    assert len(doc) > 30_000_000 and b"\n" not in doc
    return doc


@pytest.fixture(scope="module")
def big_spill(tmp_path_factory: pytest.TempPathFactory, big_doc: bytes) -> tuple[LocalStore, str]:
    """``big_doc`` spilled once to a local store (the two tests below read it, neither writes),
    with the context text the spill answered."""
    store = LocalStore(tmp_path_factory.mktemp("big-json"))
    return store, _spill(store, big_doc)


def test_thirty_megabyte_one_line_json_preview(big_spill: tuple[LocalStore, str], big_doc: bytes) -> None:
    """The preview's head ends and its tail starts between items; the outline counts them."""
    _, text = big_spill
    preview = preview_part(text)
    head, tail = preview.split(GAP, 1)
    tail = tail.split("…]\n", 1)[1].rstrip("\n")
    assert big_doc.startswith(head.encode()) and _after_structural_comma(big_doc, len(head.encode()))
    assert big_doc.endswith(tail.encode())
    assert _after_structural_comma(big_doc, len(big_doc) - len(tail.encode()))
    assert head.endswith("}},") and tail.startswith('{"kind":"Pod"')
    assert "Outline: object of 4 keys, depth 7: 'apiVersion': string; 'items': array of 77,000;" in text
    assert 'read_artifact(source_id, path="/items/0")' in text


def test_path_reads_into_the_thirty_megabyte_document(big_spill: tuple[LocalStore, str],
                                                      big_doc: bytes) -> None:
    """A path near the start reads one chunk; one near the end returns exactly that element."""
    store, text = big_spill
    sid = source_id_of(text)
    parsed = json.loads(big_doc)["items"]
    arts = ArtifactStore(store, session_id=SESSION)
    first = arts.read_json(sid, "/items/0")
    assert first.bytes_scanned <= 2 * 1024 * 1024
    assert json.loads("{" + ",".join(r.split(": ", 1)[0] + ":" + r.split(": ", 1)[1]
                                     for r in first.rows) + "}") == parsed[0]
    page = arts.read_json(sid, "/items", offset=76_998, limit=5)
    assert [json.loads(r.split("] ", 1)[1]) for r in page.rows] == parsed[76_998:]
    assert page.eof and page.total_elements == 77_000
    assert "[EOF: path=\"/items\" has 77,000 elements]" in page.render()
    assert arts.read_json(sid, "/metadata/resourceVersion").rows == ('"12345"',)


def test_a_document_pages_by_element_exactly(local_store: LocalStore) -> None:
    """Following the footers through /items gives every element, none cut, none twice."""
    doc = one_line_json(3000, pad=40)
    sid = source_id_of(_spill(local_store, doc))
    tools = AgentTools(local_store, SESSION)
    got: list[Any] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        out = tools.call("read_artifact", {"source_id": sid, "path": "/items", "offset": offset})
        assert not out.is_error and out.structured is not None, out.text
        assert out.structured["output_kind"] == "json" and out.structured["path"] == "/items"
        rows = out.text.splitlines()[1:-1]
        got += [json.loads(r.split("] ", 1)[1]) for r in rows]
        offset = out.structured["next_offset"]
        pages += 1
    assert got == json.loads(doc)["items"] and pages > 1
    top = tools.call("read_artifact", {"source_id": sid, "path": ""})
    assert '"kind": "List"' in top.text and '(cut; read it whole with path="/items")' in top.text


def test_path_errors_are_one_line_each(local_store: LocalStore) -> None:
    """A missing key, an index past the end, a step into a scalar, a bad pointer, not-JSON."""
    sid = source_id_of(_spill(local_store, one_line_json(500)))
    arts = ArtifactStore(local_store, session_id=SESSION)
    for path, words in [("/nope", "has no 'nope'"), ("/items/500", '"/items" has no \'500\''),
                        ("/kind/x", "is a string, not an object or array"),
                        ("items", "starts with '/'")]:
        with pytest.raises(InvalidRequest, match=words.replace("(", r"\(")):
            arts.read_json(sid, path)
    text_sid = source_id_of(_spill(local_store, b"not json at all\n" * 10_000))
    with pytest.raises(InvalidRequest, match="not valid JSON"):
        arts.read_json(text_sid, "")


def test_pretty_printed_json_is_cut_between_elements(local_store: LocalStore) -> None:
    """An indented document's head and tail are cut after a comma too."""
    doc = json.dumps(json.loads(one_line_json(2000)), indent=2).encode()
    text = _spill(local_store, doc)
    head, tail = preview_part(text).split(GAP, 1)
    tail = tail.split("…]\n", 1)[1].rstrip("\n")
    commas = _structural_commas(doc)
    assert len(head.encode()) in commas and len(doc) - len(tail.encode()) in commas


def test_cli_reads_a_path(tmp_path: Path) -> None:
    """`s3spill read --path` prints the value at a JSON Pointer."""
    doc = one_line_json(1000)
    store = LocalStore(tmp_path / "store")
    sid = source_id_of(_spill(store, doc))
    env = child_env({"S3SPILL_STORE": (tmp_path / "store").as_uri(), "S3SPILL_SESSION": SESSION})
    proc = subprocess.run([sys.executable, "-m", "s3spill", "read", sid, "--path", "/items/999/metadata"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert '"name": "pod-0000999"' in proc.stdout and "[EOF" in proc.stdout


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab,"\\{}[] \u00e9', max_size=6),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text('ab,"\\{', max_size=4), inner,
                                                                  max_size=5),
    max_leaves=40)


@settings(max_examples=examples(suite=125, thorough=500), deadline=None)
@given(_JSON, st.integers(1, 400), st.integers(1, 400), st.booleans())
@example([",]"], 1, 4, False)  # a tail window ',]"]' that starts inside a string (was cut there)
def test_cuts_always_fall_after_a_structural_comma(value: Any, h: int, t: int, pretty: bool) -> None:
    """Whatever the document and window, a head cut and a tail start follow a comma outside strings."""
    doc = json.dumps(value, indent=1 if pretty else None, ensure_ascii=False).encode()
    commas = _structural_commas(doc)
    cut = json_head_cut(doc[:h])
    if cut is not None:
        assert cut in commas
    start_window = max(0, len(doc) - t)
    start = json_tail_start(doc[start_window:])
    if start is not None:  # an escaped quote just before the window included
        assert start_window + start in commas


def test_a_failing_typed_preview_falls_back_to_the_text_preview(local_store: LocalStore,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """If the outline breaks, the stored output still gets a (text) pointer, never a degraded notice."""
    from s3spill.typed import structured

    def broken(self: object) -> None:
        raise RuntimeError("outline broke")

    monkeypatch.setattr(structured.StructureScanner, "outline", broken)
    with Spiller(local_store, SESSION, journal=None) as spiller:
        result = spiller.externalize(one_line_json(2000), "bash")
    assert result.spilled and result.mode == "pointer" and result.degraded_reason is None
    assert "could NOT be saved" not in result.context_text
    assert source_id_of(result.context_text) == result.artifact.source_id  # type: ignore[union-attr]


def test_a_tail_that_starts_after_an_escaping_backslash_is_still_cut_right() -> None:
    """A window that begins with an escaped quote, inside a string, is still cut after a comma."""
    doc = json.dumps(['x"y, 1, "', 1, 2, {"a": "b"}]).encode()
    window = doc[doc.index(b'\\"') + 1 :]  # starts with the escaped quote, inside a string
    start = json_tail_start(window)
    assert start is not None and window[start:] == b' 1, 2, {"a": "b"}]'
