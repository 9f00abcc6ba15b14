"""Pages and searches of a live artifact while its command runs (``live:<session>:<name>``).

A read fetches the state (one small object) and only the segments its page touches, each
verified against the digest the state lists; the segments are assembled into a window,
indexed in memory, and paged with the same :func:`~s3spill.artifacts.paging.build_page`
every stored artifact uses — so lines, budgets, escapes and ``char_offset`` continuation
behave identically. Line numbers and byte offsets are those of the whole output. Cost: the
state plus about one page of segments, however long the output (``since`` and the newest
page included); grep reads every committed segment, as it does for a stored artifact.

The footer says how the run stands (running with its last heartbeat, exited, killed,
lost), how much is committed, whether the size cap dropped the middle, and the ``since``
to pass to read only what is new (:mod:`s3spill.live.summary`). Once the output is
finished, the live id reads the ordinary artifact it became.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

from s3spill import keys
from s3spill.artifacts.grep.engine import Grep
from s3spill.artifacts.grep.pattern import compile_pattern
from s3spill.artifacts.grep.result import GrepResult
from s3spill.artifacts.index_builder import build_stats
from s3spill.artifacts.paging import Page, build_page
from s3spill.artifacts.store import ArtifactStore
from s3spill.artifacts.views import CONTEXT_BYTES, ChunkView, viewed
from s3spill.config import LiveConfig
from s3spill.errors import ConfigError, InvalidRequest, NotFound
from s3spill.live.segments import (
    fetch_segment,
    iter_committed,
    iter_segments,
    read_state,
)
from s3spill.live.state import LiveSegment, LiveState, Span
from s3spill.live.summary import LiveGrepResult, LivePage, LiveSummary, summarize
from s3spill.store.base import ObjectStore

#: Characters a live page keeps free for its live footer and its larger header numbers.
LIVE_RESERVE = 480
_WINDOW_CHUNK = 1024 * 1024


def _dropped(state: LiveState, what: str) -> InvalidRequest:
    kept = ", ".join(f"lines {r[0].line_start + 1:,}-{_run_lines_end(r):,}" for r in _runs(state))
    return InvalidRequest(f"{what} of {state.live_id} was dropped by the live size cap"
                          f" (kept: {kept or 'nothing'})")


def _run_lines_end(run: list[Span]) -> int:
    last = run[-1]
    return last.line_start + last.newlines + (0 if last.last_byte_newline else 1)


def _runs(state: LiveState) -> list[list[Span]]:
    """Contiguous stretches of kept output (one, unless the size cap dropped a middle)."""
    runs: list[list[Span]] = []
    for span in state.spans:
        if runs and runs[-1][-1].byte_end == span.byte_start:
            runs[-1].append(span)
        else:
            runs.append([span])
    return runs


@dataclass
class _Start:
    """Where a live page starts: the first line's bytes, and the segments after them."""

    segs: Iterator[LiveSegment]
    seg: LiveSegment
    data: bytearray  #: from the page's first byte to the end of ``seg``
    w0: int  #: output byte offset of ``data[0]``
    shift: int  #: newlines in the output before ``data[0]`` (the first line's 0-based number)


