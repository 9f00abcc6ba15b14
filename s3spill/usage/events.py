"""One usage event: what one tool call stored and what the model was shown of it.

Why these fields and no more: ``stats`` needs sizes, the tool and the artifact a read
refers back to (its name joins a read to the spill that stored it); the web view needs
the text the model was shown. That text is the rendered, already masked context text —
never more of the output than the model saw — capped at :data:`SHOWN_CAP` characters.
The field names are the table's columns (docs/usage.md), so they only ever grow.

Builders never raise: a malformed result makes no event (fail open), not an error in the
caller's turn.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from s3spill.errors import SourceIdError
from s3spill.keys import LiveId, SourceId, is_live_id

__all__ = ["FACT_FIELDS", "SCHEMA_VERSION", "SHOWN_CAP", "Event", "EventMaker", "SpillRow", "UsageEvent",
           "blocks_event", "grep_event", "read_event", "spill_event", "spill_row", "utf8_len"]

#: 2: a part holds the events' fact rows first, then ``{"id", "shown"}`` rows (1: ``shown`` inline).
SCHEMA_VERSION = 2
#: Most characters of the shown text an event keeps (a page or a pointer is smaller).
SHOWN_CAP = 200_000

Op = Literal["spill", "read", "grep", "live_read", "live_grep"]


@dataclass(slots=True)
class UsageEvent:
    """One row of the usage table (see docs/usage.md for the column meanings).

    Treated as immutable once built, but not ``frozen``: a frozen dataclass sets each of
    its 25 fields through ``object.__setattr__``, and with ``__slots__`` an event is one
    small object instead of two for the collector — both on every tool call's path.
    """

    session: str
    op: Op
    tool: str
    shown: str
    shown_chars: int
    shown_bytes: int
    shown_truncated: bool = False
    artifact: str | None = None
    source_id: str | None = None
    via: str | None = None
    call_id: str | None = None
    spilled: bool = False
    mode: str | None = None
    raw_bytes: int = 0
    stored_bytes: int | None = None
    threshold: int | None = None
    first_line: int | None = None
    last_line: int | None = None
    total_lines: int | None = None
    matches: int | None = None
    masked: int = 0
    degraded: str | None = None
    id: str = ""
    ts: str = ""
    v: int = SCHEMA_VERSION

    @property
    def day(self) -> str:
        return self.ts[:10]

    def fact_json(self) -> bytes:
        """Every field but the shown text, Nones left out (a missing key reads as NULL)."""
        return orjson.dumps(self._fact_dict())

    def shown_json(self) -> bytes | None:
        """The shown-text row of this event (joined back by id), or None when nothing was shown."""
        return orjson.dumps({"id": self.id, "shown": self.shown}) if self.shown else None

    def encode(self) -> tuple[bytes, bytes | None]:
        """The event's fact line and shown-text line, each ending in a newline (None: nothing
        shown) — what a part holds. Raises ``TypeError`` for a text with a lone surrogate
        (it has no UTF-8 form): the recorder loses that event alone."""
        shown = orjson.dumps({"id": self.id, "shown": self.shown}, option=_NL) if self.shown else None
        return orjson.dumps(self._fact_dict(), option=_NL), shown

    def _fact_dict(self) -> dict[str, Any]:
        """Spelled out field by field rather than a loop over ``fields()``: one of these per
        event on the writer's thread, and a 24-step comprehension cost twice as much. Kept
        in declaration order (``tests/usage/test_parts.py`` checks every fact field is here)."""
        row: dict[str, Any] = {"session": self.session, "op": self.op, "tool": self.tool,
                               "shown_chars": self.shown_chars, "shown_bytes": self.shown_bytes,
                               "shown_truncated": self.shown_truncated}
        if self.artifact is not None:
            row["artifact"] = self.artifact
        if self.source_id is not None:
            row["source_id"] = self.source_id
        if self.via is not None:
            row["via"] = self.via
        if self.call_id is not None:
            row["call_id"] = self.call_id
        row["spilled"] = self.spilled
        if self.mode is not None:
            row["mode"] = self.mode
        row["raw_bytes"] = self.raw_bytes
        for key, value in (("stored_bytes", self.stored_bytes), ("threshold", self.threshold),
                           ("first_line", self.first_line), ("last_line", self.last_line),
                           ("total_lines", self.total_lines), ("matches", self.matches)):
            if value is not None:
                row[key] = value
        row["masked"] = self.masked
        if self.degraded is not None:
            row["degraded"] = self.degraded
        row["id"], row["ts"], row["v"] = self.id, self.ts, self.v
        return row


#: Every field but ``shown``, in declaration order (the fact row's keys).
FACT_FIELDS = tuple(f.name for f in fields(UsageEvent) if f.name != "shown")
_NL = orjson.OPT_APPEND_NEWLINE

#: Event ids: 48 random bits per process and a counter — unique without a syscall per event
#: (``os.urandom`` per call was most of an event's cost on the caller's path).
_ID_PREFIX = secrets.token_hex(6)
_ids = itertools.count()
_second: list[Any] = [None, ""]


def _stamp(at: float | None = None) -> tuple[str, str]:
    now = time.time() if at is None else at
    whole = int(now)
    if _second[0] != whole:  # one strftime per second, not per event
        _second[0], _second[1] = whole, datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
    return f"{_ID_PREFIX}{next(_ids):010x}", f"{_second[1]}{int((now - whole) * 1000):03d}Z"


def utf8_len(text: str) -> int:
    """Bytes of ``text`` in UTF-8, without encoding an ASCII text."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _shown(text: str) -> dict[str, Any]:
    cut = text[:SHOWN_CAP]
    return {"shown": cut, "shown_chars": len(text), "shown_bytes": utf8_len(text),
            "shown_truncated": len(cut) < len(text)}


