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

    def call_outputs(self) -> list[str]:
        """Responses API (Codex): the text of every ``function_call_output`` the model received,
        in order (first time seen); an output of content items is their texts, one per line."""
        seen: dict[str, str] = {}
        for body in self.requests:
            for item in body.get("input", []):
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    output = item.get("output")
                    if isinstance(output, list):
                        output = "\n".join(str(part.get("text", "")) for part in output
                                           if isinstance(part, dict))
                    seen.setdefault(str(item.get("call_id")), str(output))
        return list(seen.values())

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


def _response_events(blocks: list[dict[str, Any]], serial: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Responses API's streamed events for one answer: each block one finished item."""
    response_id = f"resp_{serial:04d}"
    yield "response.created", {"type": "response.created", "response": {"id": response_id}}
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            item: dict[str, Any] = {"type": "function_call", "id": f"fc_{block['id']}",
                                    "call_id": block["id"], "name": block["name"],
                                    "arguments": json.dumps(block["input"]), "status": "completed"}
            namespace, _, name = block["name"].rpartition("__")
            if block["name"].startswith("mcp__") and namespace:
                # Codex offers an MCP server's tools as the namespace mcp__<server>
                item.update(namespace=namespace, name=name)
        else:
            item = {"type": "message", "id": f"msg_{serial:04d}_{index}", "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": block["text"], "annotations": []}]}
        yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                              "item": item}
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                             "item": item}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    yield "response.completed", {"type": "response.completed",
                                 "response": {"id": response_id, "status": "completed", "usage": usage}}


def _route(path: str) -> str:
    """Which API a POST is for: ``gemini``, ``responses`` (OpenAI), ``messages`` (Anthropic),
    or ``other`` (token counts and anything else, answered with a small JSON object)."""
    if "enerateContent" in path:
        return "gemini"
    if path.split("?")[0].rstrip("/").endswith("/responses"):
        return "responses"
    if path.startswith("/v1/messages") and not path.startswith("/v1/messages/count_tokens"):
        return "messages"
    return "other"


def _side_answer(path: str) -> dict[str, Any]:
    """The answer to a POST that is not a model turn: a token count, or an empty object."""
    if ":countTokens" in path:
        return {"totalTokens": 10}
    return {"input_tokens": 10} if "count_tokens" in path else {}


def _gemini_answer(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``GenerateContentResponse`` holding the turn's blocks as parts."""
    parts = [{"functionCall": {"name": b["name"], "args": b["input"]}}
             if b["type"] == "tool_use" else {"text": b["text"]} for b in blocks]
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-standin"}


def _handler(script: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            script.paths.append(self.path)
            turns = {"gemini": self._gemini, "responses": self._responses, "messages": self._messages}
            serve = turns.get(_route(self.path))
            if serve is None:
                self._json(_side_answer(self.path))
            else:
                serve(body)

        def _messages(self, body: dict[str, Any]) -> None:
            """The Anthropic Messages API's answer (streamed when the request says so)."""
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
            answer = _gemini_answer(script.answer(body))
            if "alt=sse" not in self.path:
                self._json(answer)
                return
            payload = f"data: {json.dumps(answer)}\r\n\r\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _responses(self, body: dict[str, Any]) -> None:
            """The OpenAI Responses API's streamed answer (``POST /v1/responses``, SSE)."""
            blocks = script.answer(body)
            payload = b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                               for name, data in _response_events(blocks, len(script.paths)))
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
