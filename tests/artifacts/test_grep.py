"""grep over verified chunks: line numbers, byte offsets, context, and exact omitted counts."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.artifacts.grep.engine import Grep
from s3spill.artifacts.grep.pattern import Pattern, compile_pattern
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.errors import InvalidRequest
from s3spill.store import ObjectStore
from s3spill.textview import escape


def test_capped_grep_states_the_exact_omitted_count(store: ObjectStore) -> None:
    """A few MB with 50,000 matching lines and max_matches=50: 50 shown, 49,950 omitted, exactly."""
    data = b"".join(b"%07d ERROR boom\n" % i if i % 2 == 0 else b"%07d fine\n" % i for i in range(100_000))
    arts = ArtifactStore(store, TransferConfig(index_chunk_size=64 * 1024), session_id="S")
    ref = arts.write("S", data, "bash")
    result = arts.grep(ref.source_id, r"ERROR \w+", max_matches=50)
    assert len(result.matches) == 50 and result.total_matches == 50_000
    assert result.omitted == 49_950 and result.exact
    assert "50 of 50,000 matching lines shown; 49,950 more omitted" in result.render()
    m = result.matches[3]
    assert m.line_number == 7 and m.char_offset == 8
    assert data[m.line_byte_offset : m.byte_offset] == b"0000006 "
    assert data[m.byte_offset :].startswith(b"ERROR boom")


def test_context_lines_and_offsets_point_into_the_artifact(store: ObjectStore) -> None:
    """Context lines surround each match; the match's offsets lead read_page straight to it."""
    data = b"a\nb\nc needle \xc3\xa9\nd\ne\n\xff needle\n"
    arts = ArtifactStore(store, TransferConfig(index_chunk_size=16), session_id="S")
    ref = arts.write("S", data, "t")
    result = arts.grep(ref.source_id, "needle", context=1)
    assert [m.line_number for m in result.matches] == [3, 6]
    assert [ln.number for ln in result.matches[0].before] == [2]
    assert [ln.number for ln in result.matches[0].after] == [4]
    assert [ln.number for ln in result.matches[1].after] == []
    assert result.matches[1].line.escaped and result.matches[1].line.text == "\\xff needle"
    page = arts.read_page(ref.source_id, offset=2, char_offset=result.matches[0].char_offset, limit=1)
    assert page.lines[0].text == "needle é"
    rendered = result.render()
    assert "     3:\tc needle é" in rendered and "     6:!\t\\xff needle" in rendered


def test_no_match_and_bad_patterns(store: ObjectStore) -> None:
    """No match is an empty exact result; an invalid regex is a clear InvalidRequest."""
    arts = ArtifactStore(store, session_id="S")
    ref = arts.write("S", b"x\ny\n", "t")
    none = arts.grep(ref.source_id, "zzz")
    assert none.total_matches == 0 and none.exact and "[no matching lines]" in none.render()
    with pytest.raises(InvalidRequest, match="invalid regular expression"):
        arts.grep(ref.source_id, "(")
    with pytest.raises(InvalidRequest):
        arts.grep(ref.source_id, "x", max_matches=0)


def test_long_lines_are_searched_in_bounded_windows() -> None:
    """Over-long lines are searched in windows with exact offsets; a miss makes counts a bound."""
    line = b"x" * 5000 + b"NEEDLE" + b"y" * 5000
    data = b"short NEEDLE\n" + line + b"\n" + b"z" * 9000 + b"\n" + b"tail NEEDLE"
    g = Grep("artifact:t", compile_pattern("NEEDLE"), long_line=1000, overlap=100)
    for i in range(0, len(data), 333):
        g.feed(data[i : i + 333])
    result = g.result(expected_lines=4)
    assert [m.line_number for m in result.matches] == [1, 2, 4]
    long_match = result.matches[1]
    assert data[long_match.byte_offset :].startswith(b"NEEDLE") and long_match.char_offset == 5000
    assert not result.exact  # the 9000-byte line without a match was only windowed
    assert "lower bound" in result.render()


#: Where a generated output is cut into the chunks it is stored in.
CUTS = st.lists(st.integers(1, 40), max_size=10)


def _outputs(*extra: bytes) -> st.SearchStrategy[bytes]:
    """Outputs of up to 300 pieces: ASCII, newlines, UTF-8 and stray bytes, and ``extra``."""
    pieces = [b"a", b"b", b" ", b"\n", b"\xc3\xa9", b"\xff", b"ab\n", b"\xe9", b"\n\xff\n", *extra]
    return st.lists(st.sampled_from(pieces), max_size=300).map(b"".join)


PATTERNS = ["a", "^a", "a$", r"\s", "[^a]b", "a.b", r"\Ab", r"b\Z", r"b\z", "x*", "é|b", "^$", r"^\s*$",
            "a|^$", r"\bb", "(?i)A", "(?s)a.b", ".", "^.$", r"\\xff", r"\\xe9b", "xe"]


