"""The model's retrieval tools, bound to one store and one session, with bounded results.

Why a transport-free core: the same tools (read, grep, and a listing of the session's
artifacts) reach a model four ways — an MCP server (:mod:`s3spill.agent.mcp.server`), a
harness that declares them to a chat API itself, the framework adapters
(:mod:`s3spill.adapters`), and the reference agent loop — and each must behave identically:
the session comes from the harness and never from an argument, every result fits the spill
policy's budget for the tool that produced it (a page read must never be spilled again),
and every failure is one line the model can act on, never a traceback.

The tool names are the policy's ``read_tool`` / ``grep_tool``, so the pointer the Spiller
writes names exactly the tools the model has; what the model is told about them (the
descriptions and schemas) is :mod:`.tool_specs`. Each answer is text for the model and the
same facts as data (:attr:`ToolOutcome.structured`, MCP ``structuredContent``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from s3spill.agent.listing import DEFAULT_LIST_LIMIT, ArtifactListing, list_artifacts
from s3spill.agent.reads import Build, page_reader
from s3spill.agent.tool_specs import (
    DEFAULT_GREP_MATCHES,
    DEFAULT_PAGE_LINES,
    GREP_DESCRIPTION,
    LIST_DESCRIPTION,
    MAX_GREP_MATCHES,
    READ_DESCRIPTION,
    Dialect,
    specs,
)
from s3spill.artifacts.grep.result import GrepResult
from s3spill.artifacts.paging import DEFAULT_MAX_CHARS
from s3spill.artifacts.store import ArtifactStore
from s3spill.context.pointer import clip, one_line
from s3spill.context.policy import GREP_TOOL, READ_TOOL, SpillPolicy
from s3spill.context.secrets import mask_view
from s3spill.errors import ArtifactNotFound, InvalidRequest, S3SpillError
from s3spill.leases.expiry import explain_missing
from s3spill.live import reader as live_reader
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore
from s3spill.telemetry import tool_span
from s3spill.usage.events import EventMaker, grep_event, read_event
from s3spill.usage.recorder import UsageSink, record_answer

log = get_logger("s3spill.agent.tools")

__all__ = ["DEFAULT_GREP_MATCHES", "DEFAULT_PAGE_LINES", "GREP_TOOL", "LIST_TOOL", "MAX_GREP_MATCHES",
           "READ_TOOL", "AgentTools", "ToolOutcome", "error_line"]

#: The listing tool's name (not named in pointers: a pointer already carries its source id).
LIST_TOOL = "list_artifacts"

#: Longest one-line error message handed to the model.
ERROR_CHARS = 400
#: Attempts at shrinking a page that is over the policy's budget before clipping it.
_SHRINK_STEPS = 8

@dataclass(frozen=True)
class ToolOutcome:
    """A tool's answer as a model sees it: text, and whether it is an error."""

    text: str
    is_error: bool = False
    #: The same answer as data (MCP ``structuredContent``), matching the tool's output schema;
    #: ``None`` for an error.
    structured: dict[str, Any] | None = None


def error_line(exc: BaseException) -> str:
    """``<ErrorType>: <message>`` on one line — the same words the CLI prints after ``error:``."""
    return one_line(f"{type(exc).__name__}: {exc}", ERROR_CHARS)


def _grep_data(result: GrepResult, text: str) -> dict[str, Any]:
    return {"source_id": result.source_id, "pattern": result.pattern,
            "total_matches": result.total_matches, "exact": result.exact,
            "line_numbers": [m.line_number for m in result.matches], "omitted": result.omitted,
            "text": text}


