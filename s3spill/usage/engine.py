"""DuckDB, in process, reading usage objects through our store layer (an fsspec filesystem).

Why DuckDB: ``stats`` is a handful of GROUP BYs and a join over NDJSON and Parquet files
partitioned by day — exactly what an embedded columnar engine does in C++ with projection
pushdown, and the same SQL a fleet runs on Athena or Trino over the same files
(docs/usage.md). Why fsspec instead of DuckDB's httpfs: httpfs is an extension DuckDB
downloads from outside the package registries, and it would bypass the store layer (its
key validation, credentials, retries and the local backend); fsspec is the filesystem
interface DuckDB's Python API accepts, so every byte DuckDB reads is an
:meth:`ObjectStore.get` of a byte range — a Parquet day file is read by its footer and
the column chunks a query needs, never whole.

Both are the ``usage`` extra (``pip install 's3spill[usage]'``); the core install never
needs them (the writer side, :mod:`s3spill.usage.recorder`, is plain NDJSON).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from s3spill.errors import ConfigError
from s3spill.store.base import ObjectStore
from s3spill.usage.source import UsageObject

__all__ = ["COLUMNS", "PROTOCOL", "connect", "events_view"]

PROTOCOL = "s3spill"
_CREATE_ONCE = datetime(2000, 1, 1, tzinfo=UTC)

#: The NDJSON columns and their SQL types (the Athena/Trino table has the same).
COLUMNS: dict[str, str] = {
    "v": "INTEGER", "id": "VARCHAR", "ts": "VARCHAR", "session": "VARCHAR", "op": "VARCHAR",
    "tool": "VARCHAR", "artifact": "VARCHAR", "source_id": "VARCHAR", "via": "VARCHAR",
    "call_id": "VARCHAR", "spilled": "BOOLEAN", "mode": "VARCHAR", "raw_bytes": "BIGINT",
    "stored_bytes": "BIGINT", "threshold": "BIGINT", "shown_chars": "BIGINT", "shown_bytes": "BIGINT",
    "shown_truncated": "BOOLEAN", "shown": "VARCHAR", "first_line": "BIGINT", "last_line": "BIGINT",
    "total_lines": "BIGINT", "matches": "BIGINT", "masked": "BIGINT", "degraded": "VARCHAR",
}


def _imports() -> tuple[Any, Any]:
    try:
        import duckdb
        import fsspec.spec
    except ImportError as exc:
        raise ConfigError("usage statistics need DuckDB: pip install 's3spill[usage]'",
                          hint=f"missing module {exc.name}") from None
    return duckdb, fsspec.spec


def _filesystem(store: ObjectStore, sizes: dict[str, int]) -> Any:
    _, spec = _imports()

    class StoreFile(spec.AbstractBufferedFile):  # type: ignore[misc,name-defined]
        def _fetch_range(self, start: int, end: int) -> bytes:
            if start >= end:
                return b""
            data: bytes = store.get(self.path, (start, min(end, self.size)))
            return data

    class StoreFileSystem(spec.AbstractFileSystem):  # type: ignore[misc,name-defined]
        protocol = PROTOCOL
        cachable = False

        def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
            key = self._strip_protocol(path)
            size = sizes.get(key)
            if size is None:
                size = sizes[key] = store.head(key).size
            return {"name": key, "size": size, "type": "file"}

        def modified(self, path: str) -> datetime:
            return _CREATE_ONCE  # usage keys are create-once: an object never changes

        def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
            found = [self.info(path)]
            return found if detail else [f["name"] for f in found]

        def _open(self, path: str, mode: str = "rb", block_size: int | None = None, **kwargs: Any) -> Any:
            key = self._strip_protocol(path)
            # No read-ahead: DuckDB asks for exactly the column chunks a query needs, and a
            # buffer would pull in the shown text it skips.
            return StoreFile(self, key, mode, block_size=block_size or 256 * 1024,
                             size=self.info(key)["size"], cache_type="none")

    return StoreFileSystem()


def connect(store: ObjectStore, objects: Iterable[UsageObject]) -> tuple[Any, list[UsageObject]]:
    """A DuckDB connection with the store registered and a view ``events`` over ``objects``.

    Events are deduplicated by id where they can repeat: a day file and a part it replaced
    may both exist for a moment (compaction writes before it deletes), and nothing may be
    counted twice.
    """
    duckdb, _ = _imports()
    chosen = list(objects)
    con = duckdb.connect()
    con.register_filesystem(_filesystem(store, {o.key: o.size for o in chosen}))
    con.execute(events_view(chosen))
    return con, chosen


def _paths(objects: Sequence[UsageObject]) -> str:
    return "[" + ", ".join(f"'{PROTOCOL}://{o.key}'" for o in objects) + "]"


def events_view(objects: Sequence[UsageObject]) -> str:
    """The SQL of the ``events`` view (keys are validated: no quote can occur in them)."""
    cols = ", ".join(COLUMNS)
    empty = "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {k}" for k, t in COLUMNS.items()) + " WHERE false"
    parts = [o for o in objects if not o.compacted]
    days = [o for o in objects if o.compacted]
    selects = []
    if parts:
        spec = "{" + ", ".join(f"'{k}': '{t}'" for k, t in COLUMNS.items()) + "}"
        selects.append(f"SELECT {cols} FROM read_json({_paths(parts)}, "  # noqa: S608 - validated keys
                       f"format='newline_delimited', columns={spec})")
    if days:
        # BY NAME against the typed empty row: a day file written before a column existed
        # reads it as NULL (the schema only grows).
        selects.append(f"SELECT {cols} FROM ({empty} UNION ALL BY NAME "  # noqa: S608 - validated keys
                       f"SELECT * FROM read_parquet({_paths(days)}, union_by_name=true))")
    body = " UNION ALL ".join(selects or [empty])
    if not _may_overlap(objects):  # every event is in exactly one object: no window to pay for
        return f"CREATE VIEW events AS {body}"
    return (f"CREATE VIEW events AS SELECT * FROM ({body}) "  # noqa: S608 - built above
            "QUALIFY row_number() OVER (PARTITION BY id ORDER BY id) = 1")


def _may_overlap(objects: Sequence[UsageObject]) -> bool:
    """Whether an event may be in two objects: only a day file beside another object of its day.

    A recorder writes each event once (a write whose outcome stays unknown is counted lost,
    never retried), so only compaction — which writes the day file before it deletes its
    sources — can leave the same event twice.
    """
    days: dict[tuple[str, str], list[UsageObject]] = {}
    for o in objects:
        days.setdefault((o.session_hash, o.day), []).append(o)
    return any(len(group) > 1 and any(o.compacted for o in group) for group in days.values())
