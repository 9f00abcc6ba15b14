"""Quotas operators can trust: GC gives back what it deletes; `quota show`; quota and cap metrics."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from s3spill.fleet.quota import Quota, prefix_usage, session_usage
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.keys import session_hash
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore
from tests.cli.in_process import cli_call

KiB = 1024
LINE = b"an orphan output that GC will delete when its TTL has passed\n"


def _spill_orphans(store: LocalStore, session: str, sizes: list[int], quota: Quota) -> int:
    with Spiller(store, session, quota=quota) as spiller:
        total = 0
        for n in sizes:
            out = spiller.externalize(LINE * n, "bash")
            assert out.spilled and out.artifact is not None
            total += out.artifact.size_bytes
        spiller.close()
    return total


def test_gc_of_a_sessions_orphans_lowers_its_counters_by_exactly_their_sizes(
        fleet_env: Path, local_store: LocalStore) -> None:
    """Three orphans spilled under a quota, GC deletes them: freed == stored, net back to 0."""
    quota = Quota(session_bytes=10 * 1024 * KiB, prefix_bytes=100 * 1024 * KiB)
    stored = _spill_orphans(local_store, "credited", [800, 1600, 3200], quota)
    shash = session_hash("credited")
    before = session_usage(local_store, shash)
    assert before.bytes == stored and before.objects == 6 and before.net_bytes == stored
    now = datetime.now(UTC) + timedelta(days=30)
    plan = plan_cleanup(local_store, CleanupScope(session_hash=shash), CleanupPolicy(dry_run=False),
                        out=fleet_env / "plan.jsonl", now=now)
    report = apply_cleanup(local_store, plan, now=lambda: now)
    assert report.counts.get("deleted") == 3, report.counts
    after = session_usage(local_store, shash)
    assert (after.freed_bytes, after.freed_objects) == (stored, 6)
    assert (after.net_bytes, after.net_objects) == (0, 0)
    total = prefix_usage(local_store)
    assert total.freed_bytes == stored and total.net_bytes == 0


def test_a_session_gc_freed_can_spill_again(fleet_env: Path, local_store: LocalStore) -> None:
    """At its quota a session is refused; after GC deleted its outputs it is not."""
    quota = Quota(session_objects=4)
    _spill_orphans(local_store, "refilled", [800, 800], quota)
    with Spiller(local_store, "refilled", quota=quota) as spiller:
        refused = spiller.externalize(LINE * 800, "bash")
    assert not refused.spilled and "quota reached" in (refused.degraded_reason or "")
    refusals = REGISTRY.get_sample_value("s3spill_quota_refusals_total", {"scope": "session"})
    assert refusals is not None and refusals >= 1
    now = datetime.now(UTC) + timedelta(days=30)
    plan = plan_cleanup(local_store, CleanupScope(session_hash=session_hash("refilled")),
                        CleanupPolicy(dry_run=False), out=fleet_env / "plan.jsonl", now=now)
    apply_cleanup(local_store, plan, now=lambda: now)
    with Spiller(local_store, "refilled", quota=quota) as spiller:
        assert spiller.externalize(LINE * 800, "bash").spilled


def test_quota_show_reports_use_against_the_policy_limit(
        fleet_env: Path, write_policy: Callable[..., Path], local_store: LocalStore,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`quota show --session ID --json` and `--prefix`: the counters and the policy's limits."""
    monkeypatch.setenv("S3SPILL_CONFIG", str(write_policy('[quota]\nsession_bytes = "1MiB"\n')))
    limits = Quota(session_bytes=1024 * KiB, prefix_bytes=1 << 40)
    stored = _spill_orphans(local_store, "shown", [1600], limits)
    code, out, err = cli_call(["quota", "show", "--session", "shown", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0, err
    assert (doc["scope"], doc["bytes"], doc["objects"]) == ("session", stored, 2)
    assert doc["limit_bytes"] == 1024 * KiB
    code, out, _ = cli_call(["quota", "show", "--prefix"], capsys)
    assert code == 0 and f"bytes    {stored:,} (no limit)" in out


def test_a_capped_output_is_counted_as_a_metric(fleet_env: Path, local_store: LocalStore) -> None:
    """The cap's event is a Prometheus counter too, with the bytes it left out."""
    from s3spill.context.policy import SpillPolicy

    before = REGISTRY.get_sample_value("s3spill_capped_outputs_total", {"tool": "capme"}) or 0
    with Spiller(local_store, "capped", SpillPolicy(max_stored_bytes=64 * KiB, capped_tail_bytes=KiB)) as sp:
        out = sp.externalize(LINE * 20_000, "capme")
    assert out.stored_bytes is not None
    assert REGISTRY.get_sample_value("s3spill_capped_outputs_total", {"tool": "capme"}) == before + 1
    omitted = REGISTRY.get_sample_value("s3spill_capped_omitted_bytes_total", {"tool": "capme"})
    assert omitted is not None and omitted >= len(LINE) * 20_000 - 64 * KiB


def test_prefix_means_a_tenant_prefix_on_quota_show_as_on_stats(
        fleet_env: Path, write_policy: Callable[..., Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`quota show --prefix P` reads the counters of the layout under <store root>/P, as
    `stats --prefix P` reads its usage; a store URL there is refused, naming --store."""
    monkeypatch.setenv("S3SPILL_CONFIG", str(write_policy('[quota]\nprefix_bytes = "1GiB"\n')))
    tenant = LocalStore(fleet_env / "store" / "tenant-a")
    stored = _spill_orphans(tenant, "in-tenant", [1600], Quota(prefix_bytes=1 << 30))
    code, out, err = cli_call(["quota", "show", "--prefix", "tenant-a", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0, err
    assert (doc["scope"], doc["bytes"], doc["limit_bytes"]) == ("store prefix", stored, 1 << 30)
    assert doc["name"].endswith("/store/tenant-a")
    code, out, _ = cli_call(["quota", "show", "--prefix", "--json"], capsys)
    assert code == 0 and json.loads(out)["bytes"] == 0  # the root's own counters: nothing there
    code, _, err = cli_call(["quota", "show", "--prefix", (fleet_env / "store").as_uri()], capsys)
    assert code == 2 and "not a store URL" in err and "--store" in err
