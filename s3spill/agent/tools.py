"""The model's retrieval tools, bound to one store and one session, with bounded results.

Why a transport-free core: the same two tools reach a model three ways — an MCP server
(:mod:`s3spill.agent.mcp_server`), a harness that declares them to a chat API itself, and the
reference agent loop — and each must behave identically: the session comes from the
harness and never from an argument, every result fits the spill policy's budget for the
tool that produced it (a page read must never be spilled again), and every failure is one
line the model can act on, never a traceback.

The tool names are the policy's ``read_tool`` / ``grep_tool``, so the pointer the Spiller
writes names exactly the tools the model has.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from s3spill.artifacts.paging import DEFAULT_MAX_CHARS
from s3spill.artifacts.search import MAX_CONTEXT, GrepResult
from s3spill.artifacts.store import ArtifactStore
from s3spill.context.pointer import clip, one_line
from s3spill.context.policy import SpillPolicy
from s3spill.errors import InvalidRequest, S3SpillError
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore

log = get_logger("s3spill.agent.tools")

READ_TOOL = "read_artifact"
GREP_TOOL = "grep_artifact"
DEFAULT_PAGE_LINES = 200
DEFAULT_GREP_MATCHES = 20
MAX_GREP_MATCHES = 200
#: Longest one-line error message handed to the model.
ERROR_CHARS = 400
#: Attempts at shrinking a page that is over the policy's budget before clipping it.
_SHRINK_STEPS = 8

SOURCE_ID_HELP = (
    'The source_id from an s3spill pointer: the text after stored as source_id="…", e.g. '
    "artifact:<32 hex>:<name>:<16 hex>. Copy it exactly."
)

READ_DESCRIPTION = """\
Read one page of a stored tool output (an "artifact").

When a tool's output was too large for your context, you received a pointer instead: a \
preview (the first and last part of the output), a marker saying how many bytes and which \
lines were omitted, and a line `stored as source_id="artifact:…"`. The complete output is \
stored; use this tool to read any part of it. Do not re-run the command to see its output \
again: it is already stored, unchanged, and re-running may not reproduce it.

Each page starts with a header `[<source_id> | lines A-B of N | size]`, then numbered lines \
(`   123<TAB>text`), and ends with a footer that says how to continue:
- `[more lines follow; continue with offset=X, char_offset=0]`: call again with offset=X.
- `[line L is cut at char C; continue with offset=X, char_offset=C]`: a very long line \
did not fit; call again with exactly these offset and char_offset values to read on.
- `[EOF: …]`: this page reaches the end of the output.

offset is the number of lines to skip: offset=0 starts at line 1, offset=999 starts at \
line 1000. To read around a line number L found by grep_artifact, use offset=L-1 (or a few \
lines less for context). Pages are limited in size, so a page may hold fewer than `limit` \
lines; the footer is always exact."""

GREP_DESCRIPTION = """\
Search a stored tool output (an "artifact", named by the source_id in an s3spill pointer) \
with a regular expression, line by line, like grep. Use it to find errors, test failures \
or any text in an output that was too large for your context, instead of re-running the \
command (its full output is already stored).

Returns each matching line with its 1-based line number (`  1234:<TAB>text`; context \
lines are marked with `-`), long lines as an excerpt around the match, and a footer with \
the total number of matching lines. To read around a match at line L, call \
read_artifact(source_id, offset=L-1). The pattern is a regular expression in RE2 syntax \
(Python-like, but no backreferences or lookarounds); add (?i) at its start to ignore case."""

EXTERNALIZE_DESCRIPTION = """\
For the harness, not the model: pass a tool's complete output; it is stored as an \
artifact when it is over the spill policy's threshold and the text to put in the model's \
context is returned (the output itself when small, otherwise a bounded preview plus a \
pointer that names the source_id and the read/grep tools)."""


@dataclass(frozen=True)
class ToolOutcome:
    """A tool's answer as a model sees it: text, and whether it is an error."""

    text: str
    is_error: bool = False


def error_line(exc: BaseException) -> str:
    """``<ErrorType>: <message>`` on one line — the same words the CLI prints after ``error:``."""
    return one_line(f"{type(exc).__name__}: {exc}", ERROR_CHARS)


def _parameters(name: str) -> dict[str, Any]:
    """JSON schemas of the tool arguments (shared by the MCP server and chat-API specs)."""
    sid = {"type": "string", "description": SOURCE_ID_HELP}
    if name == "read":
        return {
            "type": "object",
            "properties": {
                "source_id": sid,
                "offset": {"type": "integer", "minimum": 0, "default": 0,
                           "description": "Lines to skip (0 = start at line 1); take it from the "
                           "previous page's footer."},
                "limit": {"type": "integer", "minimum": 1, "default": DEFAULT_PAGE_LINES,
                          "description": "Most lines to return (the page may stop earlier)."},
                "char_offset": {"type": "integer", "minimum": 0, "default": 0,
                                "description": "Continue a very long line from this character, "
                                "as the previous page's footer says; otherwise 0."},
            },
            "required": ["source_id"],
        }
    return {
        "type": "object",
        "properties": {
            "source_id": sid,
            "pattern": {"type": "string", "description": "Regular expression (RE2 syntax: no "
                        "backreferences or lookarounds), matched against each line; (?i) ignores "
                        "case."},
            "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "default": 0,
                        "description": "Lines of context to show before and after each match."},
            "max_matches": {"type": "integer", "minimum": 1, "maximum": MAX_GREP_MATCHES,
                            "default": DEFAULT_GREP_MATCHES,
                            "description": "Matching lines to show; the rest are counted."},
        },
        "required": ["source_id", "pattern"],
    }


