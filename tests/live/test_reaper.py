"""The ``reaper`` fixture: what a failed background-run test leaves running is killed at teardown."""

from __future__ import annotations

import subprocess

from tests.conftest import REAP_MARK, kill_marked
from tests.live.conftest import Cli, alive, start, wait_for


def test_a_running_supervisor_and_its_command_are_killed_by_their_mark(
        cli: Cli, live_env: dict[str, str]) -> None:
    """A background `sleep 300` (supervisor and command, each its own group) dies by its mark;
    a process without the mark lives on."""
    started = start(cli, "sh", "-c", "echo up; exec sleep 300")
    pids = [int(str(started["supervisor_pid"])), int(str(started["command_pid"]))]
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        assert all(alive(pid) for pid in pids)
        found = kill_marked(live_env[REAP_MARK])
        assert set(pids) <= set(found) and bystander.pid not in found
        wait_for(lambda: not any(alive(pid) for pid in pids), 10)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