def _locator(source_id: str) -> tuple[str | None, str | None, bool]:
    """(artifact name, producing tool token, live) of a locator; Nones when it does not parse."""
    try:
        live = is_live_id(source_id)
        name = LiveId.parse(source_id).name if live else SourceId.parse(source_id).name
    except (SourceIdError, ValueError):
        return None, None, False
    return name, name.split("-", 2)[2], live


class SpillRow:
    """A spill's event as its fact row itself: what :func:`spill_row` builds for the recorder.

    Why not a :class:`UsageEvent`: one of these per tool call on the writer's thread, and
    setting an event's 25 fields by keyword, then reading them all back into the fact dict,
    was a third of the instructions of building and serialising an event (cachegrind, 500
    spill results: 63 k against 43 k an event). The row carries what the recorder and the
    metrics read (the same names as an event's) and ``fact``, the dict :meth:`UsageEvent.encode`
    would write — the same keys in the same order, nulls left out (``tests/usage/test_parts.py``
    checks every kind of result encodes to the same bytes as its event); :meth:`event` gives
    the event back.
    """

    __slots__ = ("fact", "id", "raw_bytes", "session", "shown", "shown_bytes", "spilled", "stored_bytes",
                 "tool")
    op = "spill"

    def __init__(self, fact: dict[str, Any], shown: str) -> None:
        self.fact = fact
        self.shown = shown
        self.session: str = fact["session"]
        self.tool: str = fact["tool"]
        self.shown_bytes: int = fact["shown_bytes"]
        self.raw_bytes: int = fact["raw_bytes"]
        self.spilled: bool = fact["spilled"]
        self.stored_bytes: int | None = fact.get("stored_bytes")
        self.id: str = fact["id"]

    @property
    def day(self) -> str:
        return str(self.fact["ts"][:10])

    def encode(self) -> tuple[bytes, bytes | None]:
        """As :meth:`UsageEvent.encode` (``TypeError`` for a text with a lone surrogate)."""
        shown = orjson.dumps({"id": self.id, "shown": self.shown}, option=_NL) if self.shown else None
        return orjson.dumps(self.fact, option=_NL), shown

    def event(self) -> UsageEvent:
        return UsageEvent(shown=self.shown, **self.fact)


#: What a recorder queues and writes: an event, or a spill's row.
Event = UsageEvent | SpillRow


