"""Crash windows of docs/design-notes.md ("Lease journal", "Owner reconciliation"), by SIGKILL
at named protocol steps in real processes.

Each case stops a child process at one failpoint (``sleep``: it announces the step and
blocks), checks from the outside that the artifact is protected right then, SIGKILLs
the child, recovers with a fresh journal, reconciles, and checks the terminal state.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from s3spill.errors import ArtifactPublicationRejected
from s3spill.failpoints import ENV_VAR, REACHED_MARKER
from s3spill.leases.journal import CondemnItem, LeaseJournal
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.leases.reconcile import reconcile_pending
from s3spill.leases.references import publish_memory_reference
from s3spill.models import ArtifactRetentionClaim
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import EmbeddedS3, child_env
from tests.conftest import TEST_BUCKET
from tests.leases.journal_artifacts import JCFG, SESSION, put_artifact

CHILD = str(Path(__file__).with_name("journal_child.py"))


@dataclass
class Backend:
    store: ObjectStore
    env: dict[str, str]


@pytest.fixture
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """``s3``: a prefix on the serialized moto server; ``local``: a fresh directory."""
    if request.param == "s3":
        server: EmbeddedS3 = request.getfixturevalue("moto_server")
        store = server.store(TEST_BUCKET, f"crash/{os.urandom(8).hex()}", JCFG)
        yield Backend(store, server.env())
    else:
        yield Backend(LocalStore(tmp_path / "store", JCFG), {})


def stop_at(backend: Backend, failpoint: str, *args: str) -> subprocess.Popen[str]:
    """Start the child and return once it is blocked at ``failpoint``."""
    env = child_env({**backend.env, ENV_VAR: f"{failpoint}=sleep"})
    proc = subprocess.Popen([sys.executable, CHILD, args[0], backend.store.url, SESSION, *args[1:]],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline, seen = time.monotonic() + 60, ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 1.0)
        if ready:
            line = proc.stderr.readline()
            seen += line
            if line.strip() == f"{REACHED_MARKER} {failpoint}":
                return proc
            if not line and proc.poll() is not None:
                break
    proc.kill()
    raise AssertionError(f"child never reached {failpoint}: {seen[-2000:]}")


def kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


def protected(store: ObjectStore, claim: ArtifactRetentionClaim) -> bool:
    """What GC would find: can the artifact be condemned right now? (Lifted again if so.)"""
    journal = LeaseJournal(store, SESSION, JCFG)
    verdict = journal.condemn_batch([CondemnItem(claim.source_id, claim.sha256)], "crash-probe")
    if verdict[claim.source_id] == "claimed":
        return True
    assert verdict[claim.source_id] == "condemned"
    journal.finish_condemnations([], [claim.source_id], "crash-probe", reason="probe")
    return False


def recover_and_reconcile(store: ObjectStore) -> dict[str, str]:
    journal = LeaseJournal(store, SESSION, JCFG)
    journal.recover()  # a fresh process: folds manifest and segments, verifies the chain
    reports = reconcile_pending(journal, S3ReferenceOwner(store, SESSION), include_committed=True)
    journal.verify()
    return {r.transaction_id: r.outcome for r in reports}


def state(store: ObjectStore, txid: str) -> str:
    tx = LeaseJournal(store, SESSION, JCFG).transaction(txid)
    assert tx is not None
    return tx.state


PUBLISH_CASES = [
    # failpoint, state after the crash, reconcile outcome, final state
    ("journal.after_prepared", "PREPARED", "aborted", "ABORTED"),
    ("owner.after_publish_write", "PREPARED", "committed", "COMMITTED"),
    ("journal.before_committed", "PREPARED", "committed", "COMMITTED"),
    ("journal.after_committed", "COMMITTED", "already_committed", "COMMITTED"),
]
#: Every step on S3; locally the steps whose neighbours leave the very same state are left out.
PUBLISH_RUNS = [("s3", *case) for case in PUBLISH_CASES] + [
    ("local", *case) for case in PUBLISH_CASES if case[0] in ("journal.after_prepared",
                                                               "journal.before_committed")]
BOTH = ["s3", "local"]


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "failpoint", "crashed", "outcome", "final"), PUBLISH_RUNS,
                         indirect=["backend"])
def test_publisher_killed_mid_publication(backend: Backend, failpoint: str, crashed: str, outcome: str,
                                          final: str) -> None:
    """A publisher killed at any step leaves the artifact protected until reconcile settles it."""
    store = backend.store
    claim, _ = put_artifact(store)
    proc = stop_at(backend, failpoint, "publish", claim.source_id, "tx-crash")
    assert protected(store, claim)  # while the process sits at the step
    kill(proc)
    assert state(store, "tx-crash") == crashed
    assert protected(store, claim)  # after the crash, before anyone reconciled
    assert recover_and_reconcile(store) == {"tx-crash": outcome}
    assert state(store, "tx-crash") == final
    assert protected(store, claim) == (final == "COMMITTED")
    assert recover_and_reconcile(store) == ({} if final == "ABORTED" else {"tx-crash": "already_committed"})


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "failpoint"), [
    ("s3", "journal.after_remover"), ("s3", "owner.after_remove_write"),
    ("local", "journal.after_remover")], indirect=["backend"])
def test_remover_killed_mid_removal(backend: Backend, failpoint: str) -> None:
    """Killed between the remover and RELEASED: still protected; reconcile then releases."""
    store = backend.store
    claim, ref = put_artifact(store)
    publish_memory_reference(LeaseJournal(store, SESSION, JCFG), S3ReferenceOwner(store, SESSION), ref,
                             transaction_id="tx-crash")
    proc = stop_at(backend, failpoint, "remove", "tx-crash")
    assert protected(store, claim)
    kill(proc)
    assert state(store, "tx-crash") == "COMMITTED" and protected(store, claim)
    assert recover_and_reconcile(store) == {"tx-crash": "released"}
    assert state(store, "tx-crash") == "RELEASED" and not protected(store, claim)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BOTH, indirect=True)
def test_reconciler_killed_between_seal_and_abort(backend: Backend) -> None:
    """Sealed but not yet ABORTED: still protected; the next run aborts; a late publish is refused."""
    store = backend.store
    claim, ref = put_artifact(store)
    LeaseJournal(store, SESSION, JCFG).prepare(claim, "tx-crash")  # a publisher died after PREPARED
    proc = stop_at(backend, "reconcile.after_seal", "reconcile")
    assert protected(store, claim)
    kill(proc)
    assert state(store, "tx-crash") == "PREPARED" and protected(store, claim)
    assert recover_and_reconcile(store) == {"tx-crash": "aborted"}
    with pytest.raises(ArtifactPublicationRejected):
        S3ReferenceOwner(store, SESSION).publish("tx-crash", ref)  # the late memory write
    assert not protected(store, claim)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BOTH, indirect=True)
def test_writer_killed_after_segment_write(backend: Backend) -> None:
    """Killed after writing a history segment, before the manifest CAS: the next writer
    rewrites the same content-addressed segment and recovery sees one consistent history."""
    store = backend.store
    claim, ref = put_artifact(store)
    journal = LeaseJournal(store, SESSION, JCFG)
    owner = S3ReferenceOwner(store, SESSION)
    for n in range(6):  # 12 records: the next append (the child's PREPARED) compacts
        publish_memory_reference(journal, owner, ref, transaction_id=f"tx-{n}")
    proc = stop_at(backend, "journal.after_segment_write", "publish", claim.source_id, "tx-crash")
    kill(proc)
    journal = LeaseJournal(store, SESSION, JCFG)
    before = journal.verify()
    assert before.segments == 0 and before.records == 12  # the manifest never moved
    assert [o.status for o in before.orphan_segments] == ["consistent"]
    assert journal.transaction("tx-crash") is None  # its PREPARED never landed: nothing to protect
    publish_memory_reference(journal, owner, ref, transaction_id="tx-after")
    after = LeaseJournal(store, SESSION, JCFG).verify()
    assert after.orphan_segments == () and after.segments == 1