def _naive_search(compiled: Pattern, raw: bytes) -> int | None:
    """Search a line as `read` shows it; the byte of ``raw`` where the shown match starts."""
    shown, escaped = escape(raw.decode("utf-8", "surrogateescape"))
    span = compiled.search_portable(shown.encode("utf-8"))
    if span is None:
        return None
    if not escaped:
        return span[0]
    width = byte = 0
    for unit in raw.decode("utf-8", "surrogateescape"):
        piece = escape(unit + "\udcff")[0][: -4]  # the unit as it shows in an escaped line
        if width + len(piece.encode("utf-8")) > span[0]:
            break
        width += len(piece.encode("utf-8"))
        byte += len(unit.encode("utf-8", "surrogateescape"))
    return byte


@settings(max_examples=200, deadline=None)
@given(
    data=_outputs(),
    pattern=st.sampled_from(PATTERNS),
    cuts=CUTS,
    context=st.integers(0, 2),
    max_matches=st.integers(1, 5),
)
def test_grep_agrees_with_a_naive_per_line_search(
    data: bytes, pattern: str, cuts: list[int], context: int, max_matches: int
) -> None:
    """Whatever the chunking, grep finds exactly the lines a per-line search of the shown text finds."""
    compiled = compile_pattern(pattern)
    lines = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        lines = lines[:-1]
    expected, offset = [], 0
    for number, raw in enumerate(lines, 1):
        found = _naive_search(compiled, raw)
        if found is not None:
            expected.append((number, offset + found))
        offset += len(raw) + 1
    g = Grep("artifact:t", compiled, context=context, max_matches=max_matches)
    windowed = Grep("artifact:t", compiled, max_matches=1000, long_line=64, overlap=8)
    pos = 0
    for n in [*cuts, len(data)]:
        g.feed(data[pos : pos + n])
        windowed.feed(data[pos : pos + n])
        pos += n
    result = g.result(expected_lines=len(lines))
    assert result.exact and result.lines_scanned == len(lines)
    assert result.total_matches == len(expected)
    assert [(m.line_number, m.byte_offset) for m in result.matches] == expected[:max_matches]
    for m in result.matches:
        assert [ln.number for ln in m.before] == list(range(max(1, m.line_number - context), m.line_number))
        assert [ln.number for ln in m.after] == list(
            range(m.line_number + 1, min(len(lines), m.line_number + context) + 1)
        )
    found = windowed.result(expected_lines=len(lines))
    assert {m.line_number for m in found.matches} <= {n for n, _ in expected}
    if found.exact:
        assert found.total_matches == len(expected)


@pytest.mark.parametrize(("pattern", "lines"), [
    ("^$", [2, 4]), (r"^\s*$", [2, 3, 4]), ("a|^$", [1, 2, 4]),
])
def test_patterns_that_match_the_empty_string(store: ObjectStore, pattern: str, lines: list[int]) -> None:
    """`^$`, `^\\s*$` and `a|^$` find the empty lines (they used to crash: substring not found)."""
    arts = ArtifactStore(store, TransferConfig(index_chunk_size=16), session_id="S")
    ref = arts.write("S", b"a\n\n  \n\nxyz\n", "t")
    result = arts.grep(ref.source_id, pattern)
    assert [m.line_number for m in result.matches] == lines and result.exact


def test_a_catastrophic_pattern_runs_in_linear_time(store: ObjectStore) -> None:
    """`(a+)+$` against lines of 35 a's and a b (minutes under backtracking) finishes at once."""
    arts = ArtifactStore(store, session_id="S")
    ref = arts.write("S", b"a" * 35 + b"b\n" + b"aaa\n", "t")
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(arts.grep(ref.source_id, "(a+)+$").total_matches),
                              daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert done == [1]


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)a", "(?!a)b", "(?<=a)b", "(?<!a)b"])
def test_backtracking_syntax_is_refused(store: ObjectStore, pattern: str) -> None:
    """Backreferences and lookarounds need backtracking: refused with a message naming RE2."""
    arts = ArtifactStore(store, session_id="S")
    ref = arts.write("S", b"ab\n", "t")
    with pytest.raises(InvalidRequest, match="RE2"):
        arts.grep(ref.source_id, pattern)


def test_a_search_past_its_time_budget_stops() -> None:
    """A grep that outlives its wall-clock budget stops with InvalidRequest instead of running on."""
    g = Grep("artifact:t", compile_pattern("x"), budget=0.0)
    with pytest.raises(InvalidRequest, match="stopped after 0 s"):
        g.feed(b"a\nb\n")


def test_bytes_that_are_not_utf8_match_no_pattern() -> None:
    """The engine runs on UTF-8: an invalid byte is matched by nothing, not even `.`."""
    g = Grep("artifact:t", compile_pattern("^.$"))
    g.feed(b"\xff\n\xc3\xa9\n")
    assert [m.line_number for m in g.result().matches] == [2]


@pytest.mark.parametrize("pattern", ["a", "^$", r"\bb", "(a)(b)?", "é", "x*", r"b\z", "(?i)AB"])
def test_the_direct_search_agrees_with_the_public_api(pattern: str) -> None:
    """Pattern.search (RE2's Match, called directly) finds the spans google-re2's search finds."""
    compiled = compile_pattern(pattern)
    for data in (b"", b"ab", b"b ab\n\xc3\xa9b", b"\xffab", b"xxab"):
        for pos in range(len(data) + 1):
            assert compiled.search(data, pos) == compiled.search_portable(data, pos), (data, pos)


