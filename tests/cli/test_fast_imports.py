"""What the fast paths import, in a child that starts as a regular install's process does (issue 35).

The development venv's editable install runs a ``.pth`` in every process that imports
``re``, ``functools``, ``contextlib``, ``importlib.util`` and more before ``main``: in such a
child nothing could tell whether the fast path imports them too. So the child here runs
``python -S`` (no ``site``, no ``.pth``) with this checkout and the venv's site-packages on
``sys.path`` by hand, and reports ``sys.modules`` without importing anything to say it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from s3spill.artifacts.store import ArtifactStore
from s3spill.store.local import LocalStore
from tests.cli.conftest import site_free_env

#: Modules the read, grep and hook fast paths once imported and do not need: ``functools``
#: (and the ``collections`` and ``types`` it pulls in), ``re`` (and ``enum``), the
#: ``importlib`` package (and ``warnings``), ``importlib.util`` (and ``contextlib``).
REMOVED = frozenset({"functools", "collections", "collections.abc", "types", "operator", "re", "enum",
                     "importlib", "importlib.util", "importlib.machinery", "warnings", "contextlib"})
#: What a regular process does not import before ``main`` and a fast path must not import either.
HEAVY = frozenset({"typing", "dataclasses", "inspect", "json", "hashlib", "argparse", "logging", "pathlib",
                   "struct", "bisect", "datetime", "unicodedata", "re2", "zstandard", "orjson"})
#: Reports the modules of a child that ran ``main`` with nothing else imported.
PROBE = ("import sys\nfrom s3spill.cli import main\ncode = main(sys.argv[1:])\nsys.stdout.flush()\n"
         "sys.stderr.write('\\n'.join(['', '@modules', str(code), *sorted(sys.modules)]))")
TEXT = (b"one\ntwo status=200 path=/api/v1/items/00000014\n" * 200 + "caf\u00e9 \u4e2d\u6587\n".encode()
        + b"three ERROR\n" * 50)


def _child(tmp_path: Path, argv: list[str], stdin: bytes = b"") -> tuple[int, str, set[str]]:
    """``main(argv)`` in ``python -S`` with the checkout and the venv's site-packages on its path:
    (exit code, stdout, modules imported)."""
    proc = subprocess.run([sys.executable, "-S", "-c", PROBE, *argv], input=stdin, capture_output=True,
                          env=site_free_env(tmp_path, "fast"), timeout=60, check=True)
    code, *modules = proc.stderr.decode().rpartition("\n@modules\n")[2].split("\n")
    return int(code), proc.stdout.decode(), set(modules)


@pytest.fixture
def sid(tmp_path: Path) -> str:
    """An artifact of session ``fast`` whose text holds anchors (``=``, ``:``), non-ASCII UTF-8 and
    matches for a grep: the masked read asks RE2 (its binding loaded alone) and finds no secret."""
    store = ArtifactStore(LocalStore(tmp_path / "store"), session_id="fast")
    return store.write("fast", [TEXT], "t").source_id


def test_the_probe_sees_what_the_editable_finder_would_hide(tmp_path: Path) -> None:
    """The child starts without ``site``: none of the removed modules is loaded before ``main``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run([sys.executable, "-S", "-c", "import sys; print(*sorted(sys.modules))"],
                          capture_output=True, text=True, env=env, timeout=60, check=True)
    assert not (REMOVED | HEAVY) & set(proc.stdout.split())


@pytest.mark.parametrize("extra", [[], ["--show-secrets"], ["--offset", "350", "--limit", "100"]])
def test_a_fast_read_imports_none_of_them(tmp_path: Path, sid: str, extra: list[str]) -> None:
    """A page read, masked (RE2's sieve asked) or not, imports none of the removed modules."""
    code, out, modules = _child(tmp_path, ["read", sid, *extra])
    assert code == 0 and "two status=200" in out and "s3spill.cli.read_fast" in modules
    assert extra[:1] != ["--offset"] or "caf\u00e9 \u4e2d\u6587" in out
    assert "argparse" not in modules  # answered on the fast path
    assert not (REMOVED | HEAVY) & modules, (REMOVED | HEAVY) & modules
    assert ("re2._re2" in modules) is not (extra == ["--show-secrets"])  # the sieve's binding, alone
    assert "_datetime" not in modules  # the stored times checked, the usage event's stamped, without it


@pytest.mark.parametrize("extra", [[], ["--context", "2"], ["-i", "--show-secrets"]])
def test_a_fast_grep_imports_none_of_them(tmp_path: Path, sid: str, extra: list[str]) -> None:
    """A grep, with context lines or not, masked or not, imports none of the removed modules."""
    code, out, modules = _child(tmp_path, ["grep", sid, "error", *extra] if "-i" in extra
                                else ["grep", sid, "ERROR", *extra])
    assert code == 0 and "three ERROR" in out and "argparse" not in modules
    assert "_datetime" not in modules
    assert not (REMOVED | HEAVY) & modules, (REMOVED | HEAVY) & modules


def test_the_hook_pass_through_imports_none_of_them(tmp_path: Path) -> None:
    """A small PostToolUse payload: nothing to do, and nothing imported for it."""
    payload = b'{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": {"stdout": "hi"}}'
    code, out, modules = _child(tmp_path, ["hook", "claude-code"], payload)
    assert (code, out) == (0, "") and "s3spill.cli.fastpath" in modules and "argparse" not in modules
    assert not (REMOVED | HEAVY) & modules, (REMOVED | HEAVY) & modules
