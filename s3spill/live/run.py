"""Run a command (or drain any stream) into a live artifact, readable while it runs.

:func:`start_live` returns at once with a :class:`LiveHandle`; two threads do the work:
a *reader* that moves the command's merged stdout/stderr into a bounded queue (when the
store is slow the queue fills, the reader stops reading and the command blocks on its
pipe: backpressure, never loss), and a *pump* that feeds the
:class:`~s3spill.live.writer.LiveWriter`, cuts segments on time, writes the
heartbeat and, at the end, finishes the output into an ordinary artifact.

Memory is bounded by ``queue_bytes`` plus one segment (and its compressed frame),
whatever the output rate. The command runs in its own process group, so ``stop`` ends
it and whatever it started; a command that exits while a child it detached still holds
the pipe (``sh -c 'server & echo started'``) ends the run once the pipe has been quiet
for a moment after the exit, instead of waiting for the child.
"""

from __future__ import annotations

import contextlib
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from typing import BinaryIO

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import LiveConfig, TransferConfig
from s3spill.context.secrets import StreamRedactor
from s3spill.errors import LiveFenced, NotFound, PreconditionFailed, S3SpillError, SessionErased
from s3spill.keys import session_hash
from s3spill.leases.liveness import LivenessMark
from s3spill.live.finish import OnStored, cas_state, finish_live
from s3spill.live.group import ProcessGroup, end_group, identify
from s3spill.live.reader import LiveReader
from s3spill.live.segments import read_state
from s3spill.live.state import LiveState
from s3spill.live.summary import LiveSummary
from s3spill.live.writer import LiveWriter
from s3spill.log import get_logger
from s3spill.store.base import ObjectInfo, ObjectStore, iter_body

log = get_logger("s3spill.live.run")

_READ = 64 * 1024
#: After the command exited, how long its pipe may stay quiet before a detached child
#: that still holds it is left behind (its later output is not captured).
EXIT_GRACE = 0.5
#: Between SIGTERM and SIGKILL when a run is stopped.
STOP_GRACE = 5.0
_EOF = b""

LiveSource = Sequence[str] | Iterable[bytes] | BinaryIO


class LiveHandle:
    """A running live artifact: its id, how it stands, waiting for it, stopping it."""

    def __init__(self, run: _LiveRun) -> None:
        self._run = run
        self.source_id = str(run.writer.live_id)

    @property
    def pid(self) -> int | None:
        """The command's process id (None for a stream)."""
        return self._run.proc.pid if self._run.proc is not None else None

    def status(self) -> LiveSummary:
        """How the output stands, from the store (what any reader would see)."""
        return LiveReader.over(self._run.arts, self._run.config).status(self.source_id)

    def wait(self, timeout: float | None = None) -> LiveState | None:
        """The final state once the run finished (output stored), or None on timeout."""
        self._run.done.wait(timeout)
        if not self._run.done.is_set():
            return None
        if self._run.error is not None:
            raise self._run.error
        return self._run.final

    def stop(self, timeout: float | None = STOP_GRACE * 2) -> LiveState | None:
        """End the command (SIGTERM to its group, SIGKILL after a grace) and wait for the end."""
        self._run.stop()
        return self.wait(timeout)


