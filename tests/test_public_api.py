"""The public API surface: a sorted headline built from one list, every error included, imported lazily."""

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import s3spill
import s3spill.context
import s3spill.errors

INIT = Path(s3spill.__file__)

#: Names that left the top level in issue 20, and the subpackage that still exports them.
MOVED: dict[str, str] = {
    "ArtifactIndex": "s3spill.artifacts.index",
    "GrepMatch": "s3spill.artifacts.grep.result",
    "GrepResult": "s3spill.artifacts.grep.result",
    "ObjectInfo": "s3spill.store",
    "OwnerObservation": "s3spill.leases.owner",
    "Page": "s3spill.artifacts.paging",
    "PageLine": "s3spill.artifacts.paging",
    "PutResult": "s3spill.store",
    "ReconciliationReport": "s3spill.leases.reconcile",
    "StoreCapabilities": "s3spill.store",
    "reconcile_pending": "s3spill.leases.reconcile",
    "reconcile_reference": "s3spill.leases.reconcile",
    **{name: "s3spill.errors" for name, obj in vars(s3spill.errors).items()
       if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == "s3spill.errors"
       and name not in s3spill.__all__},
    "LiveReader": "s3spill.live.reader",
    **{name: "s3spill.context" for name in s3spill.context.__all__
       if name not in ("SpillPolicy", "ToolPolicy", "TurnResult")},
}


def test_all_is_sorted_and_unique() -> None:
    """`__all__` is kept sorted so additions are reviewed in one obvious place."""
    assert list(s3spill.__all__) == sorted(set(s3spill.__all__))


def test_all_is_a_headline() -> None:
    """The top level stays a headline (tens of names), not every public name of every subpackage."""
    assert 30 <= len(s3spill.__all__) <= 45
    assert {"Spiller", "AgentTools", "AsyncAgentTools", "AsyncSpiller", "ArtifactStore", "LeaseJournal",
            "open_store", "plan_cleanup", "apply_cleanup", "TransferConfig"} <= set(s3spill.__all__)


def test_every_exported_name_exists() -> None:
    """Every name in `__all__` resolves on the package, to the object its module defines."""
    missing = [name for name in s3spill.__all__ if not hasattr(s3spill, name)]
    assert missing == []
    for name, module in s3spill._read_exports().items():
        assert getattr(s3spill, name) is getattr(importlib.import_module(module), name), name


def test_the_root_error_and_the_common_families_are_on_the_top_level() -> None:
    """A harness catches the root and the families it meets most without a second import."""
    defined = {name for name, obj in vars(s3spill.errors).items() if inspect.isclass(obj)
               and issubclass(obj, BaseException) and obj.__module__ == "s3spill.errors"}
    assert {"ArtifactExpired", "GcRunLocked", "GcLockLost"} <= defined
    on_top = {n for n in s3spill.__all__ if n in defined}
    assert {"S3SpillError", "StoreError", "NotFound", "InvalidRequest", "ConfigError"} <= on_top


def test_every_exported_error_derives_from_the_root() -> None:
    """All exported exception classes share the S3SpillError root."""
    errors = [getattr(s3spill, n) for n in s3spill.__all__ if isinstance(getattr(s3spill, n), type)]
    excs = [e for e in errors if issubclass(e, BaseException)]
    assert excs and all(issubclass(e, s3spill.S3SpillError) for e in excs)


def test_type_checking_imports_agree_with_the_one_list() -> None:
    """The imports type checkers read are exactly the exports, from the same modules, as `X as X`."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    seen: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            assert alias.asname == alias.name, alias.name
            seen[alias.name] = node.module
    assert seen == s3spill._read_exports()
    assert sorted(seen) == list(s3spill.__all__)


def test_names_moved_off_the_top_level_are_importable_from_their_subpackage() -> None:
    """Whatever left the headline is still public one level down, and no longer on the top level."""
    unreachable = [name for name, home in MOVED.items()
                   if not hasattr(importlib.import_module(home), name)
                   or name not in getattr(importlib.import_module(home), "__all__", [name])]
    assert unreachable == []
    assert sorted(set(MOVED) & set(s3spill.__all__)) == []


def test_context_all_is_sorted() -> None:
    """The context helpers keep their own sorted `__all__`, and every name in it resolves."""
    names = list(s3spill.context.__all__)
    assert names == sorted(set(names))
    assert [n for n in names if not hasattr(s3spill.context, n)] == []


def test_import_is_lazy() -> None:
    """`import s3spill` loads no boto3, pydantic or submodule until a name is used."""
    code = ("import sys, s3spill; roots = ('boto3', 'botocore', 'pydantic', 's3spill'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in roots))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=INIT.parents[1]).stdout
    assert ast.literal_eval(out) == ["s3spill"]


def test_the_version_loads_on_first_use() -> None:
    """`s3spill.__version__` is the package's version, read, imported by name and listed by `dir`,
    though `import s3spill` alone no longer loads its module."""
    from s3spill import __version__
    from s3spill._version import __version__ as defined

    assert __version__ == s3spill.__version__ == defined and "__version__" in dir(s3spill)
