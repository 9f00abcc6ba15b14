"""A scripted stand-in for a harness's model API on 127.0.0.1, recording every request.

The harness under test is pointed at it (``ANTHROPIC_BASE_URL`` for Claude Code): each
request of the agent loop (one that offers tools) gets the next scripted turn — a tool
call, or text — streamed back in the API's own event format, and the whole request body
is kept, so a test asserts on exactly what the model would have received. Requests that
offer no tools (titles, summaries) get a short text answer and are recorded apart.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A scripted turn: the content blocks to answer with, from the requests so far.
Turn = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def tool_call(name: str, tool_input: dict[str, Any], call_id: str | None = None) -> Turn:
    """A turn that asks for one tool call."""
    def turn(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"type": "tool_use", "id": call_id or f"toolu_{len(requests):04d}", "name": name,
                 "input": tool_input}]
    return turn


def follow_pointer(tool: str, **arguments: Any) -> Turn:
    """A turn that calls ``tool`` with the ``source_id`` of the last pointer the model received."""
    def turn(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found = re.findall(r'artifact:[0-9a-f]{32}:[^"\\\s]+', json.dumps(requests[-1]))
        assert found, "the last tool result holds no pointer"
        return [{"type": "tool_use", "id": f"toolu_{len(requests):04d}", "name": tool,
                 "input": {"source_id": found[-1], **arguments}}]
    return turn


def text(message: str) -> Turn:
    """A turn that answers with text and ends the loop."""
    return lambda requests: [{"type": "text", "text": message}]


@dataclass
class ScriptedModel:
    """The script and what the harness sent; served by :func:`serve`."""

    turns: list[Turn]
    requests: list[dict[str, Any]] = field(default_factory=list)
    side_requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        with self.lock:
            if not body.get("tools") and not body.get("request", {}).get("tools"):
                self.side_requests.append(body)
                return [{"type": "text", "text": "ok"}]
            self.requests.append(body)
            index = len(self.requests) - 1
            turn = self.turns[index] if index < len(self.turns) else text("done")
            return turn(list(self.requests))

    def function_responses(self) -> list[dict[str, Any]]:
        """Gemini: every ``functionResponse`` part the model received, in order (first time seen)."""
        seen: list[dict[str, Any]] = []
        keys: set[str] = set()
        for body in self.requests:
            for content in body.get("contents", []):
                for part in content.get("parts", []):
                    response = part.get("functionResponse") if isinstance(part, dict) else None
                    key = json.dumps(response, sort_keys=True)
                    if response is not None and key not in keys:
                        keys.add(key)
                        seen.append(response)
        return seen

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block the model received, in order (first time seen)."""
        seen: dict[str, dict[str, Any]] = {}
        for body in self.requests:
            for message in body.get("messages", []):
                content = message.get("content")
                if message.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        seen.setdefault(str(block.get("tool_use_id")), block)
        return list(seen.values())


def result_text(block: dict[str, Any]) -> str:
    """The text of a ``tool_result`` block, whether its content is a string or blocks."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def _events(blocks: list[dict[str, Any]], model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Messages API's streamed events for one answer."""
    yield "message_start", {"type": "message_start", "message": {
        "id": "msg_standin", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 5}}
    yield "message_stop", {"type": "message_stop"}


def _handler(script: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            script.paths.append(self.path)
            if "enerateContent" in self.path:
                self._gemini(body)
                return
            if ":countTokens" in self.path:
                self._json({"totalTokens": 10})
                return
            if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
                self._json({"input_tokens": 10} if "count_tokens" in self.path else {})
                return
            blocks = script.answer(body)
            model = str(body.get("model", "claude-standin"))
            if not body.get("stream"):
                stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                self._json({"id": "msg_standin", "type": "message", "role": "assistant", "model": model,
                            "content": blocks, "stop_reason": stop, "stop_sequence": None,
                            "usage": {"input_tokens": 10, "output_tokens": 5}})
                return
            payload = b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                               for name, data in _events(blocks, model))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _gemini(self, body: dict[str, Any]) -> None:
            """The Gemini API's answer (``streamGenerateContent?alt=sse`` or ``generateContent``)."""
            blocks = script.answer(body)
            parts = [{"functionCall": {"name": b["name"], "args": b["input"]}}
                     if b["type"] == "tool_use" else {"text": b["text"]} for b in blocks]
            answer = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                                      "index": 0}],
                      "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                        "totalTokenCount": 15},
                      "modelVersion": "gemini-standin"}
            if "alt=sse" not in self.path:
                self._json(answer)
                return
            payload = f"data: {json.dumps(answer)}\r\n\r\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            self._json({})

        def _json(self, data: dict[str, Any]) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


class StandIn:
    """The server on 127.0.0.1 (a free port), in a thread; a context manager."""

    def __init__(self, script: ScriptedModel) -> None:
        self.script = script
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
