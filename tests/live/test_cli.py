"""`s3spill run --background`: a real command read while it runs, its supervisor SIGKILLed, GC alongside."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.live import reader as live_reader
from s3spill.live.finish import finish_live
from s3spill.live.segments import iter_committed, read_state
from s3spill.store import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import EmbeddedS3, child_env

SESSION = "live-cli-session"
#: Prints numbered lines steadily until it is killed (or its pipe breaks).
TICKER = ("import sys, time\n"
          "for i in range(1_000_000):\n"
          "    print(f'tick {i:06d}', flush=True)\n"
          "    time.sleep(0.005)\n")
FAST = ("--segment-interval", "0.2", "--heartbeat-interval", "0.5")


def _expected(lines: int) -> bytes:
    return b"".join(f"tick {i:06d}\n".encode() for i in range(lines))


@pytest.fixture(params=["local", "moto_server"])
def target(request: pytest.FixtureRequest, tmp_path: Path,
           reaper: dict[str, str]) -> tuple[ObjectStore, dict[str, str]]:
    """A store and the environment a CLI child needs to reach it: local directory or moto over
    HTTP; whatever the test leaves running is killed at teardown (``reaper``)."""
    if request.param == "local":
        url = (tmp_path / "store").as_uri()
        store: ObjectStore = LocalStore(tmp_path / "store")
        return store, child_env({"S3SPILL_STORE": url, "S3SPILL_SESSION": SESSION, **reaper})
    server: EmbeddedS3 = request.getfixturevalue("moto_server")
    store = request.getfixturevalue("server_store")
    return store, child_env({**server.env(), "S3SPILL_STORE": store.url, "S3SPILL_SESSION": SESSION,
                             **reaper})


@pytest.fixture
def env(tmp_path: Path, reaper: dict[str, str]) -> dict[str, str]:
    """The environment of a CLI child on the local store ``tmp_path/s``; whatever the test
    leaves running is killed at teardown (``reaper``)."""
    return child_env({"S3SPILL_STORE": (tmp_path / "s").as_uri(), "S3SPILL_SESSION": SESSION, **reaper})


def _cli(env: dict[str, str], *args: str, failpoints: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "s3spill", *args],
                          env={**env, "S3SPILL_FAILPOINTS": failpoints}, text=True,
                          capture_output=True, timeout=120)


def _start(env: dict[str, str], *cmd: str, failpoints: str = "") -> dict[str, object]:
    proc = _cli(env, "run", "--background", "--json", *FAST, "--", *cmd, failpoints=failpoints)
    assert proc.returncode == 0, proc.stderr
    started: dict[str, object] = json.loads(proc.stdout)
    return started


def _gc_deletes_nothing(store: ObjectStore, tmp_path: Path, live: keys.LiveId, *,
                        orphan_ok: bool = False) -> None:
    """Plan and apply with a clock 30 days ahead: nothing of the live output may go (with
    ``orphan_ok``, an unnamed finished artifact is an ordinary orphan and may be planned; the
    usage objects that the CLI's reads record are past their TTL then and may always go)."""
    prefix = keys.live_prefix(live.session_hash, live.name)
    before = {i.key for i in store.list(prefix)}
    now = datetime.now(UTC) + timedelta(days=30)
    plan = plan_cleanup(store, CleanupScope(), CleanupPolicy(dry_run=False),
                        out=tmp_path / f"plan-{time.monotonic_ns()}.jsonl", now=now)
    planned = [e for e in plan.entries()
               if e.status == "planned_delete" and e.object_kind != "usage_log"]
    assert not [e for e in planned if e.key and e.key.startswith(prefix)]
    if not orphan_ok:
        assert not planned, planned
    apply_cleanup(store, plan, now=lambda: now)
    after = {i.key for i in store.list(prefix)}
    assert before <= after


def _wait_dead(pid: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still alive")


def _wait_lines(store: ObjectStore, live: keys.LiveId, at_least: int, timeout: float = 30.0) -> int:
    """Poll the live state until at least ``at_least`` lines are committed; the count then."""
    deadline = time.monotonic() + timeout
    while True:
        state, _ = read_state(store, live)
        if state.line_count >= at_least:
            return state.line_count
        assert time.monotonic() < deadline, f"{state.line_count} of {at_least} lines committed"
        time.sleep(0.05)


def test_a_background_command_is_read_while_running_and_survives_a_supervisor_kill(
        target: tuple[ObjectStore, dict[str, str]], tmp_path: Path) -> None:
    """Read and grep 3x while it runs, each seeing more; SIGKILL its supervisor; all committed reads back."""
    store, env = target
    started = _start(env, sys.executable, "-c", TICKER)
    sid = str(started["source_id"])
    live = keys.LiveId.parse(sid)
    totals, greps = [], []
    seen = 0  # committed lines once the last grep had run: the next read waits for 20 more
    for _ in range(3):
        _wait_lines(store, live, seen + 20)
        page = _cli(env, "read", sid, "--json", "--offset", "0", "--limit", "5")
        assert page.returncode == 0, page.stderr
        data = json.loads(page.stdout)
        assert data["lines"][0]["text"] == "tick 000000" and data["live"]["status"] == "running"
        totals.append(data["total_lines"])
        grep = _cli(env, "grep", sid, r"^tick \d+0$", "--json", "--max-matches", "1")
        assert grep.returncode == 0, grep.stderr
        greps.append(json.loads(grep.stdout)["total_matches"])
        seen = _wait_lines(store, live, 0)
        _gc_deletes_nothing(store, tmp_path, live)
    assert totals[0] < totals[1] < totals[2] and greps[0] < greps[1] < greps[2]
    newest = _cli(env, "read", sid, "--since", str(len(_expected(totals[2]))))
    assert newest.returncode == 0 and f"tick {totals[2]:06d}" in newest.stdout
    assert "new output from here: --since " in newest.stdout  # spelled for the CLI

    os.kill(int(str(started["supervisor_pid"])), signal.SIGKILL)
    _wait_dead(int(str(started["supervisor_pid"])))
    _wait_dead(int(str(started["command_pid"])))  # its pipe broke: the command ends too
    state, _ = read_state(store, live)
    assert state.status == "running" and state.line_count >= totals[2]
    committed = b"".join(iter_committed(store, state))  # every segment verified
    assert _expected(state.line_count).startswith(committed)
    assert len(committed) == state.committed_bytes == state.total_bytes
    _gc_deletes_nothing(store, tmp_path, live)

    later = datetime.now(UTC) + timedelta(minutes=5)
    done = finish_live(store, SESSION, live, now=later)
    assert done.status == "lost" and done.final_source_id
    arts = ArtifactStore(store, session_id=SESSION)
    assert b"".join(arts.iter_verified(done.final_source_id)) == committed
    status = _cli(env, "status", sid)
    assert "lost" in status.stdout and done.final_source_id in status.stdout


def test_status_and_stop_end_a_background_command(env: dict[str, str], tmp_path: Path) -> None:
    """`stop` ends a running command; its output is stored and `status` says killed and where."""
    started = _start(env, "sh", "-c", "echo started; sleep 60")
    sid = str(started["source_id"])
    _wait_lines(LocalStore(tmp_path / "s"), keys.LiveId.parse(sid), 1)
    assert "running" in _cli(env, "status", sid).stdout
    stopped = _cli(env, "stop", sid)
    assert stopped.returncode == 0 and "killed (signal 15)" in stopped.stdout
    assert "stored as artifact:" in stopped.stdout
    _wait_dead(int(str(started["supervisor_pid"])))
    assert "started" in _cli(env, "read", sid).stdout


def test_a_command_that_detaches_a_child_ends_its_background_run(env: dict[str, str]) -> None:
    """`sh -c 'sleep 25 & echo hi'` in the background finishes when sh exits, not when sleep does."""
    started = _start(env, "sh", "-c", "sleep 25 & echo hi")
    _wait_dead(int(str(started["supervisor_pid"])), timeout=10)
    out = _cli(env, "status", str(started["source_id"])).stdout
    assert "exited with code 0" in out and "stored as" in out


@pytest.mark.parametrize("point", ["live.after_segment=kill@4", "live.after_state_cas=kill@5"])
def test_a_supervisor_killed_at_a_protocol_step_loses_only_uncommitted_output(
        point: str, env: dict[str, str], tmp_path: Path) -> None:
    """SIGKILL after a segment or after a state write: the state reads, every listed segment verifies."""
    store = LocalStore(tmp_path / "s")
    started = _start(env, sys.executable, "-c", TICKER, failpoints=point)
    _wait_dead(int(str(started["supervisor_pid"])))
    live = keys.LiveId.parse(str(started["source_id"]))
    state, _ = read_state(store, live)
    assert state.status == "running" and state.segments
    committed = b"".join(iter_committed(store, state))
    assert _expected(state.line_count).startswith(committed)
    assert len(committed) == state.committed_bytes
    page = live_reader.read_page(ArtifactStore(store, session_id=SESSION), str(live))
    assert page.total_lines == state.line_count
    _gc_deletes_nothing(store, tmp_path, live)
    done = finish_live(store, SESSION, live, now=datetime.now(UTC) + timedelta(minutes=5))
    body = ArtifactStore(store, session_id=SESSION).iter_verified(str(done.final_source_id))
    assert b"".join(body) == committed
    objects = [i.key for i in store.list(keys.live_prefix(live.session_hash, live.name))]
    assert objects == [keys.live_state_key(live.session_hash, live.name)]  # strays deleted too


def test_a_supervisor_killed_during_the_final_commit_leaves_a_finishable_state(
        env: dict[str, str], tmp_path: Path) -> None:
    """Killed after the artifact is written, before the state names it: reads work, a finish completes."""
    store = LocalStore(tmp_path / "s")
    started = _start(env, "sh", "-c", "seq 1 5000", failpoints="live.during_final_commit=kill")
    _wait_dead(int(str(started["supervisor_pid"])))
    live = keys.LiveId.parse(str(started["source_id"]))
    state, _ = read_state(store, live)
    assert state.status == "exited" and state.exit_code == 0 and state.final_source_id is None
    arts = ArtifactStore(store, session_id=SESSION)
    assert live_reader.read_page(arts, str(live), offset=4999).lines[0].text == "5000"
    _gc_deletes_nothing(store, tmp_path, live, orphan_ok=True)
    done = finish_live(store, SESSION, live)
    assert b"".join(arts.iter_verified(str(done.final_source_id))) == b"".join(
        f"{i}\n".encode() for i in range(1, 5001))


def test_a_quiet_command_dies_with_its_killed_supervisor(env: dict[str, str], tmp_path: Path) -> None:
    """SIGKILL of the supervisor ends even a command that never writes again (no SIGPIPE to wake it)."""
    started = _start(env, "sh", "-c", "echo up; exec sleep 120")
    _wait_lines(LocalStore(tmp_path / "s"), keys.LiveId.parse(str(started["source_id"])), 1)  # "up" is in
    os.kill(int(str(started["supervisor_pid"])), signal.SIGKILL)
    _wait_dead(int(str(started["command_pid"])), timeout=10)


def test_a_background_command_that_cannot_start_says_so(env: dict[str, str]) -> None:
    """`run --background -- no-such-command` exits 127 like `run`, printing the id and the reason."""
    proc = _cli(env, "run", "--background", "--", "no-such-command-s3spill")
    assert proc.returncode == 127, proc.stderr
    assert proc.stdout.startswith("live:") and "cannot start no-such-command-s3spill" in proc.stdout


def test_a_background_command_runs_in_the_callers_environment(env: dict[str, str]) -> None:
    """What the supervisor sets for itself (MALLOC_ARENA_MAX) does not reach the command."""
    env = {**env, "MARKER_FROM_CALLER": "yes"}
    env.pop("MALLOC_ARENA_MAX", None)
    started = _start(env, "sh", "-c", "env")
    _wait_dead(int(str(started["supervisor_pid"])))
    out = _cli(env, "read", str(started["source_id"])).stdout
    assert "MARKER_FROM_CALLER=yes" in out
    assert "MALLOC_ARENA_MAX" not in out and "S3SPILL_SUPERVISOR_ONLY_ENV" not in out
