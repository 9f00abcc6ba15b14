"""The Spiller: what an agent harness calls after every tool call.

``spiller`` is the public facade; ``job`` handles one text output and ``blocks`` one
text-and-image result, both through the small :class:`~s3spill.spill.sink.SpillSink`
(store a stream within the deadline, then mark the session alive), so neither needs the
Spiller itself. ``source`` normalises outputs; ``upload`` bounds a blocking store call;
``maskworker`` masks an ``at_rest`` stream in a second process.

Names are imported on first use (PEP 562): the mask worker's process imports
:mod:`s3spill.spill.maskworker` alone, not the Spiller (~0.35 s).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from s3spill.spill.spiller import Spiller as Spiller
    from s3spill.spill.spiller import SpillResult as SpillResult

__all__ = ["SpillResult", "Spiller"]


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module 's3spill.spill' has no attribute {name!r}")
    value = getattr(importlib.import_module("s3spill.spill.spiller"), name)
    globals()[name] = value
    return value
