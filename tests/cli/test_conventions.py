"""CLI conventions: --version, global flags anywhere, FILE/-, settings from the environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from s3spill import __version__, keys
from s3spill.cli import FLAG_ONLY, build_parser, settings_table
from s3spill.leases.journal import LeaseJournal
from s3spill.store.local import LocalStore

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None,
        stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "s3spill", *args], input=stdin.decode(), env=full,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_version_and_bare_invocation() -> None:
    """`--version` prints the package version; bare `s3spill` prints help and exits 0."""
    assert cli("--version").stdout.strip() == f"s3spill {__version__}"
    bare = cli()
    assert bare.returncode == 0 and "usage: s3spill" in bare.stdout


def test_global_flags_are_accepted_after_the_subcommand(tmp_path: Path) -> None:
    """`spill --store URL --session S --debug` works as if the flags came first."""
    url = f"file://{tmp_path}/s"
    proc = cli("spill", "--store", url, "--session", "s1", "--debug", "--tool", "make", stdin=b"x\n")
    assert proc.returncode == 0, proc.stderr
    sid = keys.SourceId.parse(proc.stdout.splitlines()[0])
    assert sid.session_hash == keys.session_hash("s1")
    assert '"level": "debug"' in proc.stderr


def test_spill_takes_a_file_or_dash_and_marks_the_session_active(tmp_path: Path) -> None:
    """FILE and `-` store the same bytes, and the session's journal records activity."""
    data = tmp_path / "out.txt"
    data.write_bytes(b"line one\nline two\n")
    env = {"S3SPILL_STORE": f"file://{tmp_path}/s", "S3SPILL_SESSION": "s2"}
    from_file = cli("spill", str(data), env=env)
    from_stdin = cli("spill", "-", env=env, stdin=data.read_bytes())
    assert from_file.returncode == 0 and from_stdin.returncode == 0, from_file.stderr + from_stdin.stderr
    assert from_file.stdout.splitlines()[2] == from_stdin.stdout.splitlines()[2]  # sha256 line
    view = LeaseJournal(LocalStore(tmp_path / "s"), "s2").view()
    assert view.last_active is not None


def test_settings_come_from_the_environment_and_are_checked_like_flags(tmp_path: Path) -> None:
    """S3SPILL_ORPHAN_TTL=P2D is accepted; S3SPILL_MAX_DELETIONS=-5 is the flag's usage error."""
    env = {"S3SPILL_STORE": f"file://{tmp_path}/s"}
    (tmp_path / "s").mkdir()  # gc only reads a store: it never creates one
    plan = tmp_path / "p.jsonl"
    ok = cli("gc", "plan", "--all", "--out", str(plan), env={**env, "S3SPILL_ORPHAN_TTL": "P2D"})
    assert ok.returncode == 0, ok.stderr
    assert '"orphan_ttl":"P2D"' in plan.read_text().replace(" ", "")
    bad = cli("gc", "plan", "--all", env={**env, "S3SPILL_MAX_DELETIONS": "-5"})
    assert bad.returncode == 2
    assert "--max-deletions" in bad.stderr and "Traceback" not in bad.stderr


def test_a_flag_on_the_command_line_beats_the_variable() -> None:
    """The environment sets defaults only."""
    args = build_parser({"S3SPILL_TOOL": "from-env"}).parse_args(["spill", "--tool", "flag"])
    assert args.tool == "flag"
    assert build_parser({"S3SPILL_TOOL": "from-env"}).parse_args(["spill"]).tool == "from-env"


@pytest.mark.parametrize("dest", sorted(FLAG_ONLY))
def test_dangerous_switches_ignore_the_environment(dest: str) -> None:
    """S3SPILL_APPLY=1 and friends do not turn a dry run into deletions."""
    name = "S3SPILL_" + dest.upper()
    parser = build_parser({name: "1"})
    for argv in (["gc", "run", "--all"], ["gc", "apply", "plan.jsonl"], ["mcp"]):
        args = parser.parse_args(argv)
        assert not getattr(args, dest, False), (name, argv)


def test_a_scope_flag_never_comes_from_the_environment() -> None:
    """A leftover S3SPILL_ALL cannot widen `gc plan --session X` to every session."""
    args = build_parser({"S3SPILL_ALL": "1"}).parse_args(["gc", "plan", "--session", "x"])
    assert not args.all and args.gc_session == "x"


def test_the_docs_list_every_setting() -> None:
    """docs/configuration.md's table is exactly the settings the parser has."""
    readme = (ROOT / "docs" / "configuration.md").read_text()
    row = r"^\| `(S3SPILL_[A-Z_]+)` \| `(--[a-z-]+)` \| (.+?) \|$"
    rows = {tuple(m) for m in re.findall(row, readme, re.M)}
    assert rows == set(settings_table())


def test_the_quick_version_is_what_the_parser_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """`s3spill --version` answers before the parser is built, with argparse's exact text."""
    from s3spill.cli import main

    assert main(["--version"]) == 0
    quick = capsys.readouterr().out
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    assert quick == capsys.readouterr().out == f"s3spill {__version__}\n"
