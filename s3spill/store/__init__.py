"""Object stores: one interface (:mod:`.base`), an S3 backend and a local-directory backend.

The transfer settings (:class:`~s3spill.config.TransferConfig`, a pydantic model) load
only when a store is opened with a KMS key to add: this package is imported by
:mod:`s3spill.keys` (through :mod:`.base`), so by every command.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from s3spill.errors import ConfigError
from s3spill.store.base import ObjectInfo, ObjectStore, PutResult, StoreCapabilities

if TYPE_CHECKING:
    from s3spill.config import TransferConfig

__all__ = [
    "ObjectInfo",
    "ObjectStore",
    "PutResult",
    "StoreCapabilities",
    "default_store_url",
    "open_store",
]


def default_store_url() -> str:
    """``$S3SPILL_STORE``, else a per-user state directory (the embedded default)."""
    env = os.environ.get("S3SPILL_STORE")
    if env:
        return env
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base, "s3spill", "store").absolute().as_uri()


def open_store(url: str | None = None, config: TransferConfig | None = None, *,
               create: bool = True) -> ObjectStore:
    """Open ``s3://bucket/prefix`` or ``file:///path`` (default: :func:`default_store_url`).

    ``create=False`` is a reader's open: a local store that does not exist is refused
    (:class:`~s3spill.errors.StoreNotFound`), never made (S3 buckets are never created).
    """
    url = url or default_store_url()
    if url.startswith("s3://"):
        import importlib

        # Imported lazily: boto3 costs ~100 ms at import and local users never need it.
        s3_module = importlib.import_module("s3spill.store.s3.store")
        kms = os.environ.get("S3SPILL_KMS_KEY_ID")
        if kms and (config is None or config.sse_kms_key_id is None):
            from s3spill.config import TransferConfig

            config = (config or TransferConfig()).model_copy(update={"sse_kms_key_id": kms})
        store: ObjectStore = s3_module.S3Store.from_url(url, config=config)
        return store
    if url.startswith("file://") or url.startswith("/"):
        from s3spill.store.local import LocalStore

        return LocalStore.from_url(url, config=config, create=create)
    raise ConfigError(f"unsupported store URL {url!r}: use s3://bucket/prefix or file:///path")