class _LiveRun:
    def __init__(self, store: ObjectStore, session_id: str, source: LiveSource, tool: str, *,
                 label: str | None, config: LiveConfig, transfer: TransferConfig | None,
                 journal: LivenessMark | None, touch_interval: float,
                 env: dict[str, str] | None, cwd: str | None, die_with_parent: bool,
                 mask: StreamRedactor | None = None, on_stored: OnStored | None = None) -> None:
        self.config = config
        #: ``secrets="at_rest"``: the output is masked before a segment holds it.
        self.mask = mask
        self.on_stored = on_stored
        self.arts = ArtifactStore(store, transfer or getattr(store, "config", None),
                                  session_id=session_id)
        self.session_id = session_id
        self.journal = journal
        self.touch_interval = touch_interval
        self.proc: subprocess.Popen[bytes] | None = None
        self.group: ProcessGroup | None = None
        self.stream: Iterable[bytes] | None = None
        command: str | None = None
        if isinstance(source, Sequence) and not isinstance(source, (bytes, bytearray, str)):
            argv = [str(a) for a in source]
            command = " ".join(argv)
        self.writer = LiveWriter(store, session_id, tool, label=label, command=command,
                                 config=config, transfer=self.arts.config)
        self.writer.open()
        if command is not None:
            try:
                self.proc = subprocess.Popen(  # noqa: S603 - the caller's command, as given
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=cwd,
                    preexec_fn=_die_with_parent if die_with_parent else None)
            except OSError as exc:
                self.writer.feed(f"s3spill: cannot start {argv[0]}: {exc}\n".encode())
                self.writer.close("exited", exit_code=127 if isinstance(exc, FileNotFoundError)
                                  else 126)
                self.stream = None
            else:
                self.group = identify(self.proc.pid)
                self.writer.set_command_pid(self.proc.pid, self.group)
        else:
            self.stream = iter_body(source, _READ)  # type: ignore[arg-type]
        self.queue: queue.Queue[bytes] = queue.Queue(maxsize=max(2, config.queue_bytes // _READ))
        self.done = threading.Event()
        self.stopping = threading.Event()
        self.final: LiveState | None = None
        self.error: BaseException | None = None
        self.read_error: str | None = None
        self._touched = 0.0
        self._touch()
        if self.proc is None and self.stream is None:  # the command could not start
            threading.Thread(target=self._finish_only, daemon=True).start()
            return
        threading.Thread(target=self._read, name="s3spill-live-read", daemon=True).start()
        threading.Thread(target=self._pump, name="s3spill-live-pump", daemon=True).start()

    # -- threads -----------------------------------------------------------------------

    def _read(self) -> None:
        try:
            if self.proc is not None:
                self._read_pipe(self.proc)
            else:
                assert self.stream is not None
                for chunk in self.stream:
                    if self.stopping.is_set():
                        break
                    if chunk:
                        self.queue.put(bytes(chunk))
        except Exception as exc:  # noqa: BLE001 - a failing stream ends the output; the state says so
            log.warning("live.read_failed", error=type(exc).__name__)
            self.read_error = f"reading the output failed: {type(exc).__name__}: {exc}"[:300]
        finally:
            self.queue.put(_EOF)

    def _read_pipe(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        quiet_since: float | None = None
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                if sel.select(timeout=0.1):
                    chunk = os.read(fd, _READ)
                    if not chunk:
                        break
                    self.queue.put(chunk)
                    quiet_since = None
                    continue
                if proc.poll() is not None:
                    quiet_since = quiet_since or time.monotonic()
                    if time.monotonic() - quiet_since >= EXIT_GRACE:
                        log.info("live.detached_child", pid=proc.pid)
                        break
        proc.stdout.close()

    def _pump(self) -> None:
        w = self.writer
        try:
            while True:
                try:
                    chunk = self.queue.get(timeout=max(0.01, w.wait_hint()))
                except queue.Empty:
                    chunk = None
                if chunk == _EOF:
                    break
                if chunk:
                    w.feed(chunk if self.mask is None else self.mask.push(chunk))
                w.tick()
                self._touch()
                if w.stop_requested and not self.stopping.is_set():
                    self.stop()
            self._close()
        except LiveFenced as exc:
            log.error("live.fenced", live_id=str(w.live_id), error=str(exc))
            self._kill(signal.SIGKILL)
            self.error = exc
        except Exception as exc:  # noqa: BLE001 - a thread's end: kept for wait() to raise
            log.error("live.pump_failed", live_id=str(w.live_id), error=type(exc).__name__)
            self._kill(signal.SIGTERM)
            self.error = exc
        finally:
            self.done.set()

    def _close(self) -> None:
        status, code, sig = "exited", None, None
        if self.proc is not None:
            rc = self.proc.wait()
            code, sig = (None, -rc) if rc < 0 else (rc, None)
            if sig is not None or self.stopping.is_set():
                status = "killed"
        elif self.stopping.is_set():
            status = "killed"
        if self.mask is not None:
            self.writer.feed(self.mask.finish())
        self.writer.close(status, exit_code=code, signal=sig, note=self.read_error)
        self._finish()

    def _finish_only(self) -> None:
        try:
            self._finish()
        except Exception as exc:  # noqa: BLE001 - a thread's end: kept for wait() to raise
            self.error = exc
        finally:
            self.done.set()

    def _finish(self) -> None:
        self.final = finish_live(self.arts.store, self.session_id, self.writer.live_id,
                                 config=self.config, transfer=self.arts.config, on_stored=self.on_stored)
        if is_sealed(self.arts.store, self.writer.shash):
            # Purged while running: undo what this run stored (the purge's sweep or the next
            # GC run takes anything this misses).
            final = self.final.final_source_id if self.final is not None else None
            undo_live(self.arts.store, self.writer.shash, self.writer.live_id.name,
                      keys.SourceId.parse(final).name if final else None)
            raise SessionErased("the session was erased on request while the command ran")
        self._touch(force=True)

    def _touch(self, force: bool = False) -> None:
        """A live run is session activity: GC keeps the session's fresh artifacts."""
        if self.journal is None:
            return
        now = time.monotonic()
        if not force and now - self._touched < self.touch_interval:
            return
        self._touched = now
        try:
            self.journal.touch(0.0 if force else self.touch_interval)
        except S3SpillError as exc:
            log.warning("live.touch_failed", error=type(exc).__name__)

    # -- stopping ----------------------------------------------------------------------

    def stop(self) -> None:
        self.stopping.set()
        if self.proc is None:
            return
        self._kill(signal.SIGTERM)

        def escalate() -> None:
            assert self.proc is not None
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(STOP_GRACE)
            # The whole group, not only the direct child: a member that ignores SIGTERM must
            # not outlive a run that reads as killed.
            if self.group is not None:
                end_group(self.group, grace=0.0, term=False)
            else:
                self._kill(signal.SIGKILL)

        threading.Thread(target=escalate, daemon=True).start()

    def _kill(self, sig: int) -> None:
        """Signal the command's whole group (what it started too); gone already is fine."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


def is_sealed(store: ObjectStore, shash: str) -> bool:
    """Is the purge's seal (its audit record) there? Fails open: a failed HEAD is "no"."""
    try:
        store.head(keys.erasure_key(shash))
        return True
    except NotFound:
        return False
    except S3SpillError:
        return False


def undo_live(store: ObjectStore, shash: str, name: str, final: str | None) -> None:
    """Delete a live run's objects and its final artifact (each by its ETag; gone is fine)."""
    finals = (keys.index_key(shash, final), keys.artifact_key(shash, final)) if final else ()
    found = [*store.list(keys.live_prefix(shash, name)), *(i for k in finals for i in _heads(store, k))]
    for info in found:
        with contextlib.suppress(NotFound, PreconditionFailed):
            store.delete_if_match(info.key, info.etag)


def _heads(store: ObjectStore, key: str) -> list[ObjectInfo]:
    try:
        return [store.head(key)]
    except NotFound:
        return []


def start_live(store: ObjectStore, session_id: str, source: LiveSource, tool: str = "bash", *,
               label: str | None = None, config: LiveConfig | None = None,
               transfer: TransferConfig | None = None, journal: LivenessMark | None = None,
               touch_interval: float = 60.0, env: dict[str, str] | None = None,
               cwd: str | None = None, die_with_parent: bool = False,
               mask: StreamRedactor | None = None, on_stored: OnStored | None = None) -> LiveHandle:
    """Start a command (an argv list) or drain a stream into a live artifact; returns at once.

    The handle's ``source_id`` (``live:...``) is readable by ``read_page``/``grep``, the
    agent tools and the CLI from the moment this returns. ``die_with_parent`` (Linux; for
    the single-threaded supervisor only, as it runs code between fork and exec) makes the
    command get SIGTERM if this process dies: nothing runs on unobserved. ``mask``
    (``secrets="at_rest"``) masks the output before it is stored; a line is committed once
    its newline arrives (or 1 MiB of it). ``on_stored`` is told of the final copy (the
    session's quota counters, :meth:`~s3spill.fleet.quota.QuotaGuard.record`).

    Raises :class:`~s3spill.errors.SessionErased` when the session was purged: a live run
    would create a state, segments and a final artifact in a sealed session.
    """
    if is_sealed(store, session_hash(session_id)):
        raise SessionErased(f"session {session_hash(session_id)} was erased on request; nothing started")
    run = _LiveRun(store, session_id, source, tool, label=label, config=config or LiveConfig(),
                   transfer=transfer, journal=journal, touch_interval=touch_interval, env=env,
                   cwd=cwd, die_with_parent=die_with_parent, mask=mask, on_stored=on_stored)
    return LiveHandle(run)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the supervisor dies (Linux PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def request_stop(store: ObjectStore, session_id: str, live_id: str, grace: float = STOP_GRACE) -> LiveState:
    """Ask a live run to stop, from any process: by CAS (its supervisor sees it at its next
    state write) and, on the same host, by SIGTERM to the command's process group.

    When its supervisor is gone (died, or the state was finished as lost) nobody else will
    escalate: the group recorded in the state is then ended here — SIGTERM, SIGKILL after
    ``grace`` — so no process of it outlives ``stop``.
    """
    import socket

    live = keys.LiveId.parse(live_id).require_session(session_id)
    state, _ = read_state(store, live)
    here = state.host == socket.gethostname()[:255]
    if not state.terminal:
        state = cas_state(store, live, lambda s: None if s.terminal or s.stop_requested
                          else {"stop_requested": True})
        if here and state.command_pid and not state.terminal:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(state.command_pid, signal.SIGTERM)
    group = _recorded_group(state)
    if here and group is not None and (state.terminal or not _alive(state.supervisor_pid)):
        end_group(group, grace)
    return state


def _recorded_group(state: LiveState) -> ProcessGroup | None:
    if state.command_pid is None or state.command_start is None or state.boot_id is None:
        return None
    return ProcessGroup(pgid=state.command_pid, leader_start=state.command_start, boot_id=state.boot_id)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _zombie(pid) is not True


def _zombie(pid: int) -> bool | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()[0] == "Z"
