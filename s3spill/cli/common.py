"""Helpers shared by sub-commands: resolving the store and the session from flags/env."""

from __future__ import annotations

import argparse
import os

from s3spill.errors import ConfigError
from s3spill.store import ObjectStore, open_store


def store_from_args(args: argparse.Namespace) -> ObjectStore:
    return open_store(getattr(args, "store", None))


def session_from_args(args: argparse.Namespace) -> str:
    session = getattr(args, "session", None) or os.environ.get("S3SPILL_SESSION")
    if not session:
        raise ConfigError("no session: pass --session ID or set S3SPILL_SESSION")
    return str(session)
