"""HTTP-level faults: botocore event hooks on a real S3 client.

Why hooks and not a fake: the request is built, signed and (unless the fault answers in
its place) really sent by botocore, so what a test sees is our handling of a real answer
(an error status, a lost response, a body cut mid-read, a header the store ignored),
never a mock's idea of one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ReadTimeoutError
from botocore.httpsession import URLLib3Session
from urllib3.exceptions import ProtocolError


class _Raw:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


@dataclass
class HttpFaults:
    """A registered hook; ``remaining`` counts faults left, ``fired`` those injected."""

    client: Any
    event: str
    handler: Callable[..., Any]
    remaining: int
    fired: int = 0

    def remove(self) -> None:
        self.client.meta.events.unregister(self.event, self.handler)


def _error_xml(code: str, message: str) -> bytes:
    return (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
            f"<Message>{message}</Message><RequestId>s3spill-fault</RequestId></Error>").encode()


def inject_http_errors(client: Any, operation: str, *, status: int = 503, times: int = 1,
                       code: str | None = None) -> HttpFaults:
    """Answer the next ``times`` calls of ``operation`` (e.g. ``PutObject``) with an error.

    Nothing reaches the server for those calls; ``code`` defaults to the usual S3 code
    for the status (503 SlowDown, 500 InternalError, 409 ConditionalRequestConflict).
    """
    code = code or {503: "SlowDown", 500: "InternalError",
                    409: "ConditionalRequestConflict", 412: "PreconditionFailed"}.get(status, "Error")
    faults = HttpFaults(client, f"before-send.s3.{operation}", lambda **_: None, times)

    def handler(request: Any, **_: Any) -> AWSResponse | None:
        if faults.remaining <= 0:
            return None
        faults.remaining -= 1
        faults.fired += 1
        body = _error_xml(code, "injected by s3spill.testing")
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/xml"
        return AWSResponse(request.url, status, headers, _Raw(body))

    faults.handler = handler
    client.meta.events.register(faults.event, handler)
    return faults


def drop_response_after_send(client: Any, operation: str, *, times: int = 1) -> HttpFaults:
    """Let the next ``times`` calls of ``operation`` reach the server, then lose the answer.

    The request is really sent (so the write lands) and the client sees a read timeout,
    which is what a dropped connection after a successful write looks like.
    """
    faults = HttpFaults(client, f"before-send.s3.{operation}", lambda **_: None, times)
    http = URLLib3Session()

    def handler(request: Any, **_: Any) -> AWSResponse | None:
        if faults.remaining <= 0:
            return None
        faults.remaining -= 1
        faults.fired += 1
        http.send(request)
        request.reset_stream()
        raise ReadTimeoutError(endpoint_url=request.url)

    faults.handler = handler
    client.meta.events.register(faults.event, handler)
    return faults


def break_response_body(client: Any, operation: str = "GetObject", *, after_reads: int = 1,
                        times: int = 1) -> HttpFaults:
    """Cut the body of the next ``times`` answers to ``operation`` after ``after_reads`` reads.

    The reader sees the connection drop mid-body (a urllib3 protocol error, as on a real
    reset), after having received the first part of the object.
    """
    faults = HttpFaults(client, f"after-call.s3.{operation}", lambda **_: None, times)

    def handler(parsed: dict[str, Any], **_: Any) -> None:
        body = parsed.get("Body") if isinstance(parsed, dict) else None
        raw = getattr(body, "_raw_stream", None)
        if faults.remaining <= 0 or raw is None:
            return
        faults.remaining -= 1
        faults.fired += 1
        real_read = raw.read
        reads = {"n": 0}

        def read(*args: Any, **kwargs: Any) -> Any:
            reads["n"] += 1
            if reads["n"] > after_reads:
                raise ProtocolError("injected: connection reset mid-body")
            return real_read(*args, **kwargs)

        raw.read = read

    faults.handler = handler
    client.meta.events.register(faults.event, handler)
    return faults


def strip_request_header(client: Any, operation: str, header: str) -> HttpFaults:
    """Drop ``header`` from every ``operation`` request, like a store that ignores it.

    For example ``strip_request_header(client, "DeleteObject", "If-Match")`` turns moto
    into a store with MinIO's gap: conditional deletes become unconditional.
    """
    faults = HttpFaults(client, f"before-send.s3.{operation}", lambda **_: None, 1 << 30)

    def handler(request: Any, **_: Any) -> None:
        if header in request.headers:
            del request.headers[header]
            faults.fired += 1

    faults.handler = handler
    client.meta.events.register(faults.event, handler)
    return faults


def record_operations(client: Any) -> list[str]:
    """A list that fills with the name of every request the client sends, in order."""
    seen: list[str] = []

    def handler(event_name: str, **_: Any) -> None:
        seen.append(event_name.rsplit(".", 1)[-1])

    client.meta.events.register("before-send.s3.*", handler)
    return seen
