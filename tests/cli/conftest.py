"""Fixtures of the CLI tests: the CLI in this process against a fresh local store, or in a child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3spill.cli import main
from s3spill.store.local import LocalStore

#: ``cli(*argv)`` -> (exit code, stdout, stderr); a usage error's SystemExit is its code.
CliCall = Callable[..., tuple[int, str, str]]


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalStore:
    """A fresh local store and session ``s``, named to the CLI through the environment."""
    monkeypatch.setenv("S3SPILL_STORE", (tmp_path / "store").as_uri())
    monkeypatch.setenv("S3SPILL_SESSION", "s")
    for name in ("CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID"):
        monkeypatch.delenv(name, raising=False)
    return LocalStore(tmp_path / "store")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> CliCall:
    """Run ``s3spill ARGV`` in this process and return what it said."""
    capsys.readouterr()

    def call(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's usage errors
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return call


ROOT = Path(__file__).resolve().parents[2]
#: Runs the CLI's main() as the console script does, then reports what it imported.
PROBE = ("import json, sys\nfrom s3spill.cli import main\ncode = main(sys.argv[1:])\nsys.stdout.flush()\n"
         "print('\\n' + json.dumps({'code': code, 'modules': sorted(sys.modules)}))")
#: Layers a fast path must not load.
HEAVY = ("boto3", "botocore", "pydantic", "structlog", "s3spill.store", "s3spill.spill",
         "s3spill.artifacts", "s3spill.adapters", "detect_secrets")


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
    env.update(PYTHONPATH=str(ROOT), S3SPILL_STORE=str(tmp_path / "store"), S3SPILL_SESSION="fast")
    env.update(extra)
    return env



def site_free_env(tmp_path: Path, session: str) -> dict[str, str]:
    """The environment of a ``python -S`` child that imports this checkout and the venv's
    site-packages by hand: no ``site`` and no ``.pth``, so the editable install's finder cannot
    import anything before ``main`` (as nothing does in a regular install's process)."""
    import sysconfig

    env = {k: v for k, v in os.environ.items() if not k.startswith(("S3SPILL_", "PYTHON"))}
    env.update(PYTHONPATH=os.pathsep.join((str(ROOT), sysconfig.get_path("purelib"))),
               S3SPILL_STORE=str(tmp_path / "store"), S3SPILL_SESSION=session,
               XDG_CONFIG_HOME=str(tmp_path / "none"))
    return env


@pytest.fixture
def probe(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """``probe(args, stdin=b"")``: main(args) in a child; its code, printed text and modules."""

    def run(args: list[str], stdin: bytes = b"", **env: str) -> dict[str, Any]:
        proc = subprocess.run([sys.executable, "-c", PROBE, *args], input=stdin, capture_output=True,
                              env=cli_env(tmp_path, **env), check=True, timeout=60)
        printed, _, last = proc.stdout.decode().rpartition("\n\n")
        result: dict[str, Any] = json.loads(last)
        result["printed"] = printed
        result["heavy"] = [m for m in result["modules"]
                           if any(m == h or m.startswith(h + ".") for h in HEAVY)]
        return result

    return run


@pytest.fixture
def run_sh(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[bytes]]:
    """``run_sh(script, **env)``: ``python -m s3spill run -- sh -c SCRIPT`` in a child."""

    def run(script: str, **env: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "s3spill", "run", "--", "sh", "-c", script],
                              env=cli_env(tmp_path, **env), capture_output=True, timeout=60)

    return run


#: Set, it sends a read past the fast CLI path to the full one (any log level does).
FULL = "S3SPILL_LOG_LEVEL"


def full_path(cli: CliCall, monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, str, str]:
    """``cli(*argv)`` answered by the full path, to compare the fast path's answer with."""
    with monkeypatch.context() as m:
        m.setenv(FULL, "WARNING")
        return cli(*argv)
