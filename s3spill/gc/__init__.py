"""Garbage collection: a read-only plan, then an apply that fences, revalidates and deletes.

``plan`` lists and classifies (never writes an artifact); ``doc`` is the plan file;
``models`` its policy, scope and report; ``fence`` is the condemnation in each session's
journal; ``apply`` revalidates and deletes with ``If-Match``; ``metered`` counts requests.

The two names are imported lazily (PEP 562, as :mod:`s3spill` does): a plan
(``s3spill gc plan``) never imports the apply side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from s3spill.gc.apply import apply_cleanup as apply_cleanup
    from s3spill.gc.plan import plan_cleanup as plan_cleanup

__all__ = ["apply_cleanup", "plan_cleanup"]

#: Each lazily exported name -> the module that defines it.
_HOMES = {"apply_cleanup": "s3spill.gc.apply", "plan_cleanup": "s3spill.gc.plan"}


def __getattr__(name: str) -> Any:
    """``apply_cleanup`` / ``plan_cleanup``, imported from their module on first use."""
    from s3spill.lazy_exports import load

    return load(globals(), _HOMES, name)


def __dir__() -> list[str]:
    """The module's names, the lazy ones included."""
    return sorted({*globals(), *__all__})
