"""`s3spill.testing` as a package: a complete, sorted `__all__`; a server without the fault helpers."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import s3spill.testing as testing
from s3spill.testing.server import child_env
from tests.sources import python_files

ROOT = Path(__file__).resolve().parents[2]
FAULT_MODULES = {"s3spill.testing.http_faults", "s3spill.testing.fault_stores"}


def _imported_from_testing() -> set[str]:
    """Every name any module of the repository imports with `from s3spill.testing import ...`."""
    names: set[str] = set()
    for folder in ("s3spill", "tests", "benchmarks", "examples"):
        for path in python_files(folder):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "s3spill.testing":
                    names.update(alias.name for alias in node.names)
    return names


def test_all_is_sorted_and_lists_every_name_in_use() -> None:
    """`__all__` is sorted (constants first, as ruff sorts) and names every name imported from the package."""
    names = list(testing.__all__)
    assert names == sorted(set(names), key=lambda n: (not n.isupper(), n))
    used = _imported_from_testing()
    assert {"ConditionIgnoringStore", "FAKE_CREDENTIALS", "serve"} <= set(names) and "FaultyStore" in used
    assert used - set(names) == set()


def test_every_exported_name_resolves_to_its_module() -> None:
    """Each exported name loads from the module the package names, and the type checker sees it too."""
    source = Path(testing.__file__).read_text(encoding="utf-8")
    checked = {alias.asname for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.ImportFrom) for alias in node.names if alias.asname}
    assert checked == set(testing.__all__) == set(testing._HOME)
    for name in testing.__all__:
        home = sys.modules[f"s3spill.testing.{testing._HOME[name]}"] if hasattr(testing, name) else None
        assert home is not None and getattr(home, name) is getattr(testing, name)


def test_production_commands_load_the_server_without_the_fault_helpers() -> None:
    """`s3spill demo` and `serve-s3` import the embedded server; no fault-injection module comes with it."""
    code = (
        "import json, sys\n"
        "import s3spill.cli.demo_cmds, s3spill.demo.runner\n"
        "from s3spill.testing import FAKE_CREDENTIALS, EmbeddedS3, serve\n"
        "from s3spill.testing.server import EmbeddedS3, serve\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('s3spill.testing'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True,
                         check=True, timeout=120).stdout
    loaded = set(json.loads(out))
    assert "s3spill.testing.server" in loaded
    assert loaded & FAULT_MODULES == set()