def test_grep_sees_lines_with_invalid_utf8_as_read_shows_them(store: ObjectStore) -> None:
    """`.` matches a line holding only \\xff, and `caf\\\\xe9` finds the line read shows as caf\\xe9."""
    data = b"ok\n\xff\ncaf\xe9 au lait\nback\\slash \xfe\n"
    arts = ArtifactStore(store, session_id="S")
    sid = arts.write("S", data, "bash").source_id
    page = arts.read_page(sid)
    assert [(ln.text, ln.escaped) for ln in page.lines] == [
        ("ok", False), ("\\xff", True), ("caf\\xe9 au lait", True), ("back\\\\slash \\xfe", True)]
    every = arts.grep(sid, ".")
    assert every.total_matches == 4 and [m.line_number for m in every.matches] == [1, 2, 3, 4]
    cafe = arts.grep(sid, r"caf\\xe9")
    assert [m.line_number for m in cafe.matches] == [3]
    assert cafe.matches[0].byte_offset == data.index(b"caf") and cafe.matches[0].char_offset == 0
    hex_digits = arts.grep(sid, "e9 au")  # starts inside the escape: points at the byte shown as \xe9
    assert hex_digits.matches[0].byte_offset == data.index(b"\xe9") and hex_digits.matches[0].char_offset == 3
    slashes = arts.grep(sid, r"back\\\\slash")  # shown doubled in an escaped line, so matched doubled
    assert [m.line_number for m in slashes.matches] == [4]
    assert arts.grep(sid, r"\\xff").matches[0].line.text == "\\xff"


@settings(max_examples=150, deadline=None)
@given(
    data=_outputs(b"\\"),
    pattern=st.sampled_from(PATTERNS),
    cuts=CUTS,
    context=st.integers(0, 2),
    max_matches=st.integers(1, 5),
    long_line=st.sampled_from([64, 4 * 1024 * 1024]),
)
def test_the_text_without_records_is_the_results_rendering(
    data: bytes, pattern: str, cuts: list[int], context: int, max_matches: int, long_line: int
) -> None:
    """``Grep.text`` (the CLI's fast grep: no dataclasses) prints what ``result().render`` prints,
    for either surface, whatever the chunking, context, cap and windowed lines."""
    compiled = compile_pattern(pattern)
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    engines = [Grep("artifact:t", compiled, context=context, max_matches=max_matches, long_line=long_line,
                    overlap=8) for _ in range(3)]
    pos = 0
    for n in [*cuts, len(data)]:
        for g in engines:
            g.feed(data[pos : pos + n])
        pos += n
    result = engines[0].result(expected_lines=lines)
    assert engines[1].text("cli", expected_lines=lines) == (result.render("cli"), result.total_matches)
    assert engines[2].text("call", expected_lines=lines) == (result.render("call"), result.total_matches)


_PATTERN_CHARS = st.text(alphabet=st.sampled_from(list("(?<=!aiLmsuxU-)\\AZzb.*[]ERO")), max_size=12)


@settings(max_examples=400, deadline=None)
@given(_PATTERN_CHARS)
def test_a_patterns_line_sensitive_markers_are_the_regular_expressions(source: str) -> None:
    """block_pattern's literal markers say what ``\\(\\?[<=!aiLmsuxU-]|\\\\[AZz]`` said, and the
    ``\\Z`` rewrite is skipped only where it would change nothing."""
    import re

    from s3spill.artifacts.grep import pattern

    regex = re.compile(r"\(\?[<=!aiLmsuxU-]|\\[AZz]")
    assert any(m in source for m in pattern._LINE_SENSITIVE) == bool(regex.search(source))
    rewritten = re.sub(r"(?<!\\)((?:\\\\)*)\\Z", r"\1\\z", source)
    assert "\\Z" in source or rewritten == source


def test_a_pattern_refused_says_so_in_the_librarys_error() -> None:
    """The errors module loads only to refuse; the refusal is still InvalidRequest."""
    for bad in ("", "x" * 1001, "a(?=b)", "\ud800"):
        with pytest.raises(InvalidRequest):
            compile_pattern(bad)
    with pytest.raises(InvalidRequest):
        Grep("artifact:x", compile_pattern("a"), context=-1)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40) | st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass")),
       st.integers(0, 5))
def test_first_invalid_byte_is_the_decoders_with_or_without_the_ascii_shortcut(raw: bytes, pos: int) -> None:
    """An ASCII text has none; any other text: the strict decoder's first error at or after ``pos``."""
    from s3spill.artifacts.grep.shown import first_invalid

    pos = min(pos, len(raw))
    try:
        raw[pos:].decode("utf-8")
        expected = None
    except UnicodeDecodeError as exc:
        expected = pos + exc.start
    assert first_invalid(raw, pos) == expected
