"""Test tools shipped for users: an embedded S3 and fault injection around real stores.

Why these and not fakes: every test of s3spill runs against real S3 semantics (moto),
and faults are injected *around* the real thing — at the HTTP level with botocore event
hooks, or around any :class:`~s3spill.store.base.ObjectStore` with :class:`FaultyStore`
— so what is tested is our handling of a real answer, never a mock's idea of one.
:class:`ConditionIgnoringStore` turns a real store into one that ignores conditional
headers (as some S3 look-alikes do), to check that s3spill refuses it.

:class:`EmbeddedS3` runs moto's WSGI app in a child process behind werkzeug's
*single-threaded* server: moto's conditional checks are not atomic under its threaded
server, and serializing requests makes sure no race in our code hides behind (or is
caused by) the emulator. A child process, rather than a thread, keeps its state apart
from in-process ``mock_aws`` tests (which reset moto's global backends) and lets
multi-process tests and benchmarks measure the client alone. The child exits when its
parent goes away (it watches its stdin).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import boto3
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ReadTimeoutError
from botocore.httpsession import URLLib3Session
from urllib3.exceptions import ProtocolError

from s3spill.config import TransferConfig
from s3spill.errors import (
    AlreadyExists,
    ConditionalConflict,
    NotFound,
    PreconditionFailed,
    StoreUnavailable,
)
from s3spill.store.base import (
    Body,
    ByteRange,
    ObjectInfo,
    ObjectStore,
    PutResult,
    StoreCapabilities,
    WrappedStore,
    iter_body,
)

__all__ = [
    "EmbeddedS3",
    "Fault",
    "FaultyStore",
    "HttpFaults",
    "break_response_body",
    "child_env",
    "drop_response_after_send",
    "free_port",
    "inject_http_errors",
    "record_operations",
    "strip_request_header",
]

FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedS3:
    """A moto S3 server on 127.0.0.1, one request at a time, in a child process."""

    def __init__(self, *, port: int = 0, region: str = "us-east-1", startup_timeout: float = 60.0):
        self.port = port
        self.region = region
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self.endpoint_url = ""

    def start(self) -> str:
        cmd = [sys.executable, "-m", "s3spill.testing", "--port", str(self.port), "--exit-on-stdin-eof"]
        self._proc = subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=child_env(),
        )
        assert self._proc.stdout is not None
        line = _readline_with_timeout(self._proc.stdout, self.startup_timeout)
        if not line.startswith(b"READY "):
            self.stop()
            raise RuntimeError(f"embedded S3 did not start: {line!r}")
        self.endpoint_url = line.split()[1].decode()
        return self.endpoint_url

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin:
                proc.stdin.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def __enter__(self) -> EmbeddedS3:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def session(self) -> boto3.session.Session:
        """A boto3 session with throwaway credentials the embedded server accepts."""
        return boto3.session.Session(
            aws_access_key_id=FAKE_CREDENTIALS["aws_access_key_id"],
            aws_secret_access_key=FAKE_CREDENTIALS["aws_secret_access_key"],
            region_name=self.region)

    def client(self) -> Any:
        return self.session().client("s3", endpoint_url=self.endpoint_url)

    def create_bucket(self, name: str, *, versioned: bool = False) -> str:
        client = self.client()
        client.create_bucket(Bucket=name)
        if versioned:
            client.put_bucket_versioning(
                Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        client.close()
        return name

    def store(self, bucket: str, prefix: str = "", config: TransferConfig | None = None) -> Any:
        """An :class:`~s3spill.store.s3.store.S3Store` talking to this server."""
        from s3spill.store.s3.store import S3Store

        return S3Store(bucket, prefix, config=config, endpoint_url=self.endpoint_url,
                       session=self.session())

    def env(self) -> dict[str, str]:
        """Environment variables that point the standard AWS configuration at this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint_url, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": self.region}


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child Python that must import this very s3spill package."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def _readline_with_timeout(stream: IO[bytes], timeout: float) -> bytes:
    result: list[bytes] = []
    reader = threading.Thread(target=lambda: result.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else b""


def _serve(port: int, *, exit_on_stdin_eof: bool = True, host: str = "127.0.0.1",
           ready: Callable[[str], None] | None = None) -> None:
    """Serve moto's S3 one request at a time, until interrupted (or stdin closes, if asked).

    ``exit_on_stdin_eof`` is how :class:`EmbeddedS3`'s child notices that its parent died
    (the pipe closes); ``s3spill serve-s3`` runs without it and stays up until interrupted.
    """
    import logging

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    class SerialHandler(MotoRequestHandler):
        # HTTP/1.0: the connection closes after each answer, so one idle keep-alive
        # client cannot block a single-threaded server.
        protocol_version = "HTTP/1.0"

    app = DomainDispatcherApplication(create_backend_app)
    server = make_server(host, port, app, threaded=False, processes=1,
                         request_handler=SerialHandler)
    server.socket.listen(128)

    def watch_parent() -> None:
        sys.stdin.buffer.read()  # returns at EOF: the parent closed the pipe or died
        threading.Thread(target=server.shutdown, daemon=True).start()

    if exit_on_stdin_eof:
        threading.Thread(target=watch_parent, daemon=True).start()
    url = f"http://{host}:{server.server_port}"
    if ready is not None:
        ready(url)
    else:
        sys.stdout.write(f"READY {url}\n")
        sys.stdout.flush()
    try:
        server.serve_forever()
    finally:
        server.server_close()


# -- HTTP-level faults (botocore event hooks on a real client) --------------------------


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


# -- faults around any ObjectStore ------------------------------------------------------

FaultKind = Literal["unavailable", "drop_response", "conflict", "delay"]


@dataclass
class Fault:
    """One rule: what to do to which operation, how many times.

    * ``unavailable`` — raise StoreUnavailable; nothing reached the store.
    * ``drop_response`` — the operation runs and lands, then StoreUnavailable is raised
      (the caller cannot know it succeeded).
    * ``conflict`` — raise ConditionalConflict; nothing reached the store.
    * ``delay`` — sleep ``seconds``, then run normally.
    """

    operation: str  # a method name of ObjectStore, or "*"
    kind: FaultKind
    times: int = 1
    key_prefix: str = ""
    seconds: float = 0.0
    fired: int = 0

    def matches(self, operation: str, key: str) -> bool:
        return (self.times > 0 and self.operation in ("*", operation)
                and key.startswith(self.key_prefix))


@dataclass
class FaultyStore(WrappedStore):
    """Wraps a real store and applies :class:`Fault` rules to its calls, in order."""

    inner: ObjectStore
    faults: list[Fault] = field(default_factory=list)
    log: list[tuple[str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.kind = self.inner.kind
        #: Faults are failures, not ignored conditions: the capability check probes ``inner``
        #: (so it never consumes an injected fault).
        self.conditions_from = self.inner
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def _run(self, operation: str, key: str, call: Callable[[], Any]) -> Any:
        with self._lock:
            fault = next((f for f in self.faults if f.matches(operation, key)), None)
            if fault is not None:
                fault.times -= 1
                fault.fired += 1
        kind = fault.kind if fault else "pass"
        self.log.append((operation, key, kind))
        if fault is None:
            return call()
        if fault.kind == "unavailable":
            raise StoreUnavailable(f"injected: {operation} unavailable", key=key)
        if fault.kind == "conflict":
            raise ConditionalConflict(f"injected: {operation} conflict", key=key)
        if fault.kind == "delay":
            time.sleep(fault.seconds)
            return call()
        call()
        raise StoreUnavailable(f"injected: {operation} landed but its answer was lost", key=key)

    def put_if_absent(self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
                      content_type: str = "application/octet-stream") -> PutResult:
        return self._run("put_if_absent", key, lambda: self.inner.put_if_absent(  # type: ignore[no-any-return]
            key, body, metadata=metadata, content_type=content_type))

    def put_if_match(self, key: str, body: Body, etag: str, *,
                     metadata: dict[str, str] | None = None,
                     content_type: str = "application/octet-stream") -> PutResult:
        return self._run("put_if_match", key, lambda: self.inner.put_if_match(  # type: ignore[no-any-return]
            key, body, etag, metadata=metadata, content_type=content_type))

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        return self._run("get", key, lambda: self.inner.get(key, byte_range))  # type: ignore[no-any-return]

    def iter_chunks(self, key: str, byte_range: ByteRange | None = None,
                    chunk_size: int = 1024 * 1024) -> Iterator[bytes]:
        return self._run("iter_chunks", key,  # type: ignore[no-any-return]
                         lambda: self.inner.iter_chunks(key, byte_range, chunk_size))

    def head(self, key: str) -> ObjectInfo:
        return self._run("head", key, lambda: self.inner.head(key))  # type: ignore[no-any-return]

    def delete_if_match(self, key: str, etag: str) -> None:
        self._run("delete_if_match", key, lambda: self.inner.delete_if_match(key, etag))

    def delete_unconditional(self, key: str) -> None:
        self._run("delete_unconditional", key, lambda: self.inner.delete_unconditional(key))

    def delete_version(self, key: str, version_id: str) -> None:
        self._run("delete_version", key, lambda: self.inner.delete_version(key, version_id))

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self._run("list", prefix, lambda: self.inner.list(prefix))  # type: ignore[no-any-return]

    def list_after(self, prefix: str, start_after: str) -> Iterator[ObjectInfo]:
        return self._run("list", prefix,  # type: ignore[no-any-return]
                         lambda: self.inner.list_after(prefix, start_after))

    def capabilities(self) -> StoreCapabilities:
        return self.inner.capabilities()


def serve(port: int = 0, *, host: str = "127.0.0.1", buckets: Sequence[str] = (),
          versioned: bool = False, ready: Callable[[str], None] | None = None,
          exit_on_stdin_eof: bool = False) -> None:
    """Run the serialized moto S3 in this process until interrupted (``s3spill serve-s3``).

    ``buckets`` are created once the server answers (versioned if asked), from a thread,
    before ``ready`` is called with the endpoint URL.
    """
    os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")

    def announce(url: str) -> None:
        def create() -> None:
            if buckets:
                client = boto3.session.Session(
                    aws_access_key_id=FAKE_CREDENTIALS["aws_access_key_id"],
                    aws_secret_access_key=FAKE_CREDENTIALS["aws_secret_access_key"],
                    region_name="us-east-1").client("s3", endpoint_url=url)
                for name in buckets:
                    client.create_bucket(Bucket=name)
                    if versioned:
                        client.put_bucket_versioning(
                            Bucket=name, VersioningConfiguration={"Status": "Enabled"})
                client.close()
            if ready is not None:
                ready(url)
            else:
                sys.stdout.write(f"READY {url}\n")
                sys.stdout.flush()

        threading.Thread(target=create, daemon=True).start()

    _serve(port, exit_on_stdin_eof=exit_on_stdin_eof, host=host, ready=announce)


class ConditionIgnoringStore(WrappedStore):
    """A real store made to behave like one that ignores ``If-None-Match`` / ``If-Match``.

    Some S3 look-alikes (s3rver, old gateways) accept conditional headers and then do the
    unconditional thing. This wrapper reproduces that on any real backend: a
    create-if-absent overwrites, a compare-and-swap replaces whatever is there, a
    conditional delete deletes. Use it to check that s3spill refuses such a store
    (:class:`~s3spill.errors.StoreCapabilityError`) instead of losing updates. It has no
    ``conditions_from``: the capability check probes it, not the store it wraps.
    """

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.kind = inner.kind

    def _overwrite(self, key: str, body: Body, metadata: dict[str, str] | None,
                   content_type: str) -> PutResult:
        data = b"".join(iter_body(body))
        for _ in range(64):
            try:
                current = self.inner.head(key)
            except NotFound:
                try:
                    return self.inner.put_if_absent(key, data, metadata=metadata,
                                                    content_type=content_type)
                except AlreadyExists:
                    continue
            try:
                return self.inner.put_if_match(key, data, current.etag, metadata=metadata,
                                               content_type=content_type)
            except (PreconditionFailed, NotFound):
                continue
        raise StoreUnavailable(f"could not overwrite {key}", key=key)

    def put_if_absent(self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
                      content_type: str = "application/octet-stream") -> PutResult:
        return self._overwrite(key, body, metadata, content_type)

    def put_if_match(self, key: str, body: Body, etag: str, *,
                     metadata: dict[str, str] | None = None,
                     content_type: str = "application/octet-stream") -> PutResult:
        return self._overwrite(key, body, metadata, content_type)

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        return self.inner.get(key, byte_range)

    def iter_chunks(self, key: str, byte_range: ByteRange | None = None,
                    chunk_size: int = 1024 * 1024) -> Iterator[bytes]:
        return self.inner.iter_chunks(key, byte_range, chunk_size)

    def head(self, key: str) -> ObjectInfo:
        return self.inner.head(key)

    def delete_if_match(self, key: str, etag: str) -> None:
        self.inner.delete_unconditional(key)

    def delete_unconditional(self, key: str) -> None:
        self.inner.delete_unconditional(key)

    def delete_version(self, key: str, version_id: str) -> None:
        self.inner.delete_version(key, version_id)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    def list_after(self, prefix: str, start_after: str) -> Iterator[ObjectInfo]:
        return self.inner.list_after(prefix, start_after)

    def capabilities(self) -> StoreCapabilities:
        return self.inner.capabilities()  # what it *claims*; the check finds the truth


def main(argv: list[str] | None = None) -> int:
    """The child-process entry of :class:`EmbeddedS3` (users run ``s3spill serve-s3``)."""
    parser = argparse.ArgumentParser(description="serve an embedded, serialized moto S3")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when standard input closes (the parent process died)")
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")
    _serve(args.port, exit_on_stdin_eof=args.exit_on_stdin_eof)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
