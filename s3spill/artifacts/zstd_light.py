"""zstandard's C backend without the package's ``__init__``: what a read needs to decode a frame.

Why: ``import zstandard`` costs ~4.5 ms in a fresh process, and nearly all of it is not the
codec: its ``__init__`` imports ``platform`` and ``typing`` (for a type alias) to choose a
backend, then re-exports the C extension's names. On CPython with the default import
policy it always picks that extension (``from .backend_c import *``), which loads in
~0.4 ms on its own; a page read of a compressed artifact (issue 35: a process of its own,
and the first page call of a fresh process) needs only its decompressor.

So :func:`backend` loads ``zstandard.backend_c`` as the package would, under the same name
in ``sys.modules`` (a later ``import zstandard`` then reuses it: the same classes, the same
``ZstdError``). Anything else — the package already imported, another interpreter, a
``PYTHON_ZSTANDARD_IMPORT_POLICY`` other than the default, an install the path finder
cannot see into — imports the package as before.
"""

from __future__ import annotations

import os
import sys

from s3spill.extension_alone import load_alone

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

    import zstandard

__all__ = ["ZstdError", "backend", "decompress"]

_NAME = "zstandard.backend_c"


def backend() -> ModuleType:
    """The module holding ``ZstdDecompressor`` and ``ZstdError``: the package, or its C backend."""
    found = sys.modules.get("zstandard") or sys.modules.get(_NAME)
    if found is None and sys.implementation.name == "cpython" and os.environ.get(
            "PYTHON_ZSTANDARD_IMPORT_POLICY", "default").strip() in ("default", "cext"):
        found = load_alone("zstandard", _NAME)
    if found is not None:
        return found
    import zstandard

    return zstandard


def decompress(frame: bytes, max_output_size: int) -> bytes:
    """One zstd frame decoded (``ZstdError`` of :func:`backend` when it is not a valid one)."""
    decompressor: zstandard.ZstdDecompressor = backend().ZstdDecompressor()
    return decompressor.decompress(frame, max_output_size=max_output_size)


def ZstdError() -> type[Exception]:
    """The backend's error class (what :func:`decompress` raises for a damaged frame)."""
    error: type[Exception] = backend().ZstdError
    return error
