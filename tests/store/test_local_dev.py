"""Local development: `s3spill serve-s3` stays up until interrupted; `demo --store` runs on it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from s3spill.testing.server import _readline_with_timeout

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}


@pytest.fixture
def serve_s3() -> tuple[subprocess.Popen[bytes], str]:
    """`s3spill serve-s3` with a versioned bucket, standard input closed from the start."""
    proc = subprocess.Popen([sys.executable, "-m", "s3spill", "serve-s3", "--port", "0", "--bucket", "dev",
                             "--versioned"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None
    first = _readline_with_timeout(proc.stdout, 60).decode()
    match = re.search(r"http://127\.0\.0\.1:\d+", first)
    assert match, first
    yield proc, match.group(0)
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


def _demo(endpoint: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL": endpoint}
    env.pop("S3SPILL_STORE", None)
    return subprocess.run([sys.executable, "-m", "s3spill", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def test_serve_s3_outlives_closed_stdin_and_stops_on_sigterm(
        serve_s3: tuple[subprocess.Popen[bytes], str]) -> None:
    """Closed standard input does not stop the server; SIGTERM stops it cleanly (exit 0)."""
    proc, _ = serve_s3
    time.sleep(1.0)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0


def test_demo_runs_twice_on_the_same_real_store(serve_s3: tuple[subprocess.Popen[bytes], str]) -> None:
    """Each run has its own sessions and keys, so a second run on the same bucket succeeds too."""
    _, endpoint = serve_s3
    first = _demo(endpoint, "demo", "--store", "s3://dev/demo")
    second = _demo(endpoint, "--store", "s3://dev/demo", "demo")
    for run in (first, second):
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        assert "orphan deleted: yes; referenced artifact kept: yes" in run.stdout
        assert "!!" not in run.stdout
    runs = [re.search(r"run (\S+)", r.stdout).group(1) for r in (first, second)]  # type: ignore[union-attr]
    assert runs[0] != runs[1]
    assert f"keys under demo/{runs[1]}/" in second.stdout


def test_demo_refuses_a_local_store_url(tmp_path: Path) -> None:
    """The demo's steps are about S3; a file:// store is a usage error, said in one line."""
    run = _demo("http://127.0.0.1:9", "demo", "--store", f"file://{tmp_path}")
    assert run.returncode != 0
    assert "demo --store needs an S3 URL" in run.stderr
    assert "Traceback" not in run.stderr
