"""DuckDB, in process, reading usage objects through our store layer.

Why DuckDB: ``stats`` is a handful of GROUP BYs and a join over NDJSON and Parquet files
partitioned by day — exactly what an embedded columnar engine does in C++ with projection
pushdown, and the same SQL a fleet runs on Athena or Trino over the same files
(docs/usage.md). Why fsspec instead of DuckDB's httpfs: httpfs is an extension DuckDB
downloads from outside the package registries, and it would bypass the store layer (its
key validation, credentials, retries and the local backend); fsspec is the filesystem
interface DuckDB's Python API accepts, so every byte DuckDB reads of a Parquet day file
is an :meth:`ObjectStore.get` of a byte range — its footer and the column chunks a query
needs, never whole. NDJSON parts are not read that way: DuckDB would call the Python
filesystem from its threads, one GIL-bound read per object (24.5 s for 1,000,000 events
in 1,000 parts); they are fetched by :func:`gather_parts` with ``ObjectStore.get`` in
threads, only their fact lines (or the zstd frame of them) when the shown text is not
wanted, decompressed there, into one private local file that DuckDB parses natively once.

Both are the ``usage`` extra (``pip install 's3spill[usage]'``); the core install never
needs them (the writer side, :mod:`s3spill.usage.recorder`, is NDJSON and zstd, which the core
install has for artifacts).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from s3spill.errors import ConfigError, IntegrityError, NotFound
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore
from s3spill.usage.source import UsageObject, part_lines

log = get_logger("s3spill.usage")

__all__ = ["COLUMNS", "PROTOCOL", "connect", "events_query", "gather_parts", "scan"]

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


def connect(store: ObjectStore, objects: Iterable[UsageObject], *, columns: Sequence[str] | None = None
            ) -> tuple[Any, list[UsageObject]]:
    """A DuckDB connection holding a table ``events`` of ``columns`` (all by default) over ``objects``.

    The table is filled once, so each object is read once however many queries follow.
    NDJSON parts are fetched through the store in parallel threads into one local file that
    DuckDB reads natively (a Python filesystem called from DuckDB's threads serialises on the
    GIL, object by object); without ``shown`` a part is read only up to its shown rows
    (:func:`s3spill.usage.recorder.part_body`). Day files are read through the fsspec view,
    by footer and column chunks.

    Events are deduplicated by id where they can repeat: a day file and a part it replaced
    may both exist for a moment (compaction writes before it deletes), and nothing may be
    counted twice.
    """
    with scan(store, objects, columns=columns) as (con, select, chosen):
        con.execute("CREATE TABLE events AS " + select)  # a failure closes con (scan)
        return con, chosen


@contextlib.contextmanager
def scan(store: ObjectStore, objects: Iterable[UsageObject], *, columns: Sequence[str] | None = None
         ) -> Iterator[tuple[Any, str, list[UsageObject]]]:
    """A DuckDB connection and the SELECT of ``columns`` over ``objects``, valid inside the block.

    Why beside :func:`connect`: a question asked once (``stats``) reads the events straight
    into its aggregate; filling a table first stores every row (1,000,000 rows: about as
    much CPU as parsing them) only for one query to read them back. The connection is the
    caller's to close when the block raises; :func:`connect` keeps it open after the block.
    """
    duckdb, _ = _imports()
    chosen = list(objects)
    cols = list(columns or COLUMNS)
    con = duckdb.connect()
    try:
        parts = [o for o in chosen if not o.compacted]
        days = [o for o in chosen if o.compacted]
        with tempfile.TemporaryDirectory(prefix="s3spill-usage-") as tmp:
            local = Path(tmp) / "parts.ndjson"
            if parts:
                gather_parts(store, parts, local, shown="shown" in cols)
            if days:
                con.register_filesystem(_filesystem(store, {o.key: o.size for o in days}))
            yield con, events_query(chosen, cols, local if parts else None), chosen
    except BaseException:
        con.close()
        raise


def gather_parts(store: ObjectStore, parts: Sequence[UsageObject], out: Path, *, shown: bool,
                 workers: int = 16) -> int:
    """Fetch ``parts`` (their fact lines only, unless ``shown``) into ``out``; returns bytes written.

    A part gone meanwhile (compacted or collected after the listing) is skipped: its events
    are in the day file that replaced it, or were deleted with their session. A damaged part
    (cut mid-write, or bytes that no longer match their SHA-256) is skipped with a warning
    naming it: its events cannot be read, and the others' still count.
    """
    def fetch(obj: UsageObject) -> bytes:
        rng = None if shown or obj.facts is None else (0, obj.facts)
        try:
            data = store.get(obj.key, rng) if rng is None or rng[1] > 0 else b""
        except NotFound:
            log.info("usage.part_gone", key=obj.key)
            return b""
        except IntegrityError as exc:
            log.warning("usage.part_damaged", key=obj.key, error=str(exc)[:200])
            return b""
        return part_lines(data) if obj.zstd else data  # decompressed here, in the fetching thread

    written = 0
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh, ThreadPoolExecutor(max_workers=max(1, min(workers, len(parts)))) as pool:
        window: deque[Future[bytes]] = deque()
        todo = iter(parts)
        for obj in itertools.islice(todo, 4 * workers):
            window.append(pool.submit(fetch, obj))
        while window:
            data = window.popleft().result()
            nxt = next(todo, None)
            if nxt is not None:
                window.append(pool.submit(fetch, nxt))
            if data:
                fh.write(data if data.endswith(b"\n") else data + b"\n")
                written += len(data)
    return written


def _paths(objects: Sequence[UsageObject]) -> str:
    return "[" + ", ".join(f"'{PROTOCOL}://{o.key}'" for o in objects) + "]"


def _spec(cols: Iterable[str]) -> str:
    return "{" + ", ".join(f"'{k}': '{COLUMNS[k]}'" for k in cols) + "}"


def _parts_select(local: Path, cols: list[str]) -> str:
    """Fact rows (``op`` set), with the shown text joined back by id when asked for."""
    path = str(local).replace("'", "''")
    if "shown" not in cols:
        need = dict.fromkeys([*cols, "op"])
        return (f"SELECT {', '.join(cols)} FROM read_json('{path}', format='newline_delimited', "  # noqa: S608
                f"columns={_spec(need)}) WHERE op IS NOT NULL")
    picked = ", ".join("coalesce(f.shown, s.shown) AS shown" if c == "shown" else f"f.{c}" for c in cols)
    rows = f"read_json('{path}', format='newline_delimited', columns={_spec(COLUMNS)})"
    return (f"SELECT {picked} FROM (SELECT * FROM {rows}) f "  # noqa: S608 - our temp path
            f"LEFT JOIN (SELECT id, any_value(shown) AS shown FROM {rows} WHERE op IS NULL GROUP BY id) s "
            "ON f.id = s.id WHERE f.op IS NOT NULL")


def events_query(objects: Sequence[UsageObject], cols: list[str], local: Path | None = None) -> str:
    """The SQL filling ``events`` (keys are validated: no quote can occur in them).

    ``id`` is read only where it is needed, to deduplicate (the widest column ``stats`` would
    otherwise materialise for nothing)."""
    overlap = _may_overlap(objects)
    names = ", ".join(cols)
    cols = [*cols, "id"] if overlap and "id" not in cols else cols
    inner = ", ".join(cols)
    empty = "SELECT " + ", ".join(f"CAST(NULL AS {COLUMNS[k]}) AS {k}" for k in COLUMNS) + " WHERE false"
    days = [o for o in objects if o.compacted]
    selects = [_parts_select(local, cols)] if local is not None else []
    if days:
        # BY NAME against the typed empty row: a day file written before a column existed
        # reads it as NULL (the schema only grows).
        selects.append(f"SELECT {inner} FROM ({empty} UNION ALL BY NAME "  # noqa: S608 - validated keys
                       f"SELECT * FROM read_parquet({_paths(days)}, union_by_name=true))")
    body = " UNION ALL ".join(selects or [f"SELECT {inner} FROM ({empty})"])  # noqa: S608 - built above
    if not overlap:  # every event is in exactly one object: no window to pay for
        return body
    return (f"SELECT {names} FROM ({body}) "  # noqa: S608 - built above
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
