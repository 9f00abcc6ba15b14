"""A store with what the web view shows: a scripted run (a planted secret), a kept GC plan, a purge."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.fleet.purge import purge_session
from s3spill.gc.models import CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.gc.planfile import save_plan_to_store
from s3spill.store.local import LocalStore
from s3spill.ui.data import session_events
from s3spill.usage.recorder import UsageRecorder
from tests.usage.conftest import SECRET, SESSION, scripted_run

__all__ = ["SECRET", "Populated"]


@dataclass
class Populated:
    store: LocalStore
    shash: str
    source_id: str
    plan_id: str
    purged: str


def populate(root: Path, calls: int = 24) -> Populated:
    """The store of a short agent run, then a plan kept in the store and a purged session."""
    store = LocalStore(root)
    rec = UsageRecorder(store, batch=False)
    scripted_run(store, rec, calls=calls)
    scripted_run(store, rec, session="to-be-purged", calls=6)
    purge_session(store, "to-be-purged", requested_by="ui-test", reason="user request", confirm=True)
    plan = plan_cleanup(store, CleanupScope(), out=root.parent / "plan.jsonl")
    save_plan_to_store(store, plan)
    plan_id = plan.plan_id
    shash = keys.session_hash(SESSION)
    spills = [e for e in session_events(store, shash) if e["op"] == "spill" and e["tool"] == "build"]
    return Populated(store, shash, spills[0]["source_id"], plan_id, keys.session_hash("to-be-purged"))


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Populated:
    """One populated store per test module: the web view only reads, so its tests share it."""
    return populate(tmp_path_factory.mktemp("ui") / "store")
