"""Shared fixtures: every backend behind one ``store`` fixture.

``store`` is parametrised over the backends so a test written once runs against each
(the local directory today; the S3 backend through moto joins the list when it lands).
Use ``local_store`` only for behaviour that is local by nature.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from s3spill.store import ObjectStore
from s3spill.store.local import LocalStore

BACKENDS = ["local"]


@pytest.fixture
def local_store(tmp_path: Path) -> Iterator[LocalStore]:
    store = LocalStore(tmp_path / "store")
    yield store
    store.close()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "local":
        s: ObjectStore = LocalStore(tmp_path / "store")
    else:  # pragma: no cover - extended by the S3 backend
        raise AssertionError(request.param)
    yield s
    s.close()
