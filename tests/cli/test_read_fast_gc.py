"""The fast read runs with the cyclic garbage collector off: it leaves no cycle, and the state is restored."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from s3spill.cli import main
from s3spill.store.local import LocalStore
from tests.cli.conftest import site_free_env
from tests.cli.read_outputs import SESSION, write_artifacts

#: In a fresh ``python -S`` child: collect, turn the collector off, run the command's main(), then
#: count what a collection finds unreachable (the cyclic garbage the collector off let stay).
CHILD = ("import gc, json, sys\nfrom s3spill.cli import main\ngc.collect()\ngc.disable()\n"
         "code = main(sys.argv[1:])\nsys.stdout.flush()\n"
         "sys.stderr.write(json.dumps({'code': code, 'garbage': gc.collect(), 'enabled': gc.isenabled(),"
         " 'full': 'argparse' in sys.modules}))")


def _child(tmp_path: Path, *argv: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-S", "-c", CHILD, *argv], env=site_free_env(tmp_path, SESSION),
                         capture_output=True, text=True, check=True, timeout=120)
    result: dict[str, object] = json.loads(out.stderr.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("argv", [
    ("read", "--offset", "2995", "--limit", "20"),
    ("read", "--offset", "1190", "--limit", "30", "--show-secrets"),
    ("read", "--offset", "1499", "--limit", "3", "--max-chars", "1200", "--show-secrets"),
    ("grep", "status=500", "--max-matches", "5", "--show-secrets"),
    ("grep", "no such thing", "--show-secrets")])
def test_a_fast_read_leaves_no_cycle_for_the_collector(tmp_path: Path, argv: tuple[str, ...]) -> None:
    """Pages and greps the fast path answers (masked and not), each in a fresh process as the
    command runs them, leave nothing a collection would free: with the collector off they keep
    no more memory than with it on."""
    ids = write_artifacts(LocalStore(tmp_path / "store"))
    fast = _child(tmp_path, argv[0], ids["log"], *argv[1:])
    code = 1 if "no such thing" in argv else 0  # grep: 1 when nothing matched
    assert fast == {"code": code, "garbage": 0, "enabled": False, "full": False}, argv


def test_the_full_path_makes_cycles_and_the_child_probe_sees_them(tmp_path: Path) -> None:
    """The probe above can see cycles: a read the full path answers (--json) leaves some, and
    ran with the collector as its caller left it (off, here)."""
    ids = write_artifacts(LocalStore(tmp_path / "store"))
    full = _child(tmp_path, "read", ids["log"], "--offset", "1190", "--limit", "30", "--json")
    assert full["code"] == 0 and full["full"] is True and full["enabled"] is False
    assert isinstance(full["garbage"], int) and full["garbage"] > 0


def test_the_collectors_state_is_the_callers_after_a_read(local: LocalStore,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """main() in a program that calls it: the collector is on again after a fast read, a full-path
    read and a refused one, and stays off for a caller that had turned it off."""
    ids = write_artifacts(local)
    calls = [["read", ids["log"], "--offset", "2995", "--limit", "20"],
             ["read", ids["log"], "--offset", "1190", "--limit", "30", "--json"],
             ["grep", ids["log"], "status=500", "--max-matches", "5"],
             ["read", ids["log"], "--offset", "99999"]]
    assert gc.isenabled()
    try:
        for before in (True, False):
            (gc.enable if before else gc.disable)()
            for argv in calls:
                main(argv)
                assert gc.isenabled() is before, (before, argv)
    finally:
        gc.enable()
    out = capsys.readouterr().out
    assert "[more lines follow" in out or "[EOF" in out