class AgentTools:
    """``read_artifact`` and ``grep_artifact`` for one session, each result within budget.

    ``session_id`` comes from the harness's configuration; a source id of any other
    session is refused (:class:`~s3spill.errors.SourceIdError`), whatever the model asks.
    """

    def __init__(self, store: ObjectStore, session_id: str, *, policy: SpillPolicy | None = None,
                 artifacts: ArtifactStore | None = None,
                 page_chars: int = DEFAULT_MAX_CHARS) -> None:
        if not session_id:
            raise ValueError("AgentTools needs the harness's session id")
        self.store = store
        self.session_id = session_id
        self.policy = policy or SpillPolicy(read_tool=READ_TOOL, grep_tool=GREP_TOOL)
        self.artifacts = artifacts or ArtifactStore(store, session_id=session_id)
        self.page_chars = min(page_chars, self.policy.hard_cap_chars)

    @property
    def read_name(self) -> str:
        return self.policy.read_tool

    @property
    def grep_name(self) -> str:
        return self.policy.grep_tool

    def _fits(self, text: str, tool: str) -> bool:
        return not self.policy.should_externalize(text, tool)

    # -- the tools -----------------------------------------------------------------------

    def read_artifact(self, source_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_LINES,
                      char_offset: int = 0) -> str:
        """One verified page, rendered, made smaller until the policy would keep it inline."""
        max_chars = self.page_chars
        text = ""
        for _ in range(_SHRINK_STEPS):
            page = self.artifacts.read_page(source_id, offset=offset, limit=limit,
                                            char_offset=char_offset, max_chars=max_chars,
                                            session_id=self.session_id)
            text = page.render()
            over = self._overshoot(text, self.read_name)
            if over <= 1.0:
                return text
            max_chars = min(max_chars - 1, int(max_chars / over * 0.95))
            if max_chars < 1_000:
                break
        log.warning("agent_tools.page_clipped", source_id=source_id, chars=len(text))
        return self._clip(text, self.read_name)

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
        if not 1 <= max_matches <= MAX_GREP_MATCHES:
            raise InvalidRequest(f"max_matches must be 1-{MAX_GREP_MATCHES}")
        result = self.artifacts.grep(source_id, pattern, context=context, max_matches=max_matches,
                                     session_id=self.session_id)
        text = result.render()
        if self._fits(text, self.grep_name):
            return text
        lo, hi = 0, len(result.matches) - 1  # largest number of matches that fits
        best = _first(result, 0).render()
        while lo < hi:
            mid = (lo + hi + 1) // 2
            candidate = _first(result, mid).render()
            if self._fits(candidate, self.grep_name):
                lo, best = mid, candidate
            else:
                hi = mid - 1
        return best if self._fits(best, self.grep_name) else self._clip(best, self.grep_name)

    def _clip(self, text: str, tool: str) -> str:
        """Last resort for a text no smaller page or match list brings within budget."""
        limit = self.policy.hard_cap_chars
        while limit > 200 and not self._fits(clip(text, limit), tool):
            limit = limit * 3 // 4
        return clip(text, limit)

    # -- dispatch for harness loops -------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run a tool by name; a refusal or failure comes back as a one-line error outcome."""
        try:
            if name == self.read_name:
                return ToolOutcome(self.read_artifact(**_args(arguments, _READ_ARGS)))
            if name == self.grep_name:
                return ToolOutcome(self.grep_artifact(**_args(arguments, _GREP_ARGS)))
            raise InvalidRequest(f"unknown tool {one_line(name, 64)!r}")
        except (S3SpillError, OSError) as exc:
            log.info("agent_tools.refused", tool=name, error=type(exc).__name__)
            return ToolOutcome(error_line(exc), is_error=True)

    def specs(self, dialect: Literal["openai", "anthropic", "mcp"] = "openai") -> list[dict[str, Any]]:
        """Tool declarations in the shape a chat API expects (``openai``: Chat Completions
        and Responses-style ``function`` tools; ``anthropic``: Messages API tools)."""
        out: list[dict[str, Any]] = []
        for name, kind, description in ((self.read_name, "read", READ_DESCRIPTION),
                                        (self.grep_name, "grep", GREP_DESCRIPTION)):
            params = _parameters(kind)
            if dialect == "openai":
                out.append({"type": "function", "function": {
                    "name": name, "description": description, "parameters": params}})
            elif dialect == "anthropic":
                out.append({"name": name, "description": description, "input_schema": params})
            else:
                out.append({"name": name, "description": description, "inputSchema": params})
        return out


_READ_ARGS = {"source_id": str, "offset": int, "limit": int, "char_offset": int}
_GREP_ARGS = {"source_id": str, "pattern": str, "context": int, "max_matches": int}


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
