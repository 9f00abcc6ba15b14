"""Masking an ``at_rest`` stream in a second process, one chunk ahead of the spill.

Why a process: masking the whole stream costs about half of what the spill itself costs
(Hyperscan's scan, then Python on the candidate lines), and a thread cannot take it off
the spill's path: the Hyperscan binding takes the GIL back for every match (~400 per MiB
of a build log), and the candidate lines are Python. A worker process masks chunk N
while the spill stores chunk N-1 (the writer compresses and hashes it on the other
thread), so on a machine with a core to spare the spill's wall time barely grows.

What the worker runs is the same :class:`~s3spill.context.secrets.StreamRedactor`, so it
masks the same bytes (tests/spill/test_mask_worker.py compares them). The spill's process
keeps every chunk until the worker answered it, and the worker answers with the number
of bytes that are final, their masked copy only when masking changed them, and its state
(:class:`~s3spill.context.secrets.stream.StreamState`). So it fails closed: when the worker
dies, hangs or answers nonsense, the redactor goes on in this process from the last
answered state with the chunks not yet answered — never storing what was not masked.

A stream is masked here (``StreamRedactor``, in this process) until it has a MiB (a small
output never waits for a worker) and until a worker is ready. A worker is started only by
a stream of :data:`START_BYTES` (its start costs 0.3-0.8 s of the other core, paid once per
process: idle workers are reused), and only when this process may run on more than one core.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import mmap
import os
import queue
import struct
import subprocess
import sys
import threading
import weakref
from collections import Counter, deque
from pathlib import Path
from typing import Any

from s3spill.context.secrets.stream import StreamRedactor, StreamState
from s3spill.spill.maskwire import (
    CHUNK,
    FINISH,
    PIPE_BYTES,
    READY,
    SHARED,
    SLOT_BYTES,
    SLOTS,
    START,
    WHERE,
    pack_state,
    read_frame,
    unpack_state,
    write_frame,
)

__all__ = ["BATCH_BYTES", "START_BYTES", "OffloadRedactor"]

#: Bytes gathered before a chunk goes to the worker (fewer, larger requests), and the
#: least a stream has before it is handed to a ready one.
BATCH_BYTES = 1 << 20
#: The least a stream has before it starts a worker (none is ready): a start costs
#: ~0.3-0.8 s of CPU on the other core, as much as masking ~100-250 MiB here, so a process
#: (``s3spill run``) whose largest output is a few MiB never pays for one.
START_BYTES = 32 << 20
#: Seconds to wait for the worker's answer to one chunk before masking it here instead.
TIMEOUT = 60.0
#: Turn the worker off (benchmarks compare both; a single core never starts one).
ENABLED = len(os.sched_getaffinity(0)) > 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) > 1
#: How many workers this process may run (concurrent ``at_rest`` spills beyond it mask
#: in their own thread).
MAX_WORKERS = 1

# -- this process's side ----------------------------------------------------------------------


class _Worker:
    """One worker process, its pipes, and a thread that reads its answers into a queue."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[2])  # the directory holding s3spill/
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.shared, self.sent = _shared_memory(), 0
        argv = [sys.executable, "-m", "s3spill.spill.maskwire"]
        fds: tuple[int, ...] = ()
        if self.shared is not None:
            fds = (self.shared[1],)
            argv += ["--shared", str(fds[0])]
        try:
            self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root,
                env=env, bufsize=0, pass_fds=fds)
        finally:
            if self.shared is not None:
                os.close(self.shared[1])  # the map holds it
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd_in, self.fd_out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.fd_in, False)  # writes wait with a timeout (:func:`write_frame`)
        for fd in (self.fd_in, self.fd_out):
            with contextlib.suppress(OSError, AttributeError):  # fewer, larger reads and writes
                import fcntl

                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self.ready = threading.Event()
        self.dead = False
        self.epoch = 0
        self.answers: queue.Queue[tuple[int, bytes] | None] = queue.Queue()
        threading.Thread(target=self._read_answers, name="s3spill-maskworker", daemon=True).start()

    def _read_answers(self) -> None:
        try:
            while True:
                op, epoch, payload = read_frame(self.fd_out)
                if op == READY:
                    self.ready.set()
                else:
                    self.answers.put((epoch, payload))
        except (EOFError, OSError, struct.error):
            pass
        self.dead = True
        self.answers.put(None)

    def send(self, op: int, epoch: int, payload: bytes = b"") -> None:
        write_frame(self.fd_in, op, epoch, payload, TIMEOUT)

    def send_chunk(self, epoch: int, data: bytes) -> None:
        """``data`` (at most a slot) in the next slot of shared memory, or down the pipe.
        The caller has the answers of all but ``SLOTS - 1`` chunks sent before."""
        if self.shared is None:
            return self.send(CHUNK, epoch, data)
        offset = self.sent % SLOTS * SLOT_BYTES
        self.sent += 1
        self.shared[0][offset:offset + len(data)] = data
        return self.send(SHARED, epoch, WHERE.pack(offset, len(data)))

    def answer(self, epoch: int, timeout: float) -> bytes:
        """The next answer for stream ``epoch``; raises when there is none in time."""
        while True:
            item = self.answers.get(timeout=timeout)  # queue.Empty: hung
            if item is None:
                raise EOFError("the mask worker ended")
            if item[0] == epoch:
                return item[1]  # else a stream that was given up on: its late answer

    def stop(self) -> None:
        self.dead = True  # the shared map stays: a slot may still be written to as we fail
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.wait(5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()


def _shared_memory() -> tuple[mmap.mmap, int] | None:
    """A shared map of the slots and its file descriptor (None: chunks go down the pipe)."""
    try:
        fd = os.memfd_create("s3spill-mask") if hasattr(os, "memfd_create") else _unlinked_file()
    except OSError:
        return None
    try:
        os.ftruncate(fd, SLOTS * SLOT_BYTES)
        return mmap.mmap(fd, SLOTS * SLOT_BYTES), fd
    except OSError:
        os.close(fd)
        return None


def _unlinked_file() -> int:
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="s3spill-mask-", delete=False) as f:
        fd = os.dup(f.fileno())
    os.unlink(f.name)
    return fd