class LiveReader:
    """Reads of one session's live ids, from the object store that holds their segments.

    A finished live output is an ordinary artifact: its pages and matches come from
    ``finished`` (an :class:`ArtifactStore` over the same store, built when not given,
    so a caller that already has one shares its caches).
    """

    def __init__(self, store: ObjectStore, session_id: str | None, config: LiveConfig | None = None,
                 *, finished: ArtifactStore | None = None) -> None:
        self.store = store
        self.session_id = session_id
        self.config = config or LiveConfig()
        self._finished = finished

    @classmethod
    def over(cls, arts: ArtifactStore, config: LiveConfig | None = None) -> LiveReader:
        """The live reader of ``arts``'s store and session, sharing its caches."""
        return cls(arts.store, arts.session_id, config, finished=arts)

    @property
    def view(self) -> ChunkView | None:
        """What reads show of the committed bytes: the view of the store it reads over."""
        return self._finished.view if self._finished is not None else None

    @property
    def arts(self) -> ArtifactStore:
        if self._finished is None:
            self._finished = ArtifactStore(self.store, session_id=self.session_id)
        return self._finished

    def _state(self, source: str | keys.LiveId, session_id: str | None) -> LiveState:
        live = source if isinstance(source, keys.LiveId) else keys.LiveId.parse(str(source))
        session = session_id or self.session_id
        if not session:
            raise ConfigError("no session: the harness must name the session to read from")
        live.require_session(session)
        return read_state(self.store, live)[0]

    def status(self, source: str | keys.LiveId, session_id: str | None = None) -> LiveSummary:
        state = self._state(source, session_id)
        return summarize(state, self.config, state.committed_bytes)

    # -- pages -------------------------------------------------------------------------

    def read_page(self, source: str | keys.LiveId, offset: int = 0, limit: int = 2000,
                  char_offset: int = 0, max_chars: int = 40_000, *, since: int | None = None,
                  session_id: str | None = None) -> LivePage:
        for attempt in (1, 2):
            state = self._state(source, session_id)
            try:
                return self._page(state, offset, limit, char_offset, max_chars, since,
                                  session_id)
            except NotFound:
                # The output finished (its segments deleted) between the state and a
                # segment: the second state names the artifact it became.
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _page(self, state: LiveState, offset: int, limit: int, char_offset: int,
              max_chars: int, since: int | None, session_id: str | None) -> LivePage:
        if since is not None and (since < 0 or char_offset):
            raise InvalidRequest("since must be >= 0, and is used without char_offset")
        if state.final_source_id is not None:
            return self._final_page(state, offset, limit, char_offset, max_chars, since,
                                    session_id)
        if max_chars - LIVE_RESERVE < 256:
            raise InvalidRequest(f"max_chars={max_chars} is too small for a page of a live output")
        start = (self._start_since(state, since) if since is not None
                 else self._start_offset(state, offset, char_offset))
        if isinstance(start, int):  # nothing to show from there (yet)
            return self._wrap(_empty(str(state.live_id), state, start, max_chars), state, start)
        window, to_end = self._window(state, start, limit, 4 * max_chars + 4 * char_offset + 1024)
        page = self._render(state, start, window, to_end, limit, char_offset, max_chars)
        return self._wrap(page, state, page.byte_end)

    def _start_since(self, state: LiveState, since: int) -> _Start | int:
        """Where a page from byte ``since`` starts (the next kept byte, past a dropped stretch)."""
        spans = state.spans
        since = min(since, state.committed_bytes)
        i = bisect_right([s.byte_start for s in spans], since) - 1
        if i >= 0 and since >= spans[i].byte_end:
            i += 1  # in a dropped stretch, or at the very end: the next kept segment
        i = max(i, 0)
        if i >= len(spans):
            return since
        at = max(since, spans[i].byte_start)
        segs = iter_segments(self.store, state, lambda sp: sp.byte_end <= at)
        seg = next(segs)
        first = fetch_segment(self.store, state, seg)
        skip = max(0, since - seg.byte_start)
        return _Start(segs, seg, bytearray(first[skip:]), seg.byte_start + skip,
                      seg.line_start + first[:skip].count(b"\n"))

    def _start_offset(self, state: LiveState, offset: int, char_offset: int) -> _Start | int:
        """Where the page of line ``offset + 1`` starts: the segment holding the newline before it."""
        sid, spans, total = str(state.live_id), state.spans, state.line_count
        if total == 0:
            if offset or char_offset:
                raise InvalidRequest(f"{sid} has no output yet: only offset=0 can be read")
            return 0
        if offset >= total and state.status == "running":
            return state.committed_bytes
        if offset >= total:
            raise InvalidRequest(f"offset {offset} is beyond the end of {sid}: it has"
                                 f" {total} lines so far (offsets 0-{total - 1})")
        if offset == 0 and spans[0].byte_start != 0:
            raise _dropped(state, "line 1")
        if offset:
            i = next((k for k, sp in enumerate(spans) if sp.line_start + sp.newlines >= offset),
                     len(spans))
            if i == len(spans) or spans[i].line_start >= offset:
                raise _dropped(state, f"line {offset + 1}")
        segs = iter_segments(self.store, state, lambda sp: offset > 0 and (
            sp.line_start + sp.newlines < offset))
        seg = next(segs)
        data = bytearray(fetch_segment(self.store, state, seg))
        skip = _nth_newline_end(data, offset - seg.line_start)
        del data[:skip]  # the window begins at the page's first line
        return _Start(segs, seg, data, seg.byte_start + skip, offset)

    def _window(self, state: LiveState, start: _Start, limit: int, need: int) -> tuple[bytes, bool]:
        """The bytes one page can use (its lines, at most about ``need`` of them), and whether
        they reach the end of what is committed."""
        data, prev = start.data, start.seg
        while data.count(b"\n") < limit + 1 and len(data) < need:
            nxt = next(start.segs, None)
            if nxt is None or nxt.byte_start != prev.byte_end:
                break
            data += fetch_segment(self.store, state, nxt)
            prev = nxt
        to_end = prev.byte_end == state.committed_bytes
        end = len(data)
        if data.count(b"\n") >= limit + 1:
            end = _nth_newline_end(data, limit + 1)
        if end > need and (cut := data.rfind(b"\n", 0, need) + 1):
            end = cut
        if end < len(data):
            del data[end:]
            to_end = False
        if not to_end:
            cut = data.rfind(b"\n") + 1
            if cut:
                del data[cut:]
            elif not data:
                raise _dropped(state, f"line {start.shift + 1}")
        return bytes(data), to_end

    def _render(self, state: LiveState, start: _Start, window: bytes, to_end: bool, limit: int,
                char_offset: int, max_chars: int) -> Page:
        """The window indexed in memory and paged like any artifact, renumbered as the output."""
        sid, shift = str(state.live_id), start.shift
        if self.view is not None:  # with the committed text around it; the newest line may be unfinished
            end = start.w0 + len(window)
            window = self.view(window, self._bytes(state, start.w0 - CONTEXT_BYTES, start.w0),
                               self._bytes(state, end, end + CONTEXT_BYTES), headless=True, cut_end=to_end)
        stats = build_stats(window, _WINDOW_CHUNK)
        index = stats.to_index(session_hash=state.session_hash, name=state.name,
                               created_at=state.created_at, tool=state.tool, call_id=None,
                               label=None, body_etag="live-window")
        page = build_page(index, lambda k: window[k * _WINDOW_CHUNK:(k + 1) * _WINDOW_CHUNK], sid,
                          offset=0, limit=limit, char_offset=char_offset,
                          max_chars=max_chars - LIVE_RESERVE)
        cut_short = page.eof and not to_end  # the window ended, the output did not
        next_line = page.next_offset
        if cut_short:
            next_line = index.line_count - (0 if window.endswith(b"\n") else 1)
        return Page(
            source_id=sid, offset=shift, char_offset=char_offset,
            total_lines=state.line_count, size_bytes=state.committed_bytes,
            lines=tuple(dataclasses.replace(ln, number=ln.number + shift) for ln in page.lines),
            eof=page.eof and to_end, next_offset=None if next_line is None else next_line + shift,
            next_char_offset=0 if cut_short else page.next_char_offset,
            byte_start=start.w0 + page.byte_start, byte_end=start.w0 + page.byte_end,
            max_chars=max_chars)

    def _bytes(self, state: LiveState, lo: int, hi: int) -> bytes:
        """The committed output in ``[lo, hi)`` (up to a stretch the size cap dropped)."""
        first = max(0, lo)
        at, out = first, bytearray()
        for seg in iter_segments(self.store, state, lambda sp: sp.byte_end <= first):
            if seg.byte_start >= hi or (out and seg.byte_start != at + len(out)):
                break
            data = fetch_segment(self.store, state, seg)
            if not out:
                at = max(at, seg.byte_start)
            out += data[max(0, at + len(out) - seg.byte_start):max(0, hi - seg.byte_start)]
        return bytes(out)

    def _wrap(self, page: Page, state: LiveState, next_since: int) -> LivePage:
        fields = {name: getattr(page, name) for name in Page.field_names()}
        return LivePage(**fields, live=summarize(state, self.config, next_since))

    def _final_page(self, state: LiveState, offset: int, limit: int, char_offset: int,
                    max_chars: int, since: int | None, session_id: str | None) -> LivePage:
        final = str(state.final_source_id)
        if since is not None:
            if state.truncated is not None:
                raise InvalidRequest(f"{state.live_id} finished truncated: read {final} by"
                                     " offset (since counted bytes of the live output)")
            offset = self.arts.line_at(final, since, session_id=session_id)
            if offset >= state.line_count:
                return self._wrap(_empty(str(state.live_id), state, since, max_chars), state,
                                  since)
        page = self.arts.read_page(final, offset=offset, limit=limit, char_offset=char_offset,
                                   max_chars=max_chars - LIVE_RESERVE, session_id=session_id)
        return self._wrap(page, state, page.byte_end)

    # -- grep --------------------------------------------------------------------------

    def grep(self, source: str | keys.LiveId, pattern: str, context: int = 0,
             max_matches: int = 100, *, ignore_case: bool = False,
             session_id: str | None = None) -> LiveGrepResult:
        compiled = compile_pattern(pattern, ignore_case=ignore_case)
        for attempt in (1, 2):
            state = self._state(source, session_id)
            try:
                if state.final_source_id is not None:
                    result = self.arts.grep(state.final_source_id, pattern, context, max_matches,
                                            ignore_case=ignore_case, session_id=session_id)
                else:
                    result = self._grep(state, compiled, context, max_matches)
            except NotFound:
                if attempt == 2:
                    raise
                continue
            fields = {name: getattr(result, name) for name in GrepResult.field_names()}
            return LiveGrepResult(
                **fields, live=summarize(state, self.config, state.committed_bytes))
        raise AssertionError("unreachable")

    def _grep(self, state: LiveState, compiled: object, context: int,
              max_matches: int) -> GrepResult:
        sid = str(state.live_id)
        results: list[GrepResult] = []
        starts: list[int] = []
        g: Grep | None = None
        prev_end = -1
        fetched = ((seg, fetch_segment(self.store, state, seg)) for seg in iter_segments(self.store, state))
        for seg, data in (viewed(fetched, self.view) if self.view is not None else fetched):
            if g is None or seg.byte_start != prev_end:  # a new run (after the size cap's gap)
                if g is not None:
                    results.append(g.result())
                g = Grep(sid, compiled, context=context, max_matches=max_matches)  # type: ignore[arg-type]
                g.line_no, g.line_start, g.bytes = seg.line_start, seg.byte_start, seg.byte_start
                starts.append(seg.byte_start)
            g.feed(data)
            prev_end = seg.byte_end
        if g is None:
            g = Grep(sid, compiled, context=context, max_matches=max_matches)  # type: ignore[arg-type]
            starts.append(0)
        results.append(g.result())
        if len(results) == 1:
            return results[0]
        matches = tuple(m for r in results for m in r.matches)[:max_matches]
        total = sum(r.total_matches for r in results)
        return results[0].model_copy(update={
            "matches": matches, "total_matches": total, "omitted": total - len(matches),
            "exact": all(r.exact for r in results), "lines_scanned": results[-1].lines_scanned,
            "bytes_scanned": sum(r.bytes_scanned - b for r, b in zip(results, starts, strict=True))})


