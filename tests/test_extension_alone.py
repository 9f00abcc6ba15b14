"""A C extension loaded alone uses the import system's own finder, loader and lock."""

from __future__ import annotations

import _frozen_importlib
import _frozen_importlib_external
import importlib._bootstrap
import importlib.machinery
import importlib.util


def test_the_halves_it_takes_them_from_are_importlibs() -> None:
    """``_frozen_importlib`` and ``_frozen_importlib_external`` (loaded at every start) define the
    very ``PathFinder``, ``ExtensionFileLoader``, ``module_from_spec`` and module lock that
    ``importlib.machinery``, ``importlib.util`` and ``importlib._bootstrap`` export."""
    assert _frozen_importlib_external.PathFinder is importlib.machinery.PathFinder
    assert _frozen_importlib_external.ExtensionFileLoader is importlib.machinery.ExtensionFileLoader
    assert _frozen_importlib.module_from_spec is importlib.util.module_from_spec
    assert _frozen_importlib._ModuleLockManager is importlib._bootstrap._ModuleLockManager  # type: ignore[attr-defined]
