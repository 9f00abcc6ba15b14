"""A reference agent loop: a scripted model, a real command, s3spill in between.

Why it is scripted: the loop must run anywhere (tests, ``s3spill demo``, a laptop
without an API key), and a scripted model that *reads* what the harness gave it — the
source id and line count from the pointer, the next offset from each page footer, the
line number from a grep match — shows that the pointer alone is enough to act on.
Swap :class:`ScriptedModel` for a real chat API and nothing else changes: the
messages are in the OpenAI Chat Completions shape (``tool_calls`` / ``role: tool``);
:func:`anthropic_tool_results` gives the Anthropic Messages shape of the same results.

The harness side is what a real one needs: every tool result goes through the
:class:`~s3spill.spill.spiller.Spiller` (a 2 MB output becomes a pointer), the turn through
the per-turn budget (paged reads are views, never copied again), the model gets the
read/grep tools bound to its session, and a finding is kept as a memory reference
published under a lease (:meth:`~s3spill.leases.journal.LeaseJournal.publish_reference` with
the built-in :class:`~s3spill.leases.owner.S3ReferenceOwner`), so GC keeps the artifact.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from s3spill.agent.tools import AgentTools
from s3spill.context.budget import TurnResult
from s3spill.context.policy import SpillPolicy
from s3spill.context.tokens import estimate_tokens
from s3spill.leases.journal import LeaseJournal, new_transaction_id
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.models import ArtifactReference, ArtifactRetentionClaim
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore

Message = dict[str, Any]

#: The failing build the model runs: about 2 MB, a 20,000-character line in the middle, one error.
BUILD_LINES = 30_000
LONG_LINE_AT = BUILD_LINES // 2 + 3  # 1-based
ERROR_AT = 21_337  # 1-based
TASK = "Run the build (`make`) and find out why it fails. Remember the cause for later."

BASH_SPEC: dict[str, Any] = {"type": "function", "function": {
    "name": "bash", "description": "Run a command and return its output (stdout and stderr).",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                   "required": ["command"]}}}
REMEMBER_SPEC: dict[str, Any] = {"type": "function", "function": {
    "name": "remember", "description": "Keep a stored output in long-term memory with a note.",
    "parameters": {"type": "object", "properties": {"source_id": {"type": "string"},
                                                    "note": {"type": "string"}},
                   "required": ["source_id", "note"]}}}


def print_build_log(out: TextIO) -> int:
    """The command's output; returns its exit status (1: the build failed)."""
    for n in range(1, BUILD_LINES + 1):
        if n == LONG_LINE_AT:
            symbols = ";".join(f"sym_{i:05d}=0x{i * 2654435761 % 2**32:08x}" for i in range(800))
            out.write(f"[{n:05d}] ld: link map {symbols}\n")
        elif n == ERROR_AT:
            out.write(f"[{n:05d}] ERROR src/net/tls.c:88: undefined reference to `tls_session_init'\n")
        else:
            out.write(f"[{n:05d}] cc -O2 -c src/module_{n % 977:03d}.c -o build/module_{n % 977:03d}.o "
                      f"... ok ({n * 7919 % 1000} ms)\n")
    out.write("make: *** [Makefile:42: all] Error 1\n")
    return 1


# -- the model ----------------------------------------------------------------------------


def _call(call_id: str, name: str, **arguments: Any) -> Message:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