def spill_row(session: str, result: Any, *, stored_bytes: int | None, threshold: int | None,
              at: float | None = None) -> SpillRow:
    """:func:`spill_event` as a :class:`SpillRow` (what the recorder's writer builds per spill)."""
    ref = result.artifact
    eid, ts = _stamp(at)
    text: str = result.context_text
    # Keys in UsageEvent's declaration order, a None left out, as UsageEvent._fact_dict writes them.
    fact: dict[str, Any] = {"session": session, "op": "spill", "tool": str(result.tool)[:200],
                            "shown_chars": len(text), "shown_bytes": utf8_len(text),
                            "shown_truncated": len(text) > SHOWN_CAP}
    if ref is not None:
        fact["artifact"] = ref.name
        fact["source_id"] = ref.source_id
    call_id = result.call_id
    if call_id:
        fact["call_id"] = str(call_id)[:200]
    fact["spilled"] = bool(result.spilled)
    fact["mode"] = str(result.mode)
    fact["raw_bytes"] = int(result.total_bytes)
    if stored_bytes is not None:
        fact["stored_bytes"] = stored_bytes
    if threshold is not None:
        fact["threshold"] = threshold
    if ref is not None and ref.line_count is not None:
        fact["total_lines"] = ref.line_count
    masked = result.masked
    fact["masked"] = sum(masked.values()) if masked else 0
    degraded = result.degraded_reason
    if degraded is not None:
        fact["degraded"] = degraded
    fact["id"] = eid
    fact["ts"] = ts
    fact["v"] = SCHEMA_VERSION
    return SpillRow(fact, text[:SHOWN_CAP])


def spill_event(session: str, result: Any, *, stored_bytes: int | None, threshold: int | None,
                at: float | None = None) -> UsageEvent:
    """The event of one :meth:`Spiller.externalize` (inline or spilled; ``result`` a SpillResult;
    ``at``: when it happened, ``time.time()``, for an event built later)."""
    ref = result.artifact
    eid, ts = _stamp(at)
    text: str = result.context_text
    call_id = result.call_id
    masked = result.masked
    # Spelled out rather than through _shown(): one of these per spill, on the writer's thread.
    return UsageEvent(
        session=session, op="spill", tool=str(result.tool)[:200], shown=text[:SHOWN_CAP],
        shown_chars=len(text), shown_bytes=utf8_len(text), shown_truncated=len(text) > SHOWN_CAP,
        artifact=ref.name if ref else None, source_id=ref.source_id if ref else None,
        call_id=str(call_id)[:200] if call_id else None,
        spilled=bool(result.spilled), mode=str(result.mode), raw_bytes=int(result.total_bytes),
        stored_bytes=stored_bytes, threshold=threshold, total_lines=ref.line_count if ref else None,
        masked=sum(masked.values()) if masked else 0, degraded=result.degraded_reason, id=eid, ts=ts)


def blocks_event(session: str, tool: str, ref: Any, *, call_id: str | None, raw_bytes: int, shown: str,
                 stored_bytes: int | None, threshold: int | None, spilled: bool, degraded: str | None,
                 at: float | None = None) -> UsageEvent:
    """The event of one result made of text and image blocks (``ref``: its stored text, if any;
    ``shown``: its text blocks, each image the model saw as a line naming it)."""
    eid, ts = _stamp(at)
    return UsageEvent(
        session=session, op="spill", tool=str(tool)[:200], artifact=ref.name if ref else None,
        source_id=ref.source_id if ref else None, call_id=str(call_id)[:200] if call_id else None,
        spilled=spilled, mode="blocks", raw_bytes=raw_bytes, stored_bytes=stored_bytes, threshold=threshold,
        total_lines=ref.line_count if ref else None, degraded=degraded, id=eid, ts=ts, **_shown(shown))


def read_event(session: str, source_id: str, via: str, text: str, data: dict[str, Any], *,
               at: float | None = None) -> UsageEvent | None:
    """The event of one page read (``data``: the page's structured facts)."""
    name, tool, live = _locator(source_id)
    if name is None or tool is None:
        return None
    eid, ts = _stamp(at)
    return UsageEvent(
        session=session, op="live_read" if live else "read", tool=tool, artifact=name,
        source_id=source_id.strip(), via=via, raw_bytes=int(data.get("size_bytes") or 0),
        first_line=data.get("first_line"), last_line=data.get("last_line"),
        total_lines=data.get("total_lines"), id=eid, ts=ts, **_shown(text))


def grep_event(session: str, source_id: str, via: str, text: str, data: dict[str, Any], *,
               at: float | None = None) -> UsageEvent | None:
    """The event of one grep (``data``: the result's structured facts)."""
    name, tool, live = _locator(source_id)
    if name is None or tool is None:
        return None
    eid, ts = _stamp(at)
    return UsageEvent(
        session=session, op="live_grep" if live else "grep", tool=tool, artifact=name,
        source_id=source_id.strip(), via=via, matches=data.get("total_matches"), id=eid, ts=ts,
        **_shown(text))


#: ``read_event`` or ``grep_event``: (session hash, source id, tool name, text, facts, *, at) -> event.
EventMaker = Callable[..., Event | None]
