"""Where a structured preview may be cut: between JSON elements, between records.

Pure byte arithmetic on the retained head and tail (a few KiB), plus :func:`record_ends`,
which the stream scanner runs on every chunk: it splits on quotes and joins the unquoted
parts (C speed), so a quoted newline in a CSV field is not counted as a record's end.
The string state at a tail's start is the parity of its (unescaped) quotes: a whole JSON
document, or a CSV table, holds an even number of them.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import replace

from s3spill.context.retention import RetainedText

_ESCAPE_PAIR = re.compile(rb"\\.", re.DOTALL)
_JSON_TOKENS = re.compile(rb'[\\"{}\[\],]')


def record_ends(data: bytes, quoted: bool) -> int:
    """Newlines outside double quotes in ``data``, which starts inside quotes if ``quoted``.

    The same rule as :func:`s3spill.typed.record_ends.record_ends` (which counts the stored
    table; this layer may not import that one): a test keeps the two in agreement.
    """
    if b'"' not in data:
        return 0 if quoted else data.count(b"\n")
    parts = data.split(b'"')
    return b"".join(parts[1 if quoted else 0 :: 2]).count(b"\n")


def _json_commas(data: bytes, in_string: bool) -> list[tuple[int, int]]:
    """(position after the comma, depth of its container relative to ``data``'s start)."""
    out: list[tuple[int, int]] = []
    depth = 0
    i = 0
    n = len(data)
    while i < n:
        m = _JSON_TOKENS.search(data, i)
        if m is None:
            break
        ch = m.group()
        i = m.end()
        if ch == b"\\":
            i += 1  # the escaped byte
            continue
        if ch == b'"':
            in_string = not in_string
        elif in_string:
            continue
        elif ch in (b"{", b"["):
            depth += 1
        elif ch in (b"}", b"]"):
            depth -= 1
        else:
            out.append((i, depth))
    return out


def json_head_cut(head: bytes) -> int | None:
    """Where to end a JSON head: after the last comma of the shallowest container whose last
    comma lies in the head's second half (else the last comma); None when there is none."""
    commas = _json_commas(head, False)
    if not commas:
        return None
    last: dict[int, int] = {}
    for pos, depth in commas:
        last[depth] = pos
    for depth in sorted(last):
        if last[depth] >= len(head) // 2:
            return last[depth]
    return max(last.values())


def json_tail_start(tail: bytes) -> int | None:
    """Where to start a JSON tail: after the first comma of the shallowest container whose
    first comma lies in the tail's first half (else the first comma); None when there is none.

    The string state at the tail's start comes from quote parity; a window that starts
    inside an escape sequence still scans consistently (tested), but each candidate is also
    checked by parsing from it (``ijson``: the elements that follow must close their
    container), and the other string state is tried when no candidate of the first holds,
    so a cut is never inside a string even for input this reasoning missed.
    """
    unescaped = _ESCAPE_PAIR.sub(b"", tail).count(b'"')
    for in_string in (unescaped % 2 == 1, unescaped % 2 == 0):
        commas = _json_commas(tail, in_string)
        first: dict[int, int] = {}
        for pos, depth in commas:
            first.setdefault(depth, pos)
        preferred = [first[d] for d in sorted(first) if first[d] <= len(tail) // 2]
        for start in [*preferred, *sorted(first.values())]:
            if _elements_close(tail[start:]) and _close_is_followed_by_json(tail[start:]):
                return start
    return None


_MEMBER = re.compile(rb'\s*"(?:[^"\\]|\\.)*"\s*:')


def _elements_close(rest: bytes) -> bool:
    """``rest`` is a run of elements (or object members) that ends by closing its container."""
    import ijson

    opener = b"{" if _MEMBER.match(rest) else b"["
    events = ijson.sendable_list()
    coro = ijson.basic_parse_coro(events)
    with contextlib.suppress(ijson.JSONError):  # what follows the container is not ours
        coro.send(opener + rest)
    depth = 0
    for event, _ in events:
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
            if depth == 0:
                return True
    return False


def _close_is_followed_by_json(rest: bytes) -> bool:
    """What follows the container that ``rest`` closes can continue a JSON document.

    ``[",]"]`` seen from its last four bytes, ``,]"]``, parses as an element run closing
    its array, but a string cannot follow a closed container: the comma was inside a
    string, and the other reading of the window is the right one.
    """
    depth, in_string, escaped = 0, False, False
    for i, c in enumerate(rest):
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:  # backslash
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1
            if depth < 0:
                return rest[i + 1 :].lstrip()[:1] in (b"", b",", b"]", b"}")
    return True


def record_head_cut(head: bytes, quotes: bool) -> int | None:
    """After the last newline that ends a record (outside quotes when ``quotes``)."""
    if not quotes or b'"' not in head:
        cut = head.rfind(b"\n")
        return cut + 1 if cut >= 0 else None
    quoted = False
    end = None
    pos = 0
    for part in head.split(b'"'):
        if not quoted:
            nl = part.rfind(b"\n")
            if nl >= 0:
                end = pos + nl + 1
        pos += len(part) + 1
        quoted = not quoted
    return end


def record_tail_start(tail: bytes, quotes: bool) -> int | None:
    """After the first newline of the tail that ends a record (its quote state from parity)."""
    if not quotes or b'"' not in tail:
        nl = tail.find(b"\n")
        return nl + 1 if 0 <= nl < len(tail) - 1 else None
    quoted = tail.count(b'"') % 2 == 1  # the whole table has an even number of quotes
    pos = 0
    for part in tail.split(b'"'):
        if not quoted:
            nl = part.find(b"\n")
            if nl >= 0 and pos + nl + 1 < len(tail):
                return pos + nl + 1
        pos += len(part) + 1
        quoted = not quoted
    return None


def snap(retained: RetainedText, kind: str) -> RetainedText:
    """``retained`` with its head and tail moved inward to element edges (when it has a gap)."""
    if retained.complete:
        return retained
    head, tail = retained.head, retained.tail
    if kind == "json":
        cut, start = json_head_cut(head), json_tail_start(tail)
    else:
        quotes = kind in ("csv", "tsv")
        cut, start = record_head_cut(head, quotes), record_tail_start(tail, quotes)
    new_head = head if cut is None else head[:cut]
    new_tail = tail if start is None else tail[start:]
    gap_nl = retained.gap_ends_with_newline if start is None else tail[start - 1 : start] == b"\n"
    return replace(retained, head=new_head, tail=new_tail, gap_ends_with_newline=gap_nl,
                   line_edges=False)