class ScriptedModel:
    """Decides each step from the conversation alone, as a model would (no API key)."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.turn = 0
        self.source_id = ""
        self.cause = ""

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        self.turn += 1
        last = messages[-1]
        text = str(last.get("content") or "")
        if last["role"] == "user":
            return self._ask("I'll run the build.", _call("call-1", "bash", command=self.command))
        name = self._tool_name(messages, last)
        if name == "bash":
            # The pointer names the stored output and its size: page into the middle.
            self.source_id = _need(re.search(r'source_id="([^"]+)"', text), "a source id").group(1)
            lines = int(_need(re.search(r"bytes, (\d+) lines", text), "a line count").group(1))
            return self._ask("The output was stored; reading the middle of it.",
                             _call("call-2", "read_artifact", source_id=self.source_id,
                                   offset=lines // 2, limit=20))
        if name == "read_artifact":
            cut = re.search(r"is cut at char \d+; continue with offset=(\d+), char_offset=(\d+)\]", text)
            if cut:  # a very long line: follow the footer to its end
                return self._ask("A very long line; continuing it.",
                                 _call(f"call-{self.turn}", "read_artifact", source_id=self.source_id,
                                       offset=int(cut.group(1)), char_offset=int(cut.group(2)), limit=3))
            return self._ask("Only the link map here; searching for the error.",
                             _call(f"call-{self.turn}", "grep_artifact", source_id=self.source_id,
                                   pattern=r"ERROR|undefined reference", context=1))
        if name == "grep_artifact":
            match = _need(re.search(r"^ *(\d+):\t(.*)$", text, re.MULTILINE), "a match")
            self.cause = f"line {match.group(1)}: {match.group(2).strip()}"
            if not any(spec["function"]["name"] == "remember" for spec in tools):
                return self._answer()
            return self._ask("Found it; keeping it in memory.",
                             _call(f"call-{self.turn}", "remember", source_id=self.source_id,
                                   note=f"build fails at {self.cause}"))
        return self._answer()

    def _answer(self) -> Message:
        return {"role": "assistant", "content": f"The build fails at {self.cause} (the full log is "
                f"stored as {self.source_id})."}

    @staticmethod
    def _ask(content: str, call: Message) -> Message:
        return {"role": "assistant", "content": content, "tool_calls": [call]}

    @staticmethod
    def _tool_name(messages: list[Message], result: Message) -> str:
        for message in reversed(messages):
            for call in message.get("tool_calls") or ():
                if call["id"] == result.get("tool_call_id"):
                    return str(call["function"]["name"])
        return ""


def _need(match: re.Match[str] | None, what: str) -> re.Match[str]:
    if match is None:
        raise RuntimeError(f"the scripted model expected {what} in the last tool result")
    return match


# -- the harness --------------------------------------------------------------------------


@dataclass
class Step:
    """One model turn as the loop saw it."""

    action: str
    context_before: int
    context_after: int
    result_chars: int = 0
    note: str = ""


@dataclass
class AgentRun:
    """What the loop did; the transcript is the model's whole context at the end."""

    steps: list[Step] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    artifacts: dict[str, ArtifactReference] = field(default_factory=dict)
    published: list[str] = field(default_factory=list)  # transaction ids
    raw_output_bytes: int = 0
    answer: str = ""


def context_text(messages: list[Message]) -> str:
    """What the model re-reads every turn: message texts and tool-call arguments."""
    parts: list[str] = []
    for m in messages:
        parts.append(str(m.get("content") or ""))
        parts.extend(c["function"]["arguments"] for c in m.get("tool_calls") or ())
    return "\n".join(parts)


def context_chars(messages: list[Message]) -> int:
    return len(context_text(messages))


