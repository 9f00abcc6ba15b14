"""A package's public names imported on first use (PEP 562), in one place for every package.

The packages re-export names from their modules without importing them at import time: a
hook, a read or a mask worker's process loads only what it touches. Each package keeps its
own table (name -> defining module) and its ``__getattr__`` hands the lookup here. Nothing is
imported at this module's import either (``importlib`` costs ~1 ms of a page read's process).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not imported from typing (~2 ms): the CLI fast paths import this module
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["load"]


def load(namespace: dict[str, Any], homes: Mapping[str, str], name: str) -> Any:
    """``name`` from the module ``homes`` names for it, kept in ``namespace`` (the package's
    globals) so the next lookup does not come here; AttributeError for a name not exported."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    namespace[name] = value
    return value
