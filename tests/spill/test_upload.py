"""The bounded upload: the caller stops waiting, and a late result is never handed out."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from s3spill.spill.upload import BoundedUpload, UploadAbandoned


def test_a_writer_that_takes_nothing_is_abandoned_after_the_stall_timeout() -> None:
    """feed() gives up after stall_timeout when the writer stops pulling chunks."""
    release = threading.Event()

    def write(chunks: Iterator[bytes]) -> int:
        release.wait(5)
        return sum(len(c) for c in chunks)

    upload: BoundedUpload[int] = BoundedUpload(write, stall_timeout=0.3, depth=2)
    started = time.monotonic()
    fed = [upload.feed(b"x" * 10) for _ in range(10)]
    took = time.monotonic() - started
    assert fed[:2] == [True, True] and fed[-1] is False
    assert took < 1.5
    assert upload.finish(1.0) is None
    assert upload.reason and "took no data" in upload.reason
    release.set()
    assert upload.join(5)


def test_a_result_after_the_deadline_is_late_and_not_returned() -> None:
    """A writer that finishes after finish()'s wait: None, and the result is kept only as late."""

    def write(chunks: Iterator[bytes]) -> int:
        size = sum(len(c) for c in chunks)
        time.sleep(0.6)
        return size

    upload: BoundedUpload[int] = BoundedUpload(write, stall_timeout=1.0)
    assert upload.feed(b"abc")
    assert upload.finish(0.1) is None
    assert upload.reason and "did not finish" in upload.reason
    assert upload.join(5)
    assert upload.late == 3


def test_an_abandoned_writer_never_sees_the_end_of_the_stream() -> None:
    """After abandon(), the writer's iterator raises instead of ending normally."""
    seen: list[str] = []
    go = threading.Event()

    def write(chunks: Iterator[bytes]) -> int:
        go.wait(5)
        try:
            return sum(len(c) for c in chunks)
        except UploadAbandoned:
            seen.append("abandoned")
            raise

    upload: BoundedUpload[int] = BoundedUpload(write, stall_timeout=1.0)
    upload.feed(b"abc")
    upload.abandon("reading the output failed")
    go.set()
    assert upload.join(5)
    assert seen == ["abandoned"]
    assert upload.finish(0.1) is None and upload.reason == "reading the output failed"


def test_a_failing_writer_is_reported_and_stops_the_feed() -> None:
    """The writer's exception becomes the reason; feeding stops instead of blocking."""

    def write(chunks: Iterator[bytes]) -> int:
        next(chunks)
        raise OSError("disk full")

    upload: BoundedUpload[int] = BoundedUpload(write, stall_timeout=5.0, depth=1)
    results = [upload.feed(b"x") for _ in range(5)]
    assert results[0] is True and results[-1] is False
    assert upload.finish(1.0) is None
    assert upload.reason == "OSError: disk full"


def test_a_prompt_writer_returns_its_result_and_runs_the_follow_up() -> None:
    """The normal path: all chunks in order, the result, then the follow-up on the writer thread."""
    after: list[int] = []

    def write(chunks: Iterator[bytes]) -> int:
        return len(b"".join(chunks))

    upload: BoundedUpload[int] = BoundedUpload(write, stall_timeout=1.0)
    for piece in (b"ab", b"cd", b"e"):
        assert upload.feed(piece)
    assert upload.finish(2.0, after=after.append) == 5
    assert upload.join(2)
    assert after == [5]
