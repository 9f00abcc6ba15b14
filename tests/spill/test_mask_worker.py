"""Masking at rest in a worker process: the same bytes and counts as in process, and it
fails closed (a dead, hung or given-up worker never lets an unmasked byte through)."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from s3spill.context.policy import SpillPolicy
from s3spill.context.secrets import StreamRedactor
from s3spill.context.secrets.masking import MAX_LINE_BYTES, OVERLAP
from s3spill.spill import maskworker
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore
from tests.context.secrets.clean_build_logs import build_log
from tests.context.secrets.conftest import KEY_LINES

MiB = 1 << 20
AWS_KEY = "AKIAQ3EGRZL5XK2M7WPD"
GH_TOKEN = "ghp_" + "Zq8Lm2Xv9Pw4Rt6Yb1Nc3Hd5Jf7Gk0Ue2Ao4Ti6"
SECRETS = (AWS_KEY, GH_TOKEN, "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", KEY_LINES[1])


def _stream(size: int, seed: int = 1) -> bytes:
    """A build log with secrets planted: key pairs, tokens, a key block, and one line
    longer than a scan piece with a token across a piece's overlap."""
    rng = random.Random(seed)
    lines = build_log(size).split(b"\n")
    plants = [f"export AWS_ACCESS_KEY_ID={AWS_KEY}", f"aws_secret_access_key = {SECRETS[2]}",
              f"token {GH_TOKEN} used", "-----BEGIN RSA PRIVATE KEY-----", *KEY_LINES,
              "-----END RSA PRIVATE KEY-----"]
    for _ in range(40):
        at = rng.randrange(len(lines))
        lines[at:at] = [p.encode() for p in plants]
    long_line = b"y" * (MAX_LINE_BYTES - OVERLAP // 2) + GH_TOKEN.encode() + b"z" * MAX_LINE_BYTES
    lines.insert(len(lines) // 2, long_line)
    return b"\n".join(lines)


def _chunks(data: bytes, seed: int) -> Iterator[bytes]:
    """Pieces of ``data`` from a few bytes to two MiB, cut anywhere."""
    rng, pos = random.Random(seed), 0
    while pos < len(data):
        size = rng.choice([1, 100, 4096, 65536, MiB - 7, MiB, 2 * MiB + 3])
        yield data[pos:pos + size]
        pos += size


def _mask(redactor: StreamRedactor | maskworker.OffloadRedactor, pieces: Iterator[bytes]) -> bytes:
    out = [redactor.push(piece) for piece in pieces]
    return b"".join([*out, redactor.finish()])


def _ready_worker() -> maskworker._Worker:
    """The pool's worker, started and ready (a stream hands over to a ready one only)."""
    redactor = maskworker.OffloadRedactor()
    deadline = time.monotonic() + 60
    while not redactor.offloaded and time.monotonic() < deadline:
        redactor.push(b"x" * maskworker.BATCH_BYTES + b"\n")
        time.sleep(0.02)
    assert redactor._worker is not None
    worker = redactor._worker
    redactor.finish()
    return worker


@pytest.fixture(scope="module")
def data() -> bytes:
    return _stream(6 * MiB)


@pytest.fixture(scope="module")
def expected(data: bytes) -> tuple[bytes, dict[str, int]]:
    redactor = StreamRedactor()
    out = _mask(redactor, iter([data[i:i + 65536] for i in range(0, len(data), 65536)]))
    return out, dict(redactor.counts)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_worker_masks_the_same_bytes_and_counts_as_this_process(
        data: bytes, expected: tuple[bytes, dict[str, int]], seed: int) -> None:
    """Chunks of every size (batched below a MiB, over two MiB, cut inside secrets, key
    blocks and a line longer than a scan piece): the same stream and counts."""
    _ready_worker()
    redactor, out, offloaded = maskworker.OffloadRedactor(), [], False
    for piece in _chunks(data, seed):
        out.append(redactor.push(piece))
        offloaded = offloaded or redactor.offloaded
    out.append(redactor.finish())
    assert offloaded and (b"".join(out), dict(redactor.counts)) == expected
    assert not any(s.encode() in b"".join(out) for s in SECRETS)


def test_a_buffer_the_caller_reuses_after_a_push_changes_nothing(
        data: bytes, expected: tuple[bytes, dict[str, int]]) -> None:
    """The chunks are kept until the worker answers: a bytearray refilled by its reader
    after each push must not be what the unchanged bytes are rebuilt from."""
    _ready_worker()
    redactor, buf, out = maskworker.OffloadRedactor(), bytearray(), []
    for start in range(0, len(data), MiB):
        buf[:] = data[start:start + MiB]
        out.append(redactor.push(buf))  # type: ignore[arg-type]
        buf[:] = b"\0" * len(buf)
    out.append(redactor.finish())
    assert b"".join(out) == expected[0]


def test_a_process_whose_streams_stay_under_the_start_size_never_starts_a_worker(
        data: bytes, expected: tuple[bytes, dict[str, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's start costs more than masking a few MiB here: an `s3spill run` of a
    6 MiB output masks it in its own thread, the same bytes, and starts no process."""
    pool = maskworker._Pool()
    monkeypatch.setattr(maskworker, "_POOL", pool)
    redactor = maskworker.OffloadRedactor()
    assert _mask(redactor, iter([data[i:i + MiB] for i in range(0, len(data), MiB)])) == expected[0]
    assert pool.workers == [] and len(data) < maskworker.START_BYTES


def test_a_small_stream_never_waits_for_a_worker() -> None:
    """Under a MiB the stream is masked here, chunk by chunk, as StreamRedactor does."""
    redactor = maskworker.OffloadRedactor()
    out = redactor.push(f"k AWS_ACCESS_KEY_ID={AWS_KEY}\npart".encode())
    assert out.startswith(b"k AWS_ACCESS_KEY_ID=[redacted")
    assert redactor.finish() == b"part" and not redactor.offloaded


def _kill_worker_mid_stream(data: bytes, sig: signal.Signals) -> tuple[bytes, dict[str, int], bool]:
    worker = _ready_worker()
    redactor = maskworker.OffloadRedactor()
    out, killed = [], False
    for n, piece in enumerate(data[i:i + MiB] for i in range(0, len(data), MiB)):
        out.append(redactor.push(piece))
        if n == 2:  # a chunk answered, one in flight, one batched
            assert redactor.offloaded
            os.kill(worker.proc.pid, sig)
            killed = True
    out.append(redactor.finish())
    return b"".join(out), dict(redactor.counts), killed and not redactor.offloaded


def test_a_worker_that_dies_mid_stream_leaves_the_rest_masked_here(
        data: bytes, expected: tuple[bytes, dict[str, int]]) -> None:
    """SIGKILL with chunks in flight: the chunks not answered are masked here from the last
    answered state (the carry, the key block) -- the same bytes, no secret stored."""
    out, counts, fell_back = _kill_worker_mid_stream(data, signal.SIGKILL)
    assert fell_back and (out, counts) == expected


def test_a_hung_worker_is_given_up_and_the_stream_masked_here(
        data: bytes, expected: tuple[bytes, dict[str, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that stops answering (SIGSTOP) is killed after the timeout; the same bytes."""
    monkeypatch.setattr(maskworker, "TIMEOUT", 0.5)
    out, counts, fell_back = _kill_worker_mid_stream(data, signal.SIGSTOP)
    assert fell_back and (out, counts) == expected
    assert all(w.dead for w in maskworker._POOL.workers if w.proc.poll() is not None)


def test_a_stream_given_up_on_returns_its_worker_and_its_late_answers_are_ignored(
        data: bytes, expected: tuple[bytes, dict[str, int]]) -> None:
    """A spill whose read failed never finishes its stream: the worker goes back to the pool
    when the redactor is dropped, and the next stream is not handed the old one's answers."""
    import gc

    worker = _ready_worker()
    abandoned = maskworker.OffloadRedactor()
    for piece in (data[:MiB], data[MiB:2 * MiB], data[2 * MiB:3 * MiB + 5]):
        abandoned.push(piece)
    assert abandoned._worker is worker
    del abandoned
    gc.collect()
    redactor = maskworker.OffloadRedactor()
    assert _mask(redactor, iter([data[i:i + MiB] for i in range(0, len(data), MiB)])) == expected[0]
    assert dict(redactor.counts) == expected[1] and maskworker._POOL.idle == [worker]


def test_an_at_rest_spill_stores_what_in_process_masking_stores(
        tmp_path: Path, data: bytes, expected: tuple[bytes, dict[str, int]]) -> None:
    """Through the Spiller: the stored copy is the in-process masking's, byte for byte."""
    _ready_worker()
    with Spiller(LocalStore(tmp_path), "s", SpillPolicy(secrets="at_rest"), journal=None) as sp:
        result = sp.externalize(iter([data[i:i + MiB] for i in range(0, len(data), MiB)]), "bash")
    assert result.spilled and result.artifact is not None and result.masked_at_rest
    assert result.artifact.sha256 == hashlib.sha256(expected[0]).hexdigest()
    assert result.masked == expected[1]


def test_chunks_the_worker_masked_nothing_in_come_back_as_they_were_pushed() -> None:
    """Offloaded, a chunk is given back whole once the worker made all of it final: the
    very bytes pushed when nothing in it was masked (no copy cut at a line's end, which
    the store's index builder would copy again to cut its own chunks)."""
    _ready_worker()
    clean = build_log(8 * MiB)
    chunks = [clean[i:i + MiB] for i in range(0, len(clean), MiB)]
    redactor = maskworker.OffloadRedactor()
    out = [redactor.push(chunk) for chunk in chunks]
    assert redactor.offloaded
    out.append(redactor.finish())
    assert b"".join(out) == clean and not redactor.counts
    assert out[:2] == [b"", b""]  # one chunk in flight, one answered but not all final
    given = [piece for piece in out[2:-1] if piece]
    assert len(given) >= len(chunks) - 3
    assert all(piece is chunk for piece, chunk in zip(given, chunks, strict=False))


def _straddling(at: int, line: bytes, within: int) -> bytes:
    """Clean log with ``line`` placed so that offset ``at`` falls ``within`` bytes into it."""
    clean = build_log(at + 3 * MiB)
    start = clean.rfind(b"\n", 0, at - within) + 1
    return clean[:start] + b"x" * (at - within - start) + line + b"\n" + clean[at - within + len(line) + 1:]


def test_a_secret_cut_by_the_seam_of_two_pieces_is_masked_in_both() -> None:
    """The worker's mask of a line that ends in the next chunk covers the end of the piece
    before it too; each piece comes back with its part of the mask (and its own length),
    also when the worker dies with such a mask held (the rest masked here)."""
    secret = SECRETS[2]
    line = f"aws_secret_access_key = {secret}".encode()
    data = _straddling(2 * MiB, line, len(line) - 20)  # the seam 20 characters before its end
    data = data[:3 * MiB] + _straddling(MiB, line, len(line) - 9)[:MiB] + data[3 * MiB:]
    expected = _mask(StreamRedactor(), iter([data]))
    assert secret.encode() in data and secret.encode() not in expected
    chunks = [data[i:i + MiB] for i in range(0, len(data), MiB)]
    for kill_after in (None, 2, 3):
        worker = _ready_worker()
        redactor, out = maskworker.OffloadRedactor(), []
        for n, chunk in enumerate(chunks):
            out.append(redactor.push(chunk))
            if n == kill_after:
                os.kill(worker.proc.pid, signal.SIGKILL)
        out.append(redactor.finish())
        assert b"".join(out) == expected, kill_after
        assert all(len(piece) == MiB for piece in out[2:-1] if piece) or kill_after is not None
        assert not any(secret[i:i + 8].encode() in b"".join(out) for i in range(len(secret) - 8))
