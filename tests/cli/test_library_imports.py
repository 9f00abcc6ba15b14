"""What a command with a home imports of the library: what it uses, not the library's whole graph.

``s3spill.gc`` exports ``apply_cleanup`` and ``plan_cleanup`` lazily (PEP 562) and ``gc_cmds``
imports the apply side inside the command that applies, so ``gc plan`` never loads
``s3spill.gc.apply``; the Spiller imports the live layer in ``Spiller.start`` and the policy
reader tomlkit when it reads a file, so a ``spill`` with no policy file loads neither. The child
runs ``python -S`` as in :mod:`.test_parser_imports`, so the editable install's ``.pth`` cannot
import anything on its behalf.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import site_free_env

#: ``main(argv)``, then its exit code and the sorted names of every module it imported, on stderr.
PROBE = ("import sys\nfrom s3spill.cli import main\ncode = main(sys.argv[1:])\nsys.stdout.flush()\n"
         "sys.stderr.write('\\n'.join(['', '@modules', str(code), *sorted(sys.modules)]))")


def _run(tmp_path: Path, argv: list[str], stdin: bytes = b"") -> tuple[int, str, set[str]]:
    """``s3spill ARGV`` in a ``python -S`` child: its exit code, standard output and modules."""
    proc = subprocess.run([sys.executable, "-S", "-c", PROBE, *argv], input=stdin, capture_output=True,
                          env=site_free_env(tmp_path, "library"), timeout=60, check=True)
    exit_code, *modules = proc.stderr.decode().rpartition("\n@modules\n")[2].split("\n")
    return int(exit_code), proc.stdout.decode(), set(modules)


def test_a_gc_plan_imports_no_apply_side(tmp_path: Path) -> None:
    """``gc plan`` of a local store writes its plan and imports neither ``gc.apply`` nor its helpers."""
    (tmp_path / "store").mkdir()
    code, out, modules = _run(tmp_path, ["gc", "plan", "--json", "--out", str(tmp_path / "plan.jsonl")])
    assert code == 0 and '"apply_with"' in out and (tmp_path / "plan.jsonl").stat().st_size > 0
    assert {"s3spill.gc", "s3spill.gc.plan"} <= modules
    apply_side = {"s3spill.gc.apply", "s3spill.gc.apply_session", "s3spill.gc.delete"}
    assert not apply_side & modules, apply_side & modules


def test_the_gc_package_still_exports_both_entry_points() -> None:
    """``from s3spill.gc import apply_cleanup, plan_cleanup`` gives the functions their modules define."""
    from s3spill.gc import apply_cleanup, plan_cleanup
    from s3spill.gc.apply import apply_cleanup as applier
    from s3spill.gc.plan import plan_cleanup as planner

    assert (apply_cleanup, plan_cleanup) == (applier, planner)


def test_a_small_spill_without_a_policy_file_imports_no_tomlkit_nor_live_layer(tmp_path: Path) -> None:
    """``spill`` of a few bytes with no policy file stores them and imports no tomlkit nor ``live``."""
    code, out, modules = _run(tmp_path, ["spill"], stdin=b"a few bytes\n")
    assert code == 0 and out.startswith("artifact:"), out
    assert {"s3spill.spill.spiller", "s3spill.fleet.policy_file"} <= modules
    unneeded = {m for m in modules if m.split(".")[0] == "tomlkit" or m.startswith("s3spill.live")}
    assert not unneeded | ({"s3spill.fleet.policy_toml"} & modules), unneeded


def test_a_spill_with_a_broken_policy_file_still_reads_it(tmp_path: Path) -> None:
    """A policy file that is not TOML still stops ``spill`` with its file and line (tomlkit read late)."""
    policy = tmp_path / "policy.toml"
    policy.write_text("[spill]\nmax_stored_bytes = = 1\n", encoding="utf-8")
    env = {**site_free_env(tmp_path, "library"), "S3SPILL_CONFIG": str(policy)}
    proc = subprocess.run([sys.executable, "-S", "-m", "s3spill", "spill"], input=b"x\n", capture_output=True,
                          env=env, timeout=60)
    assert proc.returncode != 0 and f"{policy}:2:" in proc.stderr.decode(), proc.stderr
