"""What building the whole parser imports: help and usage errors load no library behind a command.

``s3spill --help``, ``s3spill`` alone, a usage error and a command without a home in
:data:`~s3spill.cli.parser.COMMAND_HOMES` build every sub-command's parser; each module that
registers flags imports its command's library only when that command runs
(:func:`~s3spill.cli.parser.deferred`, imports inside the command), so none of these pays
for pydantic, boto3, GC, the live layer, the lease journal or the Spiller (~0.6 s of CPU
on the development VM before). The child runs ``python -S`` as in :mod:`.test_fast_imports`,
so the editable install's ``.pth`` cannot import anything on its behalf.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import site_free_env

#: Packages and modules no help text or usage error needs (a prefix covers its sub-modules).
LIBRARY = ("pydantic", "boto3", "botocore", "structlog", "s3spill.config", "s3spill.gc", "s3spill.live",
           "s3spill.leases", "s3spill.spill.spiller", "s3spill.context.policy", "s3spill.fleet",
           "s3spill.artifacts", "s3spill.cli.gc_cmds", "s3spill.cli.failures")
#: ``main(argv)``, a ``SystemExit`` (argparse's help and usage errors) taken as its exit code.
PROBE = ("import sys\nfrom s3spill.cli import main\ntry:\n    code = main(sys.argv[1:])\n"
         "except SystemExit as exc:\n    code = exc.code\nsys.stdout.flush()\n"
         "sys.stderr.write('\\n'.join(['', '@modules', str(code), *sorted(sys.modules)]))")


def _loaded(modules: set[str]) -> set[str]:
    """The modules of ``modules`` that are (or are inside) one of :data:`LIBRARY`."""
    return {m for m in modules if any(m == lib or m.startswith(lib + ".") for lib in LIBRARY)}


@pytest.mark.parametrize(("argv", "code", "said"), [
    (["--help"], 0, "garbage-collect unreferenced artifacts"),
    ([], 0, "garbage-collect unreferenced artifacts"),
    (["gc", "plan", "--help"], 0, "--max-deletions"),
    (["status"], 2, "the following arguments are required: LIVE_ID"),
    (["gc", "plan", "--max-deletions", "-1"], 2, "--max-deletions"),
    (["no-such-command"], 2, "invalid choice"),
])
def test_help_and_usage_errors_load_no_library(tmp_path: Path, argv: list[str], code: int, said: str) -> None:
    """Help (of all, of a command) and usage errors answer as always and import none of the library."""
    proc = subprocess.run([sys.executable, "-S", "-c", PROBE, *argv], capture_output=True,
                          env=site_free_env(tmp_path, "parser"), timeout=60, check=True)
    text, _, report = proc.stderr.decode().rpartition("\n@modules\n")
    exit_code, *modules = report.split("\n")
    assert int(exit_code) == code and said in proc.stdout.decode() + text, (proc.stdout, text)
    assert "s3spill.cli.parser" in modules  # the whole parser was built, not a fast path's answer
    assert not _loaded(set(modules)), _loaded(set(modules))


def test_a_gc_plan_loads_gc_but_not_the_live_layer_nor_the_spiller(tmp_path: Path) -> None:
    """``gc plan`` of an empty local store imports GC (it needs it), not boto3 nor others' libraries."""
    (tmp_path / "store").mkdir()
    proc = subprocess.run([sys.executable, "-S", "-c", PROBE, "gc", "plan", "--json", "--out",
                           str(tmp_path / "plan.jsonl")], capture_output=True,
                          env=site_free_env(tmp_path, "parser"), timeout=60, check=True)
    exit_code, *modules = proc.stderr.decode().rpartition("\n@modules\n")[2].split("\n")
    assert int(exit_code) == 0 and '"apply_with"' in proc.stdout.decode()
    assert {"s3spill.gc.plan", "s3spill.cli.gc_cmds"} <= set(modules)
    others = {"s3spill.live.supervisor", "s3spill.spill.spiller", "s3spill.leases.reconcile", "boto3"}
    assert not others & set(modules), others & set(modules)
