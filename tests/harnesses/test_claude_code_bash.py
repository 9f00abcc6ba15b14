"""Claude Code's Bash through the PreToolUse wrapper, as the model receives it (real CLI 2.1.332)."""

from __future__ import annotations

import json
import pathlib
import shutil
from typing import Any

import pytest

from tests.harnesses.conftest import ClaudeCode
from tests.harnesses.model_api import Turn, follow_pointer, result_text, text, tool_call

#: Claude Code's own inline limit for a Bash result (characters, BASH_MAX_OUTPUT_LENGTH).
BASH_INLINE = 30_000
READ = "mcp__s3spill__read_artifact"


def page_text(block: dict[str, Any]) -> str:
    """The page text of a read_artifact result: Claude Code gives the model the tool's
    ``structuredContent`` (JSON with a ``text`` field) when the tool declares an output schema."""
    shown = result_text(block)
    return str(json.loads(shown)["text"]) if shown.startswith("{") else shown


def _bash(command: str, **extra: object) -> Turn:
    return tool_call("Bash", {"command": command, "description": "run", **extra})


def test_a_6_9_mb_output_reaches_the_model_as_our_preview_and_its_pointer_pages(claude: ClaudeCode) -> None:
    """``seq 1 1000000`` (6.9 MB): the model gets our preview and a pointer naming
    mcp__s3spill__read_artifact, not Claude Code's 2 KB persisted-output preview; its next
    call through the pointer returns lines 500,000-500,002."""
    claude.use_s3spill()
    run = claude.run([_bash("seq 1 1000000"), follow_pointer(READ, offset=499_999, limit=3), text("done")])
    first, page = run.results()
    shown = result_text(first)
    assert "<persisted-output>" not in shown and len(shown) < BASH_INLINE
    assert "6888896 bytes" in shown and f"{READ}(source_id" in shown
    assert shown.startswith("1\n2\n3\n") and "1000000" in shown
    assert "500000\t500000\n500001\t500001\n500002\t500002\n" in page_text(page)


def test_a_failing_build_with_a_5_mb_log_is_stored_whole(claude: ClaudeCode) -> None:
    """A command that writes 5 MB and exits 1: Claude Code marks the result as an error with
    its exit code, and the model gets our preview (the failure at the end kept) with a pointer
    whose page is the log's own line — not the 10,040-char head Claude Code keeps alone."""
    claude.use_s3spill()
    build = ("python3 -c 'import sys\nfor i in range(120000):"
             " print(f\"[{i:07d}] compiling module_{i}.c ... ok\")'"
             " && echo 'error: 3 tests FAILED' >&2 && exit 1")
    run = claude.run([_bash(build), follow_pointer(READ, offset=60_000, limit=1), text("done")])
    first, page = run.results()
    shown = result_text(first)
    assert first.get("is_error") is True and shown.startswith("Exit code 1")
    assert "error: 3 tests FAILED" in shown and f"{READ}(source_id" in shown and len(shown) < BASH_INLINE
    assert "60001\t[0060000] compiling module_60000.c ... ok\n" in page_text(page)


COMMANDS = [
    "echo \"double 'single' $((1+2))\" 'single \"double\" $HOME' \\$literal",
    "cat <<'EOF'\nheredoc $HOME `date`\n  indented\nEOF",
    "cat <<EOF | tr a-z A-Z\nexpanded $((6*7))\nEOF",
    "mkdir -p sub/dir && cd sub/dir && pwd",
    "pwd && ls",
    "true && echo and || echo or; false || echo fallback",
    "printf 'a\\nb\\nc\\n' | sort -r | head -2",
    "echo out; echo err >&2; exit 7",
    "f() { return 4; }; f",
    "echo -n no-newline",
    "sleep 0.2 & wait; echo waited",
    "export S3SPILL_PROBE=1; env | sort"
    " | grep -v -e SESSION -e MESSAGING -e CHILD_NOTES -e CLAUDE_PID -e BASE_URL -e '^_='",
]


def test_the_wrapper_changes_nothing_the_model_sees_for_ordinary_commands(claude: ClaudeCode) -> None:
    """Quotes, heredocs, ``&&``/``||``, pipes, ``cd`` (kept for the next call), exit codes,
    functions, no trailing newline, ``wait`` and the environment: each result the model
    receives is the same text, with the same error flag, as with no hook at all — except
    that a secret printed (here the API key in ``env``) is masked."""
    turns = [*(_bash(c) for c in COMMANDS), text("done")]
    bare = claude.run(turns).results()
    shutil.rmtree(claude.project / "sub")
    claude.use_s3spill()
    wrapped = claude.run(turns).results()
    assert len(bare) == len(wrapped) == len(COMMANDS)
    env_bare, env_wrapped = (set(result_text(r[-1]).splitlines()) for r in (bare, wrapped))
    # The one difference: a secret in the output is masked, as everywhere in s3spill.
    assert env_bare - env_wrapped == {"ANTHROPIC_API_KEY=sk-standin"}
    assert env_wrapped - env_bare == {"ANTHROPIC_API_KEY=[password]"}
    bare[-1] = wrapped[-1]
    for command, a, b in zip(COMMANDS, bare, wrapped, strict=True):
        assert (result_text(b), b.get("is_error")) == (result_text(a), a.get("is_error")), command
    assert result_text(wrapped[3]).endswith("/sub/dir") and result_text(wrapped[4]).endswith("/sub/dir")
    assert result_text(wrapped[7]) == "Exit code 7\nout\nerr"


@pytest.mark.parametrize("size", [200])
def test_a_small_output_passes_untouched_and_stores_nothing(claude: ClaudeCode, size: int) -> None:
    """A 200-byte output is the model's byte for byte, and nothing is stored."""
    claude.use_s3spill()
    run = claude.run([_bash(f"python3 -c 'import sys; sys.stdout.write(\"x\" * {size})'"), text("done")])
    assert result_text(run.results()[0]) == "x" * size
    store = claude.store_url.removeprefix("file://")
    assert not any(p.is_file() for p in pathlib.Path(store).rglob("*"))
