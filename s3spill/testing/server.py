"""The embedded S3: moto's S3 behind werkzeug's single-threaded server.

Why single-threaded: moto's conditional checks are not atomic under its threaded server,
and serializing requests makes sure no race in our code hides behind (or is caused by)
the emulator. :class:`EmbeddedS3` runs it in a child process, rather than a thread, which
keeps its state apart from in-process ``mock_aws`` tests (which reset moto's global
backends) and lets multi-process tests and benchmarks measure the client alone; the
child exits when its parent goes away (it watches its stdin). :func:`serve` runs it in
this process (``s3spill serve-s3``). Nothing here injects faults: ``s3spill demo`` and
``serve-s3`` import this module alone.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import boto3

from s3spill.config import TransferConfig

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
        from s3spill.store.s3.store import new_session

        return new_session(
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
    root = str(Path(__file__).resolve().parents[2])
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