class _Pool:
    """This process's workers: idle ones are handed to the next stream."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.workers: list[_Worker] = []
        self.idle: list[_Worker] = []

    def take(self, start: bool = True) -> _Worker | None:
        """A ready idle worker, or None (then, if ``start``, one is started for later,
        within the limit)."""
        with self.lock:
            if self.pid != os.getpid():  # a forked child: the parent's workers are not ours
                self.pid, self.workers, self.idle = os.getpid(), [], []
            self.workers = [w for w in self.workers if not w.dead]
            self.idle = [w for w in self.idle if not w.dead]
            for worker in self.idle:
                if worker.ready.is_set():
                    self.idle.remove(worker)
                    return worker
            if start and len(self.workers) < MAX_WORKERS and sys.executable:
                try:
                    worker = _Worker()
                except (OSError, ValueError, subprocess.SubprocessError):  # no interpreter to start
                    return None
                if not self.workers:
                    atexit.register(_stop_all)
                self.workers.append(worker)
                self.idle.append(worker)
            return None

    def give_back(self, worker: _Worker) -> None:
        with self.lock:
            if not worker.dead and worker in self.workers and worker not in self.idle:
                self.idle.append(worker)


_POOL = _Pool()


class OffloadRedactor:
    """:class:`StreamRedactor`'s ``push``/``finish``/``counts``, masked by a worker process
    when one is ready (see the module's docstring); output and counts are the same."""

    def __init__(self) -> None:
        self._local: StreamRedactor | None = StreamRedactor()
        self._worker: _Worker | None = None
        self._epoch = 0
        self._release: weakref.finalize[Any, Any] | None = None
        #: The pieces the worker answered for and this side has not given back yet, in
        #: order (the first may be the carry handed over): the first :attr:`_final` bytes of
        #: them are final, with the masks the worker made there (offset from the first
        #: piece, masked bytes); the rest is the worker's carry, kept to go on here if it fails.
        #: A piece is given back whole once final, as the object it was when nothing in it
        #: was masked: the store then gets the chunks it was fed, not a copy of each cut at
        #: a line's end (a copy here, and one more in the index builder's re-chunking).
        self._held: deque[bytes] = deque()
        self._held_bytes = 0
        self._final = 0
        self._masks: list[tuple[int, bytes]] = []
        self._last = StreamState()
        self._sent: deque[bytes] = deque()  # chunks sent, not answered yet
        self._batch: list[bytes] = []
        self._batched = 0
        self._seen = 0
        self._gave_up = False  # a worker failed this stream: the rest is masked here

    @property
    def offloaded(self) -> bool:
        """True while a worker masks this stream."""
        return self._worker is not None

    @property
    def counts(self) -> Counter[str]:
        return self._local.counts if self._local is not None else Counter(self._last.counts)

    def push(self, chunk: bytes) -> bytes:
        """As :meth:`StreamRedactor.push` (when offloaded, the bytes come up to two chunks
        later, in the pieces they were sent in)."""
        if type(chunk) is not bytes:  # kept until answered: a caller's buffer may be reused
            chunk = bytes(chunk)
        self._seen += len(chunk)
        if self._local is not None and (self._seen < BATCH_BYTES or not ENABLED or self._gave_up
                                        or not self._hand_over()):
            return self._local.push(chunk)
        if not chunk:
            return b""
        self._batch.append(chunk)
        self._batched += len(chunk)
        if self._batched < BATCH_BYTES:
            return b""
        out = self._send_batch()
        while len(self._sent) > 1:  # one chunk ahead: the worker masks it while we store this
            out += self._answered()
        return out

    def finish(self) -> bytes:
        """The rest, masked (and the worker back in the pool)."""
        out = b""
        if self._worker is not None:
            out = self._send_batch()
            if self._worker is not None:
                try:
                    self._worker.send(FINISH, self._epoch)
                except OSError:
                    out += self._fall_back()
            while self._worker is not None and self._sent:
                out += self._answered()
            if self._worker is not None:
                out += self._answered(final=True)
            if self._release is not None:
                self._release()
            self._worker = None
        if self._local is not None:
            out += self._local.finish()
        return out

    def _hand_over(self) -> bool:
        """Give the stream to a ready worker with the state masked here so far."""
        worker = _POOL.take(start=self._seen >= START_BYTES)
        if worker is None:
            return False
        assert self._local is not None
        worker.epoch += 1
        self._worker, self._epoch = worker, worker.epoch
        state = self._local.state()
        try:
            worker.send(START, self._epoch, pack_state(state))
        except OSError:
            worker.stop()
            self._worker = None
            return False
        self._release = weakref.finalize(self, _POOL.give_back, worker)
        self._last, self._local = state, None
        if state.carry:
            self._held.append(state.carry)
            self._held_bytes = len(state.carry)
        return True

    def _send_batch(self) -> bytes:
        """Send what was gathered, in pieces of a slot at most; the output of the answers
        awaited to free a slot, or of going on here if the worker is gone."""
        if not self._batch:
            return b""
        data = self._batch[0] if len(self._batch) == 1 else b"".join(self._batch)
        self._batch, self._batched = [], 0
        out = []
        for start in range(0, len(data), SLOT_BYTES):
            piece = data if len(data) <= SLOT_BYTES else data[start:start + SLOT_BYTES]
            while self._worker is not None and len(self._sent) >= SLOTS:
                out.append(self._answered())
            if self._worker is None:  # gone while answering: the rest is masked here
                assert self._local is not None
                out.append(self._local.push(piece))
                continue
            self._sent.append(piece)
            try:
                self._worker.send_chunk(self._epoch, piece)
            except OSError:
                out.append(self._fall_back())
        return b"".join(out)

    def _answered(self, *, final: bool = False) -> bytes:
        """The pieces the worker's answer for the oldest chunk sent (``final``: for the
        stream's end) made final; masked here instead when it cannot answer."""
        assert self._worker is not None
        chunk = b"" if final else self._sent[0]
        try:
            state, size, masked = unpack_state(self._worker.answer(self._epoch, TIMEOUT))
            raw_len = self._held_bytes - self._final + len(chunk)  # its carry and the chunk
            if not (0 <= size <= raw_len and (masked is None or len(masked) == size)
                    and (not final or size == raw_len)):
                raise ValueError("an answer that does not fit the chunk")
        except (EOFError, OSError, queue.Empty, ValueError, TypeError, struct.error):
            return self._fall_back() + (self._local.finish() if final and self._local else b"")
        if not final:
            self._sent.popleft()
            if chunk:
                self._held.append(chunk)
                self._held_bytes += len(chunk)
        if masked is not None and size:
            self._masks.append((self._final, masked))
        self._final += size
        self._last = StreamState(b"", state.carry_masked, state.in_key, state.key_lines, state.counts)
        return self._give_back()

    def _give_back(self) -> bytes:
        """The held pieces that are final now, whole, masked."""
        out: list[bytes] = []
        held = self._held
        while held and len(held[0]) <= self._final:
            piece = held.popleft()
            size = len(piece)
            self._held_bytes -= size
            self._final -= size
            if self._masks:
                piece = self._masked(piece)
            out.append(piece)
        return out[0] if len(out) == 1 else b"".join(out)

    def _masked(self, piece: bytes) -> bytes:
        """``piece`` (the first held one, all of it final) with the worker's masks in it;
        the masks past it kept for the next pieces."""
        size, buf, rest = len(piece), None, []
        for start, masked in self._masks:
            end = start + len(masked)
            if start < size:
                buf = buf if buf is not None else bytearray(piece)
                buf[start:min(end, size)] = masked[:min(end, size) - start]
            if end > size:
                rest.append((max(start - size, 0), masked[max(size - start, 0):]))
        self._masks = rest
        return piece if buf is None else bytes(buf)

    def _fall_back(self) -> bytes:
        """The worker is gone: mask here, from its last answered state, what it held."""
        worker, self._worker, self._gave_up = self._worker, None, True
        if worker is not None:
            worker.stop()
        if self._release is not None:
            self._release.detach()
        # What the worker made final, masked; its carry and the chunks it did not answer
        # are masked here, from its last answered state.
        raw = b"".join(self._held)
        done = raw[:self._final]
        if self._masks:
            buf = bytearray(done)
            for start, masked in self._masks:
                buf[start:start + len(masked)] = masked
            done = bytes(buf)
        carry = raw[self._final:]
        self._held.clear()
        self._held_bytes, self._final, self._masks = 0, 0, []
        self._local = StreamRedactor.resume(dataclasses.replace(self._last, carry=carry))
        out = b"".join([done, *(self._local.push(c) for c in self._sent)])
        self._sent.clear()
        return out


def _stop_all() -> None:
    for worker in list(_POOL.workers):
        worker.stop()
