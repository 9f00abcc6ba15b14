"""The Spiller: what an agent harness calls after every tool call.

``spiller`` is the public facade; ``job`` handles one text output and ``blocks`` one
text-and-image result, both through the small :class:`~s3spill.spill.sink.SpillSink`
(store a stream within the deadline, then mark the session alive), so neither needs the
Spiller itself. ``source`` normalises outputs; ``upload`` bounds a blocking store call.
"""

from s3spill.spill.spiller import Spiller, SpillResult

__all__ = ["SpillResult", "Spiller"]
