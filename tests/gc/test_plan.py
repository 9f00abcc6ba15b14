"""plan_cleanup: read-only, one status per object, a verified JSON Lines document."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.errors import CleanupRefused
from s3spill.gc.models import CleanupPolicy, CleanupScope, parse_duration
from s3spill.gc.plan import plan_cleanup
from s3spill.gc.planfile import CleanupPlan, load_plan_from_store, save_plan_to_store
from s3spill.leases.journal import LeaseJournal
from s3spill.store.base import ObjectStore
from tests.gc.aged_artifacts import later, put_artifact


def _snapshot(store: ObjectStore) -> dict[str, str]:
    return {info.key: info.etag for info in store.list("")}


def test_short_ttl_is_refused_without_the_danger_flag() -> None:
    """A TTL under one hour raises CleanupRefused unless allow_dangerously_short_ttl is set."""
    with pytest.raises(CleanupRefused, match="allow_dangerously_short_ttl"):
        CleanupPolicy(orphan_ttl=timedelta(minutes=59))
    with pytest.raises(CleanupRefused):
        CleanupPolicy(session_ttl=timedelta(seconds=1))
    policy = CleanupPolicy(orphan_ttl=timedelta(seconds=1), allow_dangerously_short_ttl=True)
    assert policy.orphan_ttl == timedelta(seconds=1)


def test_durations_and_shards_parse_from_cli_text() -> None:
    """`24h`, `30d`, `15m` and `K/N` parse; K must be below N."""
    assert parse_duration("24h") == timedelta(hours=24)
    assert parse_duration("30d") == timedelta(days=30)
    assert parse_duration("15m") == timedelta(minutes=15)
    assert CleanupScope.parse_shard("1/4").shard_count == 4
    with pytest.raises(Exception, match="below"):
        CleanupScope.parse_shard("4/4")


def test_plan_gives_each_object_one_status_and_writes_nothing(store: ObjectStore, tmp_path: Path) -> None:
    """Old orphans are planned with a snapshot, young ones kept, foreign keys retained, store untouched."""
    old = put_artifact(store, "s1", b"old output\n" * 100)
    store.put_if_absent("v1/sessions/notahash/whatever", b"x")
    store.put_if_absent("somebody-else/file.txt", b"y")
    before = _snapshot(store)
    plan = plan_cleanup(store, CleanupScope(), CleanupPolicy(), out=tmp_path / "p.jsonl", now=later())
    assert _snapshot(store) == before
    entries = list(plan.entries())
    by_key = {e.key: e for e in entries}
    covered = [e.key for e in entries] + [e.index_snapshot.key for e in entries if e.index_snapshot]
    assert sorted(covered) == sorted(before)  # every object exactly once; a sidecar rides with its artifact
    art = by_key[keys.artifact_key(keys.session_hash("s1"), old)]
    assert art.status == "planned_delete" and art.snapshot is not None
    assert art.snapshot.sha256 and art.index_snapshot is not None
    assert by_key["somebody-else/file.txt"].status == "retained_unknown"
    assert by_key["v1/sessions/notahash/whatever"].status == "retained_unknown"
    fresh = plan_cleanup(store, CleanupScope(), CleanupPolicy(), out=tmp_path / "q.jsonl")
    statuses = {e.key: e.status for e in fresh.entries()}
    # No manifest (and no other trace of history) while the artifact is younger than
    # session_ttl: a writer killed before its first liveness mark; kept, under its own status.
    assert statuses[art.key] == "retained_no_manifest"
    LeaseJournal(store, "s1").touch()  # the spiller's liveness mark: a manifest exists
    fresh = plan_cleanup(store, CleanupScope(), CleanupPolicy(), out=tmp_path / "r.jsonl")
    statuses = {e.key: e.status for e in fresh.entries()}
    assert statuses[art.key] == "retained_recent"


def test_max_deletions_caps_planned_deletes(store: ObjectStore, tmp_path: Path) -> None:
    """Past max_deletions, further orphans are retained_limit."""
    for i in range(3):
        put_artifact(store, "s1", f"body {i}".encode(), index=False)
    plan = plan_cleanup(store, policy=CleanupPolicy(max_deletions=2), out=tmp_path / "p", now=later())
    assert plan.footer.counts == {"planned_delete": 2, "retained_limit": 1}


def test_scope_limits_the_sessions_seen(store: ObjectStore, tmp_path: Path) -> None:
    """A single-session scope sees only that session; N shards partition the sessions."""
    sessions = [f"sess-{i}" for i in range(8)]
    for s in sessions:
        put_artifact(store, s, s.encode(), index=False)
    one = plan_cleanup(store, CleanupScope(session_hash=keys.session_hash("sess-3")), out=tmp_path / "a",
                       now=later())
    assert {e.session_hash for e in one.entries()} == {keys.session_hash("sess-3")}
    seen: list[str] = []
    for k in range(3):
        shard = plan_cleanup(store, CleanupScope(shard_index=k, shard_count=3), out=tmp_path / f"s{k}",
                             now=later())
        seen += [str(e.session_hash) for e in shard.entries()]
    assert sorted(seen) == sorted(keys.session_hash(s) for s in sessions)


def test_truncated_or_edited_plan_is_refused(store: ObjectStore, tmp_path: Path) -> None:
    """A plan missing its footer or with an edited line cannot be opened."""
    put_artifact(store, "s1", b"abc")
    plan = plan_cleanup(store, out=tmp_path / "p.jsonl", now=later())
    lines = plan.path.read_bytes().splitlines(keepends=True)
    (tmp_path / "cut.jsonl").write_bytes(b"".join(lines[:-1]))
    with pytest.raises(CleanupRefused, match="incomplete"):
        CleanupPlan.open(tmp_path / "cut.jsonl")
    edited = [lines[0], lines[1].replace(b"planned_delete", b"retained_recent"), *lines[2:]]
    (tmp_path / "edit.jsonl").write_bytes(b"".join(edited))
    with pytest.raises(CleanupRefused, match="digest"):
        CleanupPlan.open(tmp_path / "edit.jsonl")


def test_plan_round_trips_through_the_store(store: ObjectStore, tmp_path: Path) -> None:
    """A plan saved to the store loads back, verified, in another handle; the stored plan is denied."""
    put_artifact(store, "s1", b"abc")
    plan = plan_cleanup(store, out=tmp_path / "p.jsonl", now=later())
    save_plan_to_store(store, plan)
    loaded = load_plan_from_store(store, plan.plan_id, directory=str(tmp_path))
    assert [e.model_dump() for e in loaded.entries()] == [e.model_dump() for e in plan.entries()]
    again = plan_cleanup(store, out=tmp_path / "again.jsonl", now=later())
    assert {e.object_kind: e.status for e in again.entries()}["gc_plan"] == "retained_protocol"


def test_concurrent_planning_writes_the_same_plan(store: ObjectStore, tmp_path: Path) -> None:
    """Planning sessions on 1 or 4 threads gives the same entries in the same order, limit included."""
    from s3spill.config import TransferConfig

    for i in range(6):
        for j in range(3):
            put_artifact(store, f"conc-{i}", f"{i}/{j}".encode(), index=j == 0)
    policy = CleanupPolicy(max_deletions=7)
    now = later()
    plans = [plan_cleanup(store, policy=policy, out=tmp_path / f"p{n}", now=now,
                          config=TransferConfig(max_concurrency=n)) for n in (1, 4)]
    one, four = ([e.model_dump() for e in p.entries()] for p in plans)
    assert one == four
    assert plans[1].footer.counts == {"planned_delete": 7, "retained_limit": 11}


def test_a_local_plan_made_inline_is_the_threaded_plan(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The local store plans its sessions on the calling thread (its calls are system calls);
    the plan is the one the worker threads write, entry for entry, the limit included."""
    from s3spill.config import TransferConfig
    from s3spill.gc import plan as plan_module
    from s3spill.store.local import LocalStore

    class Threaded(LocalStore):
        overlapping_calls_help = True

    inline = LocalStore(tmp_path / "store")
    for i in range(6):
        for j in range(3):
            put_artifact(inline, f"inl-{i}", f"{i}/{j}".encode(), index=j != 1)
    policy = CleanupPolicy(max_deletions=7)
    now = later()
    threads: list[int] = []
    real_pool = plan_module.ThreadPoolExecutor

    def counting_pool(*args: object, max_workers: int, **kwargs: object) -> object:
        threads.append(max_workers)
        return real_pool(*args, max_workers=max_workers, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plan_module, "ThreadPoolExecutor", counting_pool)
    seen: list[int] = []
    mine = plan_cleanup(inline, policy=policy, out=tmp_path / "inline", now=now, progress=seen.append)
    assert threads == [] and seen == list(range(1, 7))
    theirs = plan_cleanup(Threaded(tmp_path / "store"), policy=policy, out=tmp_path / "threaded", now=now,
                          config=TransferConfig(max_concurrency=4))
    assert threads == [4]
    assert [e.model_dump() for e in mine.entries()] == [e.model_dump() for e in theirs.entries()]
    assert mine.footer.counts == theirs.footer.counts and mine.footer.counts["planned_delete"] == 7


