"""Store-level sub-commands (``doctor`` and ``demo`` are registered here until they grow)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Nothing yet: the S3 backend work adds ``doctor`` and ``demo``."""
