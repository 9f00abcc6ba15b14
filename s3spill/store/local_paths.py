"""Directory helpers of the local store: creating key directories 0700, walking keys in order.

Split from :mod:`s3spill.store.local` to keep that module to the store's operations;
both are pure filesystem walks with no lock, trailer or record in them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def make_dirs(path: Path) -> None:
    """``mkdir -p`` where every directory created is 0700; existing ones are left as they are."""
    missing: list[Path] = []
    current = path
    while not current.exists() and not current.is_symlink():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it first
            os.mkdir(directory, 0o700)


def _names(base: Path, rel: str) -> list[str] | None:
    """The entries of ``base/rel`` sorted as keys sort (a subdirectory with ``/`` appended)."""
    try:
        with os.scandir(base / rel if rel else base) as it:
            return sorted((e.name + "/" if e.is_dir(follow_symlinks=False) else e.name) for e in it)
    except (FileNotFoundError, NotADirectoryError):
        return None


def walk_keys(base: Path, rel: str, prefix: str, start_after: str | None) -> Iterator[str]:
    """Keys under ``base/rel`` in key order (as S3 lists them), pruned by prefix and start.

    Why not ``os.walk``: it yields a directory's files before its subdirectories', so a
    file ``a0`` came before ``a/x`` although ``"a/x" < "a0"``. Sorting each directory's
    entries by name, with ``/`` appended to subdirectories, gives the byte order of the
    whole keys. A subdirectory is skipped when every key in it sorts at or before
    ``start_after`` (``start_after`` is past it, not inside it) or none can carry the prefix.
    One generator with a stack of open directories (not one generator per level, which
    passed every key up through each level: GC lists every object of a store).
    """
    names = _names(base, rel)
    if names is None:
        return
    stack: list[tuple[str, Iterator[str]]] = [(rel, iter(names))]
    while stack:
        rel, entries = stack[-1]
        for name in entries:
            key = rel + name
            if name.endswith("/"):
                if not (key.startswith(prefix) or prefix.startswith(key)):
                    continue
                if start_after is not None and start_after > key and not start_after.startswith(key):
                    continue
                below = _names(base, key)
                if below is not None:
                    stack.append((key, iter(below)))
                    break  # on into the subdirectory; this one resumes where it stopped
            elif key.startswith(prefix) and (start_after is None or key > start_after):
                yield key
        else:
            stack.pop()