def _listing(store: ObjectStore) -> dict[str, tuple[str, int]]:
    return {i.key: (i.etag, i.size) for i in store.list("") if not i.key.startswith("s3spill-doctor/")}


def test_a_plan_that_fails_between_sessions_leaves_a_refused_file(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Planned inline, a failure after the second session's lines (failpoint ``raise@2``)
    reaches the caller; the file has no footer and is refused whole; nothing was written to
    the store; the next plan is complete."""
    from s3spill import failpoints
    from s3spill.store.local import LocalStore

    store = LocalStore(tmp_path / "store")
    for i in range(4):
        put_artifact(store, f"fp-{i}", b"x")
    before = _listing(store)
    monkeypatch.setenv(failpoints.ENV_VAR, "gc.plan_after_session=raise@2")
    with pytest.raises(failpoints.FailpointTriggered):
        plan_cleanup(store, out=tmp_path / "cut.jsonl", now=later())
    monkeypatch.delenv(failpoints.ENV_VAR)
    assert (tmp_path / "cut.jsonl").read_bytes().count(b"\n") > 1  # two sessions' lines were written
    with pytest.raises(CleanupRefused, match="incomplete"):
        CleanupPlan.open(tmp_path / "cut.jsonl")
    assert _listing(store) == before
    assert plan_cleanup(store, out=tmp_path / "whole.jsonl", now=later()).footer.counts["planned_delete"] == 4


def test_a_plan_killed_between_sessions_leaves_a_refused_file(tmp_path: Path) -> None:
    """SIGKILLed after a session's lines (no ``finally``, no flush): whatever reached the
    file is refused whole, and the store is as it was."""
    import subprocess
    import sys

    from s3spill import failpoints
    from s3spill.store.local import LocalStore
    from s3spill.testing import child_env

    store = LocalStore(tmp_path / "store")
    for i in range(4):
        put_artifact(store, f"kill-{i}", b"y" * 10000)
    before = _listing(store)
    code = ("import sys; from datetime import UTC, datetime, timedelta; from pathlib import Path; "
            "from s3spill.gc.plan import plan_cleanup; from s3spill.store.local import LocalStore; "
            "plan_cleanup(LocalStore(Path(sys.argv[1])), out=Path(sys.argv[2]), "
            "now=datetime.now(UTC) + timedelta(days=3))")
    killed = subprocess.run([sys.executable, "-c", code, str(tmp_path / "store"), str(tmp_path / "k.jsonl")],
                            capture_output=True, text=True, timeout=120,
                            env=child_env({failpoints.ENV_VAR: "gc.plan_after_session=kill@3"}))
    assert killed.returncode == -9, killed.stderr
    with pytest.raises(CleanupRefused):
        CleanupPlan.open(tmp_path / "k.jsonl")
    assert _listing(store) == before
