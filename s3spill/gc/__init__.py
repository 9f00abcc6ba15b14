"""Garbage collection: a read-only plan, then an apply that fences, revalidates and deletes.

``plan`` lists and classifies (never writes an artifact); ``doc`` is the plan file;
``models`` its policy, scope and report; ``fence`` is the condemnation in each session's
journal; ``apply`` revalidates and deletes with ``If-Match``; ``metered`` counts requests.
"""

from s3spill.gc.apply import apply_cleanup
from s3spill.gc.plan import plan_cleanup

__all__ = ["apply_cleanup", "plan_cleanup"]
