"""What the adapter tests share: a build log too large for the context, and how to check a pointer.

Every adapter test drives its framework's real agent loop with the framework's own fake
model (no network, no key): the model calls ``build``, receives a pointer instead of the
2 MB log, greps the stored output for the error through the pointer's source id, reads
around it, and tries another session's id, which must come back as a one-line tool error.
"""

from __future__ import annotations

import re

from s3spill.artifacts.store import ArtifactStore
from s3spill.store import ObjectStore

SESSION = "adapter-session"
OTHER = "someone-else"
#: ~2.2 MB: over every default threshold; the error line sits in the omitted middle.
BUILD_LOG = ("".join(f"[{i:05d}] compiling module_{i}.c ... ok\n" for i in range(30_000))
             .replace("[15000] compiling module_15000.c ... ok",
                      "[15000] ERROR module_15000.c:7: undefined reference to `frob'"))
ERROR_LINE = 15_001  # 1-based


def source_id_of(text: str) -> str:
    m = re.search(r'stored as source_id="([^"]+)"', text)
    assert m is not None, text[-500:]
    return m.group(1)


def called_tools(pointer: str) -> list[str]:
    """The tool names a pointer tells the model to call."""
    return re.findall(r"([\w.-]+)\(source_id", pointer)


def stored_text(store: ObjectStore, source_id: str, session: str = SESSION) -> str:
    """The stored artifact's verified content."""
    arts = ArtifactStore(store, session_id=session)
    return b"".join(arts.iter_verified(source_id)).decode()


def foreign_source_id(store: ObjectStore) -> str:
    return ArtifactStore(store, session_id=OTHER).write(OTHER, b"secret\n", "bash").source_id