def _nth_newline_end(data: bytearray, n: int) -> int:
    """Position just after the ``n``-th newline of ``data`` (0 for ``n == 0``)."""
    if n == 0:
        return 0
    rest = data.split(b"\n", n)[-1]  # the split runs in C
    return len(data) - len(rest)


def _empty(sid: str, state: LiveState, at: int, max_chars: int) -> Page:
    return Page(
        source_id=sid, offset=state.line_count, char_offset=0, total_lines=state.line_count,
        size_bytes=state.committed_bytes, lines=(), eof=True, next_offset=None,
        next_char_offset=None, byte_start=at, byte_end=at, max_chars=max_chars)


__all__ = ["LiveGrepResult", "LivePage", "LiveReader", "LiveSummary", "iter_committed", "summarize"]


def read_page(arts: ArtifactStore, source: str | keys.LiveId, offset: int = 0, limit: int = 2000,
              char_offset: int = 0, max_chars: int = 40_000, *, since: int | None = None,
              session_id: str | None = None) -> Page:
    """A page of any source id the model holds: a live id here, an artifact by ``arts``."""
    if keys.is_live_id(source):
        return LiveReader.over(arts).read_page(str(source), offset, limit, char_offset, max_chars,
                                               since=since, session_id=session_id)
    return arts.read_page(str(source), offset, limit, char_offset, max_chars, since=since,
                          session_id=session_id)


def grep(arts: ArtifactStore, source: str | keys.LiveId, pattern: str, context: int = 0,
         max_matches: int = 100, *, ignore_case: bool = False,
         session_id: str | None = None) -> GrepResult:
    """A search of any source id the model holds: a live id here, an artifact by ``arts``."""
    if keys.is_live_id(source):
        return LiveReader.over(arts).grep(str(source), pattern, context, max_matches,
                                          ignore_case=ignore_case, session_id=session_id)
    return arts.grep(str(source), pattern, context, max_matches, ignore_case=ignore_case,
                     session_id=session_id)
