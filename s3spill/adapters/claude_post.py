"""Claude Code ``PostToolUse`` answers for what Claude Code already cut or saved itself.

Measured with the real Claude Code 2.1.332 (tests/harnesses):

* **Bash it persisted** (an output over ``BASH_MAX_OUTPUT_LENGTH``): ``tool_response``
  holds a 30,000-character excerpt in ``stdout`` plus ``persistedOutputPath`` and
  ``persistedOutputSize``; the file at that path is the whole output. An
  ``updatedToolOutput`` is shown to the model only when it leaves both fields out (with
  them, Claude Code shows its own 2 KB ``<persisted-output>`` preview). So the file is
  stored whole and the answer is Bash's shape without them. (The PreToolUse wrapper,
  :mod:`.claude_bash`, catches such output before this; this is the route without it.)
* **An MCP result it saved** (over ``MAX_MCP_OUTPUT_TOKENS``): ``tool_response`` is one
  string, "Error: result (…) exceeds maximum allowed tokens. Output has been saved to
  PATH.\\n…"; the file is the result's text. ``updatedMCPToolOutput`` (a string or content
  blocks) replaces what the model sees.
* **Read**: Claude Code numbers the lines it shows from the record's ``startLine``, so
  replacing ``content`` with a head/tail preview would give the tail lines the wrong
  numbers. The answer keeps whole lines of the head as ``content`` (numbered right by
  Claude Code) and puts the last lines, numbered by us as Claude Code numbers them, and the
  pointer in ``additionalContext`` — which reaches the model as a note beside the result.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

from s3spill.context.policy import SpillPolicy
from s3spill.spill.spiller import Spiller


class HookSpiller(Protocol):
    """What these answers use of :class:`s3spill.adapters.harness_hooks.HookSpiller`."""

    spiller: Spiller
    policy: SpillPolicy

    def value(self, value: Any, tool: str, call_id: str | None) -> Any: ...

PERSISTED_FIELDS = ("persistedOutputPath", "persistedOutputSize")
_SAVED = re.compile(r"Output has been saved to (/.+?)\.\n")
#: A Read preview keeps this much of the head as ``content`` and of the tail in the note.
READ_HEAD_BYTES = 8 * 1024
READ_TAIL_BYTES = 2 * 1024


def _saved_file(path: Any) -> Path | None:
    if not isinstance(path, str) or not path.startswith("/"):
        return None
    file = Path(path)
    return file if file.is_file() else None


def persisted_bash(response: Any, spill: HookSpiller, tool: str,
                   call_id: str | None) -> dict[str, Any] | None:
    """Bash's ``updatedToolOutput`` for a result Claude Code persisted, or None if it did not."""
    if not isinstance(response, dict):
        return None
    file = _saved_file(response.get("persistedOutputPath"))
    if file is None:
        return None
    with open(file, "rb") as whole:
        out = spill.spiller.externalize(whole, tool, call_id)
    updated = {key: value for key, value in response.items() if key not in PERSISTED_FIELDS}
    updated["stdout"] = out.context_text
    if isinstance(updated.get("stderr"), str):
        updated["stderr"] = spill.value(updated["stderr"], tool, call_id)
    return updated


def saved_mcp(response: Any, spill: HookSpiller, tool: str,
              call_id: str | None) -> list[dict[str, Any]] | None:
    """The content blocks for an MCP result Claude Code saved to a file, or None if it did not."""
    if not isinstance(response, str) or len(response) > 10_000:
        return None
    match = _SAVED.search(response)
    file = _saved_file(match.group(1)) if match else None
    if file is None:
        return None
    with open(file, "rb") as whole:
        out = spill.spiller.externalize(whole, tool, call_id, force=True)
    return [{"type": "text", "text": out.context_text}]


def _whole_lines(lines: list[str], budget: int, *, from_end: bool) -> list[str]:
    """As many whole lines as fit in ``budget`` bytes (at least one), from the start or the end."""
    taken: list[str] = []
    used = 0
    for line in reversed(lines) if from_end else lines:
        used += len(line.encode("utf-8", "surrogatepass")) + 1
        if taken and used > budget:
            break
        taken.append(line)
    return taken[::-1] if from_end else taken


def read_answer(response: Any, spill: HookSpiller, tool: str,
                call_id: str | None) -> tuple[dict[str, Any], str] | None:
    """Read's ``updatedToolOutput`` and ``additionalContext`` for a file over the threshold."""
    if not isinstance(response, dict) or not isinstance(response.get("file"), dict):
        return None
    record = response["file"]
    content = record.get("content")
    if not isinstance(content, str) or not spill.policy.should_externalize(content, tool):
        return None
    out = spill.spiller.externalize(content, tool, call_id)
    if not out.spilled:
        return None
    start = record.get("startLine") if isinstance(record.get("startLine"), int) else 1
    lines = content.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    head = _whole_lines(lines, READ_HEAD_BYTES, from_end=False)
    tail = _whole_lines(lines[len(head):], READ_TAIL_BYTES, from_end=True)
    first_tail = start + len(lines) - len(tail)
    notice = out.context_text[out.context_text.rfind("[s3spill]"):]
    shift = f" (line N of the artifact is line N+{start - 1} of the file)" if start != 1 else ""
    note = (f"s3spill: this Read of {record.get('filePath')} returned {len(lines):,} lines; only lines "
            f"{start:,}-{start + len(head) - 1:,} are shown above. Its last lines:\n"
            + "".join(f"{first_tail + i}\t{line}\n" for i, line in enumerate(tail))
            + f"The whole read is stored{shift}. {notice}")
    updated = {**response, "file": {**record, "content": "\n".join(head), "numLines": len(head)}}
    return updated, note


_OPENCODE_SAVED = re.compile(r"^Full output saved to: (/\S.*?)\s*$", re.M)
#: Any other tool's cut (an MCP result): its first 2,000 lines, "...N lines truncated...",
#: then this sentence naming the file, then a hint to delegate the reading.
_OPENCODE_SAVED_TAIL = re.compile(r"The tool call succeeded but the output was truncated\. "
                                  r"Full output saved to: (/\S+)")


def saved_opencode(text: str) -> Path | None:
    """The file opencode 1.18.33 saved a cut tool output to: a shell's cut starts with
    "...output truncated..." and names it near the top ("Full output saved to: PATH"), any
    other tool's names it at the end. Only a file in opencode's own ``tool-output``
    directory counts: an output that merely prints such a line names nothing to store."""
    if "...output truncated..." in text[:200]:
        match = _OPENCODE_SAVED.search(text[:2000])
    else:
        match = _OPENCODE_SAVED_TAIL.search(text[-2000:])
    path = match.group(1) if match else None
    return _saved_file(path) if path and "/opencode/tool-output/" in path else None
