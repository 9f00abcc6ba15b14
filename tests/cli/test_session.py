"""A CLI call that names no session works: the harness's session, else one per working directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from s3spill.cli.argtypes import directory_session
from s3spill.keys import SourceId, session_hash
from s3spill.testing import child_env


def _cli(cwd: Path, store: Path, *argv: str, extra: dict[str, str] | None = None,
         stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = child_env({"S3SPILL_STORE": store.as_uri(), **(extra or {})})
    for name in ("S3SPILL_SESSION", "CLAUDE_SESSION_ID", "CLAUDE_CODE_SESSION_ID"):
        if name not in (extra or {}):
            env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "s3spill", *argv], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_first_run_needs_no_session_and_a_later_read_finds_it(tmp_path: Path) -> None:
    """`s3spill run -- CMD` with no session set works, and `read` in the same directory reads it back."""
    work, store = tmp_path / "work", tmp_path / "store"
    work.mkdir()
    ran = _cli(work, store, "run", "--", "sh", "-c", "seq 1 100000")
    assert ran.returncode == 0, ran.stderr
    sid = ran.stdout.rsplit('source_id="', 1)[1].split('"', 1)[0]
    assert SourceId.parse(sid).session_hash == session_hash(directory_session(str(work)))
    page = _cli(work, store, "read", sid, "--offset", "49999", "--limit", "1")
    assert page.returncode == 0 and "50000\t50000" in page.stdout


def test_another_directory_is_another_session(tmp_path: Path) -> None:
    """An id stored from one directory is refused from another (its session differs), exit 2."""
    a, b, store = tmp_path / "a", tmp_path / "b", tmp_path / "store"
    a.mkdir()
    b.mkdir()
    sid = _cli(a, store, "spill", stdin="x\n" * 10).stdout.splitlines()[0]
    other = _cli(b, store, "read", sid)
    assert other.returncode == 2 and "SourceIdError" in other.stderr
    assert directory_session(str(a)) != directory_session(str(b))
    assert directory_session(str(a)) == directory_session(str(a / "." ))


def test_the_harness_session_variable_wins_over_the_directory(tmp_path: Path) -> None:
    """With $CLAUDE_SESSION_ID set, artifacts land in that session, whatever the directory."""
    work, store = tmp_path / "w", tmp_path / "store"
    work.mkdir()
    sid = _cli(work, store, "spill", extra={"CLAUDE_SESSION_ID": "claude-7"}, stdin="x\n").stdout
    assert SourceId.parse(sid.splitlines()[0]).session_hash == session_hash("claude-7")


def test_claude_codes_own_session_variable_is_the_harness_session(tmp_path: Path) -> None:
    """$CLAUDE_CODE_SESSION_ID (what Claude Code sets for Bash, hooks and MCP servers) is the
    session, so `s3spill read` from Claude's Bash finds what its hook stored."""
    work, store = tmp_path / "w", tmp_path / "store"
    work.mkdir()
    sid = _cli(work, store, "spill", extra={"CLAUDE_CODE_SESSION_ID": "9ecf22fa"}, stdin="x\n").stdout
    assert SourceId.parse(sid.splitlines()[0]).session_hash == session_hash("9ecf22fa")


def test_a_server_still_needs_an_explicit_session(tmp_path: Path) -> None:
    """`s3spill mcp` binds to a session only when one is named: one line, exit 2."""
    proc = _cli(tmp_path, tmp_path / "store", "mcp")
    assert proc.returncode == 2 and "no session" in proc.stderr
