"""A package's C extension loaded without the package's ``__init__``, as its own import loads it.

Why: a page read is a process of its own (issue 35), and two packages it needs spend most
of their import time in ``__init__`` code a read never uses: zstandard chooses a backend
and re-exports it (:mod:`s3spill.artifacts.zstd_light`), re2 builds ``re``-like wrappers
(:mod:`s3spill.context.secrets.re2_light`). Both callers need only the extension, loaded
under its own name in ``sys.modules`` so that a later ``import`` of the package reuses it.

The load holds the import system's own lock for that name, so two threads (the proxy spills
on several) or a thread and a plain ``import`` never load the extension twice: pybind11
refuses a second load ("type ... is already registered").
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["load_alone"]


def load_alone(package: str, name: str) -> ModuleType | None:
    """``name`` (a C extension inside ``package``) loaded alone, or the one loaded already;
    None when ``package`` itself is imported or the extension cannot be found: import it.

    With the import system's own halves (``_frozen_importlib``, ``_frozen_importlib_external``:
    CPython loads them at every start; elsewhere None): they define the very ``PathFinder``,
    ``ExtensionFileLoader``, ``module_from_spec`` and module lock that ``importlib.machinery``,
    ``importlib.util`` and ``importlib._bootstrap`` export, where importing those loads the
    ``importlib`` package, ``warnings`` and ``contextlib`` (~1.5 ms of a page read's process;
    tests/test_extension_alone.py checks they are the same objects)."""
    try:
        import _frozen_importlib as bootstrap
        import _frozen_importlib_external as external
    except ImportError:
        return None
    with bootstrap._ModuleLockManager(name):  # type: ignore[attr-defined]  # ``import``'s lock for it
        if package in sys.modules:
            return None
        found = sys.modules.get(name)
        if found is not None:
            return found
        spec = external.PathFinder.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            return None
        ext = external.PathFinder.find_spec(name, list(spec.submodule_search_locations))
        if ext is None or not isinstance(ext.loader, external.ExtensionFileLoader):
            return None
        module = bootstrap.module_from_spec(ext)
        ext.loader.exec_module(module)
        sys.modules[name] = module
        return module
