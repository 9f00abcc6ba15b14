"""Shared setup of the adapter tests: each test's usage batches are written when it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from s3spill.usage.recorder import close_all


@pytest.fixture(autouse=True)
def _usage_written_at_teardown() -> Iterator[None]:
    """An adapter's session batches usage events for up to 30 s in a thread; they are written
    (or reported lost) in this test's teardown, as at a process's exit, not during a later
    test: a down store's ``usage.lost`` warning, logged 30 s on, once landed in the captured
    stderr of an unrelated CLI test that asserts it (test_server's stdio walk)."""
    yield
    close_all()
