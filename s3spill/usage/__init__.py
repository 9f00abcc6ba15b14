"""Usage records: what each tool call stored and what the model was shown, for ``stats`` and ``ui``.

Why a package of its own: the spill and read paths only *append* small events here
(:mod:`s3spill.usage.recorder`, fail open, off the caller's path); everything that reads
them — ``s3spill stats`` on DuckDB (:mod:`s3spill.usage.stats`), the compaction into day
files (:mod:`s3spill.usage.compact`), the web view — is built on the same objects, which
sit under each session's prefix (``usage/dt=YYYY-MM-DD/``) so GC and purge remove them
with the session. See docs/usage.md.
"""

from s3spill.usage.events import UsageEvent, grep_event, read_event, spill_event
from s3spill.usage.recorder import UsageRecorder, UsageSink, usage_recorder

__all__ = ["UsageEvent", "UsageRecorder", "UsageSink", "grep_event", "read_event", "spill_event",
           "usage_recorder"]
