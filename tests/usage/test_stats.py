"""``s3spill stats`` reports what a scripted run planted, from usage objects only (DuckDB)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.store.base import ObjectStore
from s3spill.usage.compact import compact_usage
from s3spill.usage.recorder import UsageRecorder
from s3spill.usage.source import part_events, usage_objects
from s3spill.usage.stats import compute_stats
from tests.cli.in_process import cli_call, local_cli_env
from tests.usage.conftest import SECRET, SESSION, scripted_run


def test_stats_after_200_calls_match_the_planted_behaviour(store: ObjectStore,
                                                           recorder: UsageRecorder) -> None:
    """One tool always re-read (raise the threshold), one never (lower it), one inline."""
    planted = scripted_run(store, recorder)
    recorder.close()
    assert recorder.lost == 0 and recorder.written == planted.calls == 200
    stats = compute_stats(store, session_hash=keys.session_hash(SESSION))
    by = {t.tool: t for t in stats.tools}
    assert stats.events == 200
    build, search, ls = by["build"], by["search"], by["ls"]
    planted_calls = (planted.build_spills, planted.search_spills, planted.small)
    assert (build.calls, search.calls, ls.calls) == planted_calls
    assert build.spill_share == search.spill_share == 1.0 and ls.spill_share == 0.0
    assert build.reread_rate == 1.0 and search.reread_rate == 0.0
    assert 1.0 < build.pages_per_reread <= 2.0 and build.greps > 0
    assert build.suggestion == "raise" and "100% of" in build.reason
    assert build.suggested_threshold is not None and build.threshold is not None
    assert build.suggested_threshold > build.threshold
    assert search.suggestion == "lower" and search.suggested_threshold is not None
    assert search.suggested_threshold < (search.threshold or 0)
    assert 0 < build.stored_bytes < build.raw_bytes  # compressed below raw
    assert build.shown_bytes < build.raw_bytes


def test_events_hold_only_the_masked_text_the_model_saw(store: ObjectStore, recorder: UsageRecorder) -> None:
    """The planted credential is masked in every stored event, as it was for the model."""
    scripted_run(store, recorder, calls=12)
    recorder.close()
    bodies = [store.get(o.key) for o in usage_objects(store)]
    assert bodies and all(SECRET.encode() not in b for b in bodies)
    events = [e for b in bodies for e in part_events(b)]
    reads = [e for e in events if e["op"] == "read"]
    assert reads and all(e["shown"] and e["shown_chars"] == len(e["shown"]) for e in reads)
    assert all("key=[redacted:aws-key]" in e["shown"] for e in reads)  # it was there, masked
    assert {e["op"] for e in events} == {"spill", "read", "grep"}


def test_compaction_makes_one_day_file_and_stats_do_not_change(store: ObjectStore,
                                                                recorder: UsageRecorder) -> None:
    """A finished day's parts become one Parquet file; nothing counted twice or lost."""
    scripted_run(store, recorder, calls=60)
    recorder.close()
    before = compute_stats(store).as_dict()
    assert len(list(usage_objects(store))) > 1
    report = compact_usage(store, now=datetime.now(UTC) + timedelta(days=1))
    assert report.kept == [] and report.events == 60
    objects = list(usage_objects(store))
    assert len(objects) == 1 and objects[0].compacted
    after = compute_stats(store).as_dict()
    assert {**after, "objects": 0} == {**before, "objects": 0}


def test_a_part_left_beside_its_day_file_is_counted_once(store: ObjectStore, recorder: UsageRecorder) -> None:
    """A compaction killed before it deleted its sources: readers deduplicate by event id."""
    scripted_run(store, recorder, calls=20)
    recorder.close()
    parts = {o.key: store.get(o.key) for o in usage_objects(store)}
    compact_usage(store, now=datetime.now(UTC) + timedelta(days=1))
    for key, body in parts.items():  # the "killed" run's sources, back in place
        store.put_if_absent(key, body)
    assert compute_stats(store).events == 20


def test_since_drops_older_events(store: ObjectStore, recorder: UsageRecorder) -> None:
    """``--since`` counts only events at or after now minus the duration."""
    scripted_run(store, recorder, calls=10)
    recorder.close()
    assert compute_stats(store, since=timedelta(hours=1)).events == 10
    later = datetime.now(UTC) + timedelta(days=2)
    assert compute_stats(store, since=timedelta(hours=1), now=later).events == 0


def test_the_cli_prints_stats_as_json_and_as_a_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``s3spill stats --session ID --json`` and the table name the tools and the suggestion."""
    store = local_cli_env(tmp_path, monkeypatch, SESSION)
    rec = UsageRecorder(store, batch=False)
    scripted_run(store, rec, calls=30)
    code, out, _ = cli_call(["stats", "--session", SESSION, "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["events"] == 30 and {t["tool"] for t in data["tools"]} == {"build", "search", "ls"}
    assert len(list(usage_objects(store))) == 30  # one-shot: one small object per call
    code, out, _ = cli_call(["stats", "--since", "1h"], capsys)
    assert code == 0 and "build" in out and "raise" in out


def test_prefix_reads_a_tenants_layout_under_the_store_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``--prefix P`` counts the usage of the layout under ``<root>/P``, not the root's own."""
    from s3spill.store.local import LocalStore

    root = tmp_path / "root"
    tenant = LocalStore(root / "tenant-a")
    scripted_run(tenant, UsageRecorder(tenant, batch=False), calls=8)
    monkeypatch.setenv("S3SPILL_STORE", root.as_uri())
    code, out, _ = cli_call(["stats", "--prefix", "tenant-a", "--json"], capsys)
    assert code == 0 and json.loads(out)["events"] == 8
    code, out, _ = cli_call(["stats", "--json"], capsys)
    assert code == 0 and json.loads(out)["events"] == 0


