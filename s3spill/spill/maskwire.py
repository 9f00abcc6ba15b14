"""The mask worker's wire and its process: frames on two pipes, chunks in shared memory.

Split from :mod:`s3spill.spill.maskworker` (the spill's side: the pool, the redactor that
hands a stream over and fails closed) so that each is one job: this module is what both
processes agree on, and the worker's loop (``python -m s3spill.spill.maskwire``), which
imports nothing of the spill but the detector and :class:`StreamRedactor`.
"""

from __future__ import annotations

import json
import mmap
import os
import select
import struct
import sys

from s3spill.context.secrets.stream import StreamRedactor, StreamState

__all__ = ["ANSWER", "CHUNK", "FINISH", "PIPE_BYTES", "READY", "SHARED", "SLOTS", "SLOT_BYTES", "START",
           "WHERE", "main", "pack_state", "read_frame", "unpack_state", "write_frame"]

HEAD = struct.Struct("<BIQ")  # op, stream epoch, payload length
START, CHUNK, FINISH, READY, ANSWER, SHARED = range(1, 7)
PIPE_BYTES = 1 << 20
#: Chunks go through shared memory (a pipe cost the spill's thread ~0.4 ms of kernel time
#: per MiB): this many slots of this many bytes; a chunk sent is never overwritten before
#: its answer, and a larger one is sent in pieces (the output does not depend on the cuts).
SLOTS, SLOT_BYTES = 2, 2 << 20
WHERE = struct.Struct("<QQ")  # a chunk in shared memory: offset, size


def write_frame(fd: int, op: int, epoch: int, payload: bytes = b"", timeout: float | None = None) -> None:
    """One frame; ``timeout``: ``fd`` is non-blocking, and a reader that takes no more for
    that long raises TimeoutError (a stopped worker must not hang the spill)."""
    parts: list[bytes | memoryview] = [HEAD.pack(op, epoch, len(payload)), payload]
    while parts:
        try:
            done = os.writev(fd, parts)
        except BlockingIOError:
            if not select.select([], [fd], [], timeout)[1]:
                raise TimeoutError("the mask worker takes no more input") from None
            continue
        while parts and done >= len(parts[0]):
            done -= len(parts[0])
            parts.pop(0)
        if parts and done:
            parts[0] = memoryview(parts[0])[done:]


def read_exactly(fd: int, size: int) -> bytes:
    pieces, left = [], size
    while left:
        piece = os.read(fd, left)
        if not piece:
            raise EOFError("the other end closed the pipe")
        pieces.append(piece)
        left -= len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


#: A state (or an answer): the answer's size, its masked copy's length (-1: unchanged), the
#: carry's and its masks' lengths, the key-block state; then those bytes and the counts.
STATE = struct.Struct("<QqQQ?I")


def pack_state(state: StreamState, size: int = 0, masked: bytes | None = None) -> bytes:
    head = STATE.pack(size, -1 if masked is None else len(masked), len(state.carry), len(state.carry_masked),
                       state.in_key, state.key_lines)
    return b"".join((head, masked or b"", state.carry, state.carry_masked, json.dumps(state.counts).encode()))


def unpack_state(data: bytes) -> tuple[StreamState, int, bytes | None]:
    size, n_masked, n_carry, n_carry_masked, in_key, key_lines = STATE.unpack_from(data)
    pos = STATE.size
    masked = None if n_masked < 0 else data[pos:pos + n_masked]
    pos += max(n_masked, 0)
    carry, carry_masked = data[pos:pos + n_carry], data[pos + n_carry:pos + n_carry + n_carry_masked]
    counts = json.loads(data[pos + n_carry + n_carry_masked:])
    if not (isinstance(counts, dict) and all(isinstance(v, int) for v in counts.values())):
        raise ValueError("counts that are not counts")
    return StreamState(carry, carry_masked, in_key, key_lines, counts), size, masked


def read_frame(fd: int) -> tuple[int, int, bytes]:
    op, epoch, size = HEAD.unpack(read_exactly(fd, HEAD.size))
    return op, epoch, read_exactly(fd, size)


def main() -> None:
    """The worker: mask the chunks read on stdin, answer on stdout, until stdin closes."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the spill's to handle; EOF ends us
    from s3spill.context.secrets.detector import SecretDetector

    try:
        detector = SecretDetector("hyperscan")
    except Exception:  # noqa: BLE001 - the extra not installed: RE2, the same lines
        detector = SecretDetector("re2")
    StreamRedactor(detector).push(b"password=Xy7pQ2vLm9\n")  # load the library's rules now
    fd_in, fd_out = sys.stdin.fileno(), sys.stdout.fileno()
    shared = mmap.mmap(int(sys.argv[2]), SLOTS * SLOT_BYTES) if sys.argv[1:2] == ["--shared"] else None
    write_frame(fd_out, READY, 0)
    redactor, epoch = StreamRedactor(detector), 0
    while True:
        try:
            op, epoch_of, payload = read_frame(fd_in)
        except EOFError:
            return
        if op == START:
            redactor, epoch = StreamRedactor.resume(unpack_state(payload)[0], detector), epoch_of
            continue
        if epoch_of != epoch:
            continue  # a stream that was never started here (cannot happen; safe to ignore)
        if op == SHARED:
            if shared is None:
                return  # no map to read it from: end, so the spill masks the stream itself
            offset, size = WHERE.unpack(payload)
            payload = shared[offset:offset + min(size, SLOT_BYTES)]
        elif op not in (CHUNK, FINISH):
            return  # a frame we do not know: end rather than guess
        out = redactor.finish() if op == FINISH else redactor.push(payload)
        state = redactor.state()  # its carry stays here: the spill's side mirrors it
        answer = StreamState(b"", state.carry_masked, state.in_key, state.key_lines, state.counts)
        write_frame(fd_out, ANSWER, epoch, pack_state(answer, len(out), out if redactor.changed else None))


if __name__ == "__main__":
    main()
