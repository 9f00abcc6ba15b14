"""Shared setup of the background-run tests: a CLI child against a local store, fast cadence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest

from s3spill import keys
from s3spill.live.segments import read_state
from s3spill.store.local import LocalStore
from s3spill.testing import child_env

#: Segments and heartbeats fast enough for a test to see them within a second.
FAST = ("--segment-interval", "0.2", "--heartbeat-interval", "0.5")
Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def live_env(tmp_path: Path, reaper: dict[str, str]) -> dict[str, str]:
    """The environment of a CLI child: a fresh local store and session, no other policy;
    whatever it leaves running is killed at teardown (``reaper``)."""
    env = {k: v for k, v in child_env({}).items() if not k.startswith("S3SPILL_")}
    return {**env, **reaper, "S3SPILL_STORE": (tmp_path / "store").as_uri(), "S3SPILL_SESSION": "live-fleet",
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CONFIG_DIRS": str(tmp_path / "sys")}


@pytest.fixture
def cli(live_env: dict[str, str]) -> Cli:
    """``s3spill ARGS`` as a child process; extra variables as keyword arguments."""

    def call(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "s3spill", *args], env={**live_env, **extra},
                              text=True, capture_output=True, timeout=120)

    return call


def start(cli: Cli, *cmd: str, flags: tuple[str, ...] = (), **extra: str) -> dict[str, object]:
    proc = cli("run", "--background", "--json", *FAST, *flags, "--", *cmd, **extra)
    assert proc.returncode == 0, proc.stderr
    started: dict[str, object] = json.loads(proc.stdout)
    return started


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(check: Callable[[], bool], timeout: float) -> float:
    """Seconds until ``check()`` held; fails after ``timeout``."""
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"not within {timeout} s")
        time.sleep(0.1)
    return time.monotonic() - t0


def finished(live_env: dict[str, str], live_id: str) -> bool:
    """Whether the run's state names its final copy yet, read in this process: a poll while
    the supervisor works (a CLI child per poll cost ~0.3 s of CPU), not the CLI under test."""
    store = LocalStore(Path(url2pathname(urlparse(live_env["S3SPILL_STORE"]).path)))
    return read_state(store, keys.LiveId.parse(live_id))[0].final_source_id is not None
