"""The guarantees a backend claims, as one plain record.

Why apart from :mod:`s3spill.store.capabilities` (the probes' pydantic reports): every
backend's ``capabilities()`` returns it, so :mod:`s3spill.store.base` needs it, and
``base`` is imported by :mod:`s3spill.keys` and so by every command; a read that never
probes a store should not import pydantic for it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StoreCapabilities"]


@dataclass(frozen=True)
class StoreCapabilities:
    """Guarantees a backend claims; ``s3spill doctor`` verifies them against the real store."""

    conditional_create: bool = True
    conditional_put: bool = True
    conditional_delete: bool = True
    versioned_delete: bool = False
    batch_conditional_delete: bool = False
    verifies_sha256_on_put: bool = False
    versioning: bool = False