#: The join ``stats`` ran before its one-pass query: the reference the figures must match.
_JOIN = """
WITH ev AS (SELECT * FROM events WHERE ts >= ?),
spills AS (SELECT session, artifact, tool, spilled, raw_bytes, stored_bytes, shown_bytes, threshold
           FROM ev WHERE op = 'spill'),
per_art AS (SELECT session, artifact,
                   count(*) FILTER (WHERE op IN ('read', 'live_read')) AS pages,
                   count(*) FILTER (WHERE op IN ('grep', 'live_grep')) AS greps,
                   sum(shown_bytes) AS shown
            FROM ev WHERE op <> 'spill' GROUP BY session, artifact)
SELECT s.tool, count(*) AS calls, count(*) FILTER (WHERE s.spilled) AS spilled,
       coalesce(sum(s.raw_bytes) FILTER (WHERE s.spilled), 0) AS raw_bytes,
       coalesce(sum(s.stored_bytes) FILTER (WHERE s.spilled), 0) AS stored_bytes,
       count(p.artifact) FILTER (WHERE s.spilled) AS reread,
       coalesce(sum(p.pages) FILTER (WHERE s.spilled), 0) AS pages,
       coalesce(sum(p.greps) FILTER (WHERE s.spilled), 0) AS greps,
       coalesce(sum(s.shown_bytes), 0) + coalesce(sum(p.shown), 0) AS shown_bytes,
       max(s.threshold) AS threshold,
       quantile_disc(s.raw_bytes, 0.9) FILTER (WHERE s.spilled) AS p90_spilled_bytes
FROM spills s LEFT JOIN per_art p ON s.session = p.session AND s.artifact = p.artifact
GROUP BY s.tool ORDER BY s.tool
"""


def test_the_one_pass_query_gives_the_joins_figures(tmp_path: Path) -> None:
    """Random spills (inline, stored, two sessions sharing artifact names), reads, greps, live
    reads, reads whose spill is before ``--since``: the same figures as the join of spills
    against their reads."""
    import random

    from s3spill.store.local import LocalStore
    from s3spill.usage.engine import connect
    from s3spill.usage.events import UsageEvent
    from s3spill.usage.stats import _COLUMNS, _row

    rng = random.Random(5)
    store = LocalStore(tmp_path / "s")
    rec = UsageRecorder(store, max_events=10**6, max_age=600.0)
    now = datetime(2026, 12, 2, 12, tzinfo=UTC)
    for n in range(600):
        session = keys.session_hash(f"s{n % 2}")
        tool = rng.choice(["build", "test", "ls"])
        spilled = rng.random() < 0.6
        name = f"20261202T000000Z-{n // 2:08x}-{tool}" if spilled else None
        minutes = rng.choice([10, 90])  # half of them before the one-hour cutoff
        ts = (now - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        shown = "x" * rng.randint(1, 50)
        rec.record(UsageEvent(session=session, op="spill", tool=tool, shown=shown, shown_chars=len(shown),
                              shown_bytes=len(shown), artifact=name, spilled=spilled,
                              raw_bytes=rng.randint(1, 10**6),
                              stored_bytes=rng.randint(1, 10**5) if spilled else None,
                              threshold=rng.choice([None, 50_000, 80_000]), id=f"{n:08x}s", ts=ts))
        for k in range(rng.choice([0, 0, 1, 3]) if name else 0):
            op = rng.choice(["read", "grep", "live_read", "live_grep"])
            later = (now - timedelta(minutes=rng.choice([5, 80]))).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            rec.record(UsageEvent(session=session, op=op, tool=tool, shown="p",  # type: ignore[arg-type]
                                  shown_chars=1, shown_bytes=rng.randint(1, 4000), artifact=name,
                                  id=f"{n:08x}{k}", ts=later))
    rec.close()
    con, _ = connect(store, usage_objects(store), columns=_COLUMNS)
    try:
        for since in (None, timedelta(hours=1)):
            stamp = (now - since).strftime("%Y-%m-%dT%H:%M:%S.000Z") if since else ""
            rows = con.execute(_JOIN, [stamp]).fetchall()
            names = [d[0] for d in con.description]
            want = [_row(dict(zip(names, row, strict=True))) for row in rows]
            total = con.execute("SELECT count(*) FROM events WHERE ts >= ?", [stamp]).fetchone()
            got = compute_stats(store, since=since, now=now)
            assert [dataclasses.replace(t, suggestion="", suggested_threshold=None, reason="")
                    for t in got.tools] == want
            assert total is not None and got.events == total[0] > 0
    finally:
        con.close()
