"""When a tool's output leaves the context, and how much of it stays as a preview.

Defaults come from the source documents: shell-like tools externalize above 30,000
characters and keep head 6 KiB + tail 24 KiB (docs/design-notes.md; the tail is where
compiler errors, test summaries and exit statuses live); other tools externalize
above 50 KiB and keep a 2 KiB head. A failed command (non-zero exit) shifts the
same preview budget towards the tail. Every tool name can have its own rule.

On top of the per-tool thresholds sit two budgets: an optional token
budget (``max_inline_tokens``, priced by a pluggable counter) and a hard character
cap that always holds, whatever the counter says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from s3spill.context.budget import ContextBudget
from s3spill.context.retention import TextStrategy
from s3spill.context.tokens import TokenCounter, default_token_counter
from s3spill.context.utf8 import to_bytes

KiB = 1024

#: The names of the model's retrieval tools (s3spill.agent.tools, ``s3spill mcp``, the
#: framework adapters). The pointer names them, so they are defined once, here, and a
#: harness that renames its tools sets ``read_tool``/``grep_tool`` on the policy it hands
#: to both the Spiller and the tools.
READ_TOOL = "read_artifact"
GREP_TOOL = "grep_artifact"

#: Tool names treated as shell-like unless overridden (compared case-insensitively).
SHELL_TOOLS: frozenset[str] = frozenset(
    {"bash", "sh", "zsh", "shell", "run", "run_shell", "exec", "execute", "terminal",
     "command", "powershell", "cmd"}
)


class ToolPolicy(BaseModel):
    """Threshold and preview for one kind of tool."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Externalize when the output is larger than this many ``threshold_unit``.
    threshold: int = Field(ge=0)
    threshold_unit: Literal["chars", "bytes"] = "bytes"
    #: Preview kept for a successful (or exit-code-less) result.
    head_bytes: int = Field(default=2 * KiB, ge=0)
    tail_bytes: int = Field(default=0, ge=0)
    #: Preview kept when the exit code is non-zero; ``None`` derives it: the same
    #: total, with the head shrunk to ``failure_head_share`` of it.
    failure_head_bytes: int | None = Field(default=None, ge=0)
    failure_tail_bytes: int | None = Field(default=None, ge=0)
    failure_head_share: float = Field(default=0.125, ge=0, le=1)
    #: Apply importance-based log compression (test and build logs) before previewing.
    log_compress: bool = False
    #: Largest stored copy of one output of this tool; None: the policy's ``max_stored_bytes``.
    max_stored_bytes: int | None = Field(default=None, ge=64 * KiB)

    def preview(self, exit_code: int | None = None) -> tuple[int, int]:
        """(head, tail) bytes to show; a non-zero exit code favours the tail."""
        if not exit_code:
            return (self.head_bytes, self.tail_bytes)
        total = self.head_bytes + self.tail_bytes
        head = self.failure_head_bytes
        if head is None:
            head = min(self.head_bytes, int(total * self.failure_head_share))
        tail = self.failure_tail_bytes
        if tail is None:
            tail = max(0, total - head)
        return (head, tail)

    def retention(self) -> TextStrategy:
        """What a streaming retainer must keep to serve both previews (the union).

        The exit code is known only when the stream ends, so the retainer keeps the
        larger head and the larger tail; the renderer narrows to the chosen one.
        """
        ok_head, ok_tail = self.preview(None)
        bad_head, bad_tail = self.preview(1)
        return TextStrategy.head_tail(max(ok_head, bad_head), max(ok_tail, bad_tail))

    def smallest_head(self) -> int:
        """The smaller of the two heads: where the omitted middle can start."""
        return min(self.preview(None)[0], self.preview(1)[0])

    @property
    def inline_limit_bytes(self) -> int:
        """Bytes beyond which the output is certainly over the threshold.

        A character is at most 4 UTF-8 bytes, so a character threshold needs up to
        4x its value in bytes before the answer is certain; a streaming caller buffers
        up to this much before deciding to spill.
        """
        return self.threshold * 4 if self.threshold_unit == "chars" else self.threshold

    def exceeds(self, output: str | bytes) -> bool:
        """Is ``output`` over this tool's threshold?"""
        if self.threshold_unit == "bytes":
            size = len(output) if isinstance(output, bytes) else len(to_bytes(output))
        else:
            size = len(output.decode("utf-8", "replace")) if isinstance(output, bytes) else len(output)
        return size > self.threshold


SHELL_POLICY = ToolPolicy(threshold=30_000, threshold_unit="chars", head_bytes=6 * KiB, tail_bytes=24 * KiB)
DEFAULT_POLICY = ToolPolicy(threshold=50 * KiB, threshold_unit="bytes", head_bytes=2 * KiB, tail_bytes=0)