class Harness:
    """Runs the model's tool calls with s3spill between every tool and the context."""

    def __init__(self, store: ObjectStore, session_id: str, *, context_window: int = 200_000) -> None:
        self.policy = SpillPolicy()
        self.spiller = Spiller(store, session_id, self.policy)
        # Pages of at most 12,000 characters (~3,000 tokens): the long line takes two.
        self.tools = AgentTools(store, session_id, policy=self.policy, page_chars=12_000)
        self.journal = LeaseJournal(store, session_id)
        self.owner = S3ReferenceOwner(store, session_id)
        self.context_window = context_window
        self.run = AgentRun()

    def specs(self) -> list[dict[str, Any]]:
        return [BASH_SPEC, *self.tools.specs("openai"), REMEMBER_SPEC]

    def execute(self, calls: list[Message]) -> list[Message]:
        """One turn's tool calls -> ``role: tool`` messages, within the turn budget."""
        results = [self._one(call) for call in calls]
        report = self.spiller.enforce_turn_budget(results, context_window=self.context_window)
        return [{"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in report.results]

    def _one(self, call: Message) -> TurnResult:
        name, args = call["function"]["name"], json.loads(call["function"]["arguments"])
        if name == "bash":
            proc = subprocess.Popen(shlex.split(args["command"]), stdout=subprocess.PIPE,  # noqa: S603 - the example's own command
                                    stderr=subprocess.STDOUT)
            if proc.stdout is None:  # pragma: no cover - stdout=PIPE always gives one
                raise RuntimeError("no pipe from the command")
            result = self.spiller.externalize(proc.stdout, "bash", call["id"], exit_code=proc.wait)
            self.run.raw_output_bytes += result.total_bytes
            if result.artifact is not None:
                self.run.artifacts[result.artifact.source_id] = result.artifact
            return TurnResult(result.context_text, "bash", call["id"], result.exit_code,
                              spilled=result.spilled, extra=result)
        if name == "remember":
            return TurnResult(self.remember(args["source_id"], args["note"]), name, call["id"],
                              spillable=False)
        outcome = self.tools.call(name, args)  # read_artifact / grep_artifact (errors: one line)
        return TurnResult(outcome.text, name, call["id"], spillable=False, extra=outcome)

    def remember(self, source_id: str, note: str) -> str:
        """Publish a memory reference under a lease: PREPARED -> owner writes -> COMMITTED."""
        artifact = self.run.artifacts.get(source_id)
        if artifact is None:
            return f"error: {source_id} is not an output of this session"
        reference = artifact.for_memory().model_copy(update={"summary": note[:500]})
        claim = ArtifactRetentionClaim.from_memory_reference(reference)
        txid = new_transaction_id()
        result = self.journal.publish_reference(claim, lambda: self.owner.publish(txid, reference), txid)
        self.run.published.append(txid)
        return f"remembered ({result.state}, transaction {txid})"


def run_agent_example(store: ObjectStore, session_id: str, out: TextIO | None = None, *,
                      model: Callable[[list[Message], list[dict[str, Any]]], Message] | None = None,
                      max_turns: int = 12, indent: str = "  ") -> AgentRun:
    """Run the loop to the model's final answer, printing each step with the context size."""
    command = f"{shlex.quote(sys.executable)} -m s3spill.demo.scripted_agent --build-log"
    model = model or ScriptedModel(command)
    harness = Harness(store, session_id)
    run = harness.run
    messages: list[Message] = [{"role": "user", "content": TASK}]

    def say(text: str) -> None:
        if out is not None:
            print(indent + text.replace("\n", "\n" + indent), file=out)

    try:
        for _ in range(max_turns):
            before = context_chars(messages)
            reply = model(messages, harness.specs())
            messages.append(reply)
            calls = reply.get("tool_calls") or []
            if not calls:
                run.answer = str(reply.get("content") or "")
                run.steps.append(Step("answer", before, context_chars(messages)))
                say(f"answer: {run.answer}")
                break
            results = harness.execute(calls)
            messages.extend(results)
            after = context_chars(messages)
            for call, result in zip(calls, results, strict=True):
                step = Step(_describe(call), before, after, len(result["content"]),
                            _first_line(result["content"]))
                run.steps.append(step)
                say(f"{len(run.steps)}. {step.action}\n"
                    f"   context {before:,} -> {after:,} chars "
                    f"(~{estimate_tokens(context_text(messages)):,} tokens); "
                    f"the result took {step.result_chars:,} chars: {step.note}")
        else:
            raise RuntimeError(f"the model did not finish within {max_turns} turns")
    finally:
        harness.spiller.close()
    run.messages = messages
    say(f"without s3spill the command's output alone would have put {run.raw_output_bytes:,} bytes "
        f"into the context; the whole conversation is {context_chars(messages):,} characters.")
    return run


def _describe(call: Message) -> str:
    args = json.loads(call["function"]["arguments"])
    shown = {k: (v if len(str(v)) <= 60 else str(v)[:30] + "…" + str(v)[-20:]) for k, v in args.items()}
    return f"{call['function']['name']}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def _first_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    notice = next((ln for ln in lines if ln.startswith("[s3spill]")), None)
    line = notice or (lines[0] if lines else "")
    return line if len(line) <= 110 else line[:109] + "…"


if __name__ == "__main__":  # the example's command: python -m s3spill.demo.scripted_agent --build-log
    if sys.argv[1:] == ["--build-log"]:
        sys.exit(print_build_log(sys.stdout))
    sys.exit("usage: python -m s3spill.demo.scripted_agent --build-log")