class AgentTools:
    """``read_artifact`` and ``grep_artifact`` for one session, each result within budget.

    ``session_id`` comes from the harness's configuration; a source id of any other
    session is refused (:class:`~s3spill.errors.SourceIdError`), whatever the model asks.
    """

    def __init__(self, store: ObjectStore, session_id: str, *, policy: SpillPolicy | None = None,
                 artifacts: ArtifactStore | None = None,
                 page_chars: int = DEFAULT_MAX_CHARS, usage: UsageSink | None = None) -> None:
        if not session_id:
            raise ValueError("AgentTools needs the harness's session id")
        self.store = store
        self.session_id = session_id
        self.policy = policy or SpillPolicy()
        artifacts = artifacts or ArtifactStore(store, session_id=session_id)
        #: Pages and matches are built from stored text masked in context (every cut, and
        #: grep's counts, see only what the model may read); ``secrets="off"``: as stored.
        self.artifacts = artifacts.with_view(mask_view if self.policy.secrets != "off" else None)
        self.page_chars = min(page_chars, self.policy.hard_cap_chars)
        #: Receives one event per page read and grep (:mod:`s3spill.usage`); None: none.
        self.usage = usage

    @property
    def read_name(self) -> str:
        return self.policy.read_tool

    @property
    def grep_name(self) -> str:
        return self.policy.grep_tool

    @property
    def list_name(self) -> str:
        return LIST_TOOL

    def _fits(self, text: str, tool: str) -> bool:
        return not self.policy.should_externalize(text, tool)

    # -- the tools -----------------------------------------------------------------------

    def read_artifact(self, source_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_LINES,
                      char_offset: int = 0, *, byte_offset: int | None = None,
                      nbytes: int | None = None, path: str | None = None,
                      record_offset: int | None = None, since: int | None = None) -> str:
        """One verified page, rendered, made smaller until the policy would keep it inline.

        A binary artifact (or any artifact when ``byte_offset``/``nbytes`` is given) is read
        as a hexdump from ``byte_offset``; with ``path``, the JSON value at that JSON Pointer
        (``offset``/``limit`` then count its elements); otherwise by line. ``since`` (a byte
        offset, from a live page's footer) reads a running command's output from there.
        """
        return self.read_outcome(source_id, offset, limit, char_offset, byte_offset=byte_offset,
                                 nbytes=nbytes, path=path, record_offset=record_offset,
                                 since=since).text

    def read_outcome(self, source_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_LINES,
                     char_offset: int = 0, *, byte_offset: int | None = None,
                     nbytes: int | None = None, path: str | None = None,
                     record_offset: int | None = None, since: int | None = None) -> ToolOutcome:
        """:meth:`read_artifact` with the page's facts as structured data."""
        with self._journal_says():  # choosing the reader reads the index
            build = page_reader(self.artifacts, self.session_id, source_id, offset=offset,
                                limit=limit, char_offset=char_offset, byte_offset=byte_offset,
                                nbytes=nbytes, path=path, record_offset=record_offset,
                                since=since)
        outcome = self._fitted(build, source_id)
        self._record(read_event, source_id, self.read_name, outcome)
        return outcome

    def _record(self, make: EventMaker, source_id: str, via: str, outcome: ToolOutcome) -> None:
        if self.usage is not None:  # fail open: record_answer never raises
            record_answer(self.usage, make, self.session_id, source_id, via, outcome.text, outcome.structured)

    def _fitted(self, build: Build, source_id: str) -> ToolOutcome:
        """The page built with the largest budget (tried a few times) the policy keeps inline."""
        max_chars = self.page_chars
        text, data = "", dict[str, Any]()
        for _ in range(_SHRINK_STEPS):
            with self._journal_says():
                text, data = build(max_chars)
            over = self._overshoot(text, self.read_name)
            if over <= 1.0:
                return ToolOutcome(text, structured=data)
            max_chars = min(max_chars - 1, int(max_chars / over * 0.95))
            if max_chars < 1_000:
                break
        log.warning("agent_tools.page_clipped", source_id=source_id, chars=len(text))
        text = self._clip(text, self.read_name)
        return ToolOutcome(text, structured={**data, "text": text})

    @contextlib.contextmanager
    def _journal_says(self) -> Iterator[None]:
        """A missing artifact is "expired" only if the session's journal records GC deleting it."""
        try:
            yield
        except ArtifactNotFound as exc:
            raise explain_missing(self.artifacts.store, self.session_id, exc,
                                  self.artifacts.config) from None

    def _overshoot(self, text: str, tool: str) -> float:
        """How many times over its tightest budget ``text`` is (<= 1.0: it stays inline)."""
        rule = self.policy.for_tool(tool)
        size = len(text) if rule.threshold_unit == "chars" else len(text.encode("utf-8", "surrogateescape"))
        ratios = [size / max(rule.threshold, 1), len(text) / self.policy.hard_cap_chars]
        if self.policy.max_inline_tokens is not None:
            ratios.append(self.policy.counter()(text) / max(self.policy.max_inline_tokens, 1))
        worst = max(ratios)
        if worst <= 1.0 and self.policy.should_externalize(text, tool):
            return 1.01  # the policy knows a rule this estimate does not: shrink a little
        return worst

    def grep_artifact(self, source_id: str, pattern: str, context: int = 0,
                      max_matches: int = DEFAULT_GREP_MATCHES) -> str:
        """A verified search; the match list is cut (and the cut counted) to fit the budget."""
        return self.grep_outcome(source_id, pattern, context, max_matches).text

    def grep_outcome(self, source_id: str, pattern: str, context: int = 0,
             max_matches: int = DEFAULT_GREP_MATCHES) -> ToolOutcome:
        """:meth:`grep_artifact` with the matches' line numbers and counts as structured data."""
        if not 1 <= max_matches <= MAX_GREP_MATCHES:
            raise InvalidRequest(f"max_matches must be 1-{MAX_GREP_MATCHES}")
        with self._journal_says():
            result = live_reader.grep(self.artifacts, source_id, pattern, context=context,
                                      max_matches=max_matches, session_id=self.session_id)
        outcome = self._grep_fitted(result)
        self._record(grep_event, source_id, self.grep_name, outcome)
        return outcome

    def _grep_fitted(self, result: GrepResult) -> ToolOutcome:
        """The largest number of matches (and the cut counted) that fits the grep tool's budget."""
        text = result.render()
        if self._fits(text, self.grep_name):
            return ToolOutcome(text, structured=_grep_data(result, text))
        lo, hi = 0, len(result.matches) - 1  # largest number of matches that fits
        best = _first(result, 0)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            candidate = _first(result, mid)
            if self._fits(candidate.render(), self.grep_name):
                lo, best = mid, candidate
            else:
                hi = mid - 1
        text = best.render()
        if not self._fits(text, self.grep_name):
            text = self._clip(text, self.grep_name)
        return ToolOutcome(text, structured=_grep_data(best, text))

    def list_artifacts(self, limit: int = DEFAULT_LIST_LIMIT) -> str:
        """This session's newest stored outputs, one line each (see :mod:`s3spill.agent.listing`)."""
        return self.list_outcome(limit).text

    def list_outcome(self, limit: int = DEFAULT_LIST_LIMIT) -> ToolOutcome:
        """:meth:`list_artifacts` with the references as structured data, within the budget."""
        listing: ArtifactListing = list_artifacts(self.artifacts, self.session_id, limit)
        shown = len(listing.artifacts)
        while shown > 0 and not self._fits(listing.first(shown).render(), self.list_name):
            shown -= 1
        fitted = listing.first(shown)
        return ToolOutcome(fitted.render(), structured=fitted.structured())

    def _clip(self, text: str, tool: str) -> str:
        """Last resort for a text no smaller page or match list brings within budget."""
        limit = self.policy.hard_cap_chars
        while limit > 200 and not self._fits(clip(text, limit), tool):
            limit = limit * 3 // 4
        return clip(text, limit)

    # -- dispatch for harness loops -------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run a tool by name; a refusal or failure comes back as a one-line error outcome."""
        with tool_span("call", one_line(name, 64)):
            return self._call(name, arguments)

    def _call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        try:
            if name == self.read_name:
                args = _args(arguments, _READ_ARGS)
                if "bytes" in args:
                    args["nbytes"] = args.pop("bytes")
                return self.read_outcome(**args)
            if name == self.grep_name:
                return self.grep_outcome(**_args(arguments, _GREP_ARGS))
            if name == self.list_name:
                return self.list_outcome(**_args(arguments, _LIST_ARGS))
            raise InvalidRequest(f"unknown tool {one_line(name, 64)!r}")
        except (S3SpillError, OSError) as exc:
            log.info("agent_tools.refused", tool=name, error=type(exc).__name__)
            return ToolOutcome(error_line(exc), is_error=True)

    def specs(self, dialect: Dialect = "openai") -> list[dict[str, Any]]:
        """Tool declarations in the shape a chat API expects (see :func:`~.tool_specs.specs`)."""
        return specs(self.declared(), dialect)

    def declared(self) -> list[tuple[str, str, str]]:
        """(name, kind, description) of each model-facing tool, in declaration order."""
        return [(self.read_name, "read", READ_DESCRIPTION), (self.grep_name, "grep", GREP_DESCRIPTION),
                (self.list_name, "list", LIST_DESCRIPTION)]


_READ_ARGS = {"source_id": str, "offset": int, "limit": int, "char_offset": int, "byte_offset": int,
              "bytes": int, "path": str, "record_offset": int, "since": int}
_GREP_ARGS = {"source_id": str, "pattern": str, "context": int, "max_matches": int}
_LIST_ARGS = {"limit": int}


def _args(arguments: Mapping[str, Any], allowed: Mapping[str, type]) -> dict[str, Any]:
    """Check a model's arguments strictly: known names, right types, source id present."""
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise InvalidRequest(f"unknown argument(s): {', '.join(unknown)[:200]}")
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        kind = allowed[key]
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidRequest(f"{key} must be an integer")
        if kind is str and not isinstance(value, str):
            raise InvalidRequest(f"{key} must be a string")
        out[key] = value
    missing = [key for key in ("source_id", "pattern") if key in allowed and key not in out]
    if missing:
        raise InvalidRequest(f"missing argument(s): {', '.join(missing)}")
    return out


def _first(result: GrepResult, k: int) -> GrepResult:
    """The result with only its first ``k`` matches kept; the others counted as omitted."""
    dropped = len(result.matches) - k
    return result.model_copy(update={"matches": result.matches[:k],
                                      "omitted": result.omitted + dropped})