class SpillPolicy(BaseModel):
    """Everything that decides what stays in the model's context; documented defaults.

    ``token_counter`` and ``image_pricer`` are code, not configuration: they are
    excluded from serialisation and ``None`` means "the default".
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    #: Names (case-insensitive) that get ``shell`` rather than ``default``.
    shell_tools: frozenset[str] = SHELL_TOOLS
    shell: ToolPolicy = SHELL_POLICY
    default: ToolPolicy = DEFAULT_POLICY
    #: Per-tool overrides by exact name (then lower-cased name); win over the above.
    tools: Mapping[str, ToolPolicy] = Field(default_factory=dict)
    #: Optional soft budget in tokens for one result's context text (off by default).
    max_inline_tokens: int | None = Field(default=None, ge=0)
    #: Hard cap in characters for one result's context text; always holds.
    hard_cap_chars: int = Field(default=100_000, ge=2_000)
    #: Quote up to this many error/failure lines from the omitted middle (0: off).
    salient_lines: int = Field(default=5, ge=0, le=50)
    salient_line_bytes: int = Field(default=240, ge=40, le=2_000)
    #: Look for salient lines in at most this many bytes after the head (the scan is
    #: ~10x slower than hashing; 64 MiB bounds it to about a second).
    salient_scan_bytes: int = Field(default=64 * 1024 * KiB, ge=0)
    #: Longest one-line summary put in the pointer and the artifact reference.
    summary_chars: int = Field(default=160, ge=40, le=500)
    #: Tool names the pointer tells the model to use to page and to search.
    read_tool: str = Field(default=READ_TOOL, min_length=1, max_length=64)
    grep_tool: str = Field(default=GREP_TOOL, min_length=1, max_length=64)
    #: How the pointer spells reading it back, for the surface the model has: ``tools``
    #: (calls of ``read_tool``/``grep_tool``: the library, MCP, a harness's own tools) or
    #: ``cli`` (``s3spill read`` / ``s3spill grep`` commands, for a model with only a shell).
    pointer_style: Literal["tools", "cli"] = "tools"
    #: Seconds the store may add to a turn before the Spiller degrades (fails open).
    store_deadline: float = Field(default=5.0, gt=0)
    #: Buffer up to this many bytes of a ``log_compress`` tool's output to compress it;
    #: larger outputs are previewed as they are.
    log_compress_max_bytes: int = Field(default=8 * 1024 * KiB, ge=0)
    #: Largest stored copy of one output (per tool: ``ToolPolicy.max_stored_bytes``):
    #: past it the store keeps the head, a marker and the newest ``capped_tail_bytes``;
    #: the preview and every count still describe the whole output.
    max_stored_bytes: int = Field(default=4 * 1024 * 1024 * KiB, ge=64 * KiB)
    capped_tail_bytes: int = Field(default=16 * 1024 * KiB, ge=KiB)
    #: Credentials in tool output (s3spill.context.secrets): ``preview`` masks them in
    #: everything the model is shown (inline results, previews, pages, search results,
    #: listings); ``at_rest`` also masks them in the stored copy (its size, SHA-256 and
    #: pointer then describe the masked text); ``off`` shows what the tool printed.
    secrets: Literal["off", "preview", "at_rest"] = "preview"
    #: Tools whose results are never stored (exact or lower-cased name): kept inline as the
    #: tool gave them, clipped to the hard cap (a hook or the proxy passes them on untouched).
    never_spill: frozenset[str] = frozenset()
    token_counter: Callable[[str], int] | None = Field(default=None, exclude=True)
    image_pricer: Callable[..., int] | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _tool_names(self) -> SpillPolicy:
        for name in (self.read_tool, self.grep_tool):
            if not name.replace("_", "").replace("-", "").replace(".", "").isalnum():
                raise ValueError(f"tool name {name!r} must be a plain identifier")
        return self

    def for_tool(self, tool: str | None) -> ToolPolicy:
        """The rule for ``tool``: exact override, lower-case override, shell, default."""
        name = tool or ""
        if name in self.tools:
            return self.tools[name]
        lower = name.lower()
        if lower in self.tools:
            return self.tools[lower]
        return self.shell if lower in self.shell_tools else self.default

    def stored_cap(self, tool: str | None) -> int:
        """The largest stored copy of one output of ``tool``."""
        return self.for_tool(tool).max_stored_bytes or self.max_stored_bytes

    def never_spills(self, tool: str | None) -> bool:
        name = tool or ""
        return name in self.never_spill or name.lower() in self.never_spill

    def is_shell(self, tool: str | None) -> bool:
        return (tool or "").lower() in self.shell_tools

    def counter(self) -> TokenCounter:
        return self.token_counter or default_token_counter()

    def budget(self) -> ContextBudget:
        """The budget one result's context text must fit: hard cap + optional tokens."""
        return ContextBudget(self.hard_cap_chars, self.max_inline_tokens, self.counter())

    def should_externalize(self, output: str, tool: str | None) -> bool:
        """Over the tool's threshold, over the hard cap, or over the token budget?"""
        if self.for_tool(tool).exceeds(output) or len(output) > self.hard_cap_chars:
            return True
        return self.max_inline_tokens is not None and self.counter()(output) > self.max_inline_tokens
