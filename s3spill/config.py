"""One object for every concurrency, size and retry knob (the s3transfer pattern).

Knobs live here rather than as keyword arguments scattered through the call graph so
that a deployment can tune a fleet from one place and tests can shrink part sizes and
deadlines without reaching into internals.

The fields fall into three jobs, in this order: talking to the store (sizes,
concurrency, retries, timeouts), the lease journal's layout (``journal_*``), and the
artifact layout at rest (``index_chunk_size``, compression). They share one object
because the journal's CAS loop also obeys the store deadline and the artifact writer
the multipart threshold and concurrency.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from s3spill.errors import ConfigError

MiB = 1024 * 1024


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> timedelta:
    """``90s``, ``15m``, ``24h``, ``30d``, ``2w`` (a bare number is seconds), or ISO 8601.

    ISO 8601 (``P1D``, ``PT24H``, ``P1DT12H``) because plans and reports store durations
    that way: a value copied from a report must be accepted back on the command line.
    """
    match = _DURATION.match(text)
    if match:
        return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2) or "s"])
    if text.strip().upper().startswith("P"):
        try:
            return TypeAdapter(timedelta).validate_python(text.strip().upper())
        except ValueError:
            pass
    raise ConfigError(f"bad duration {text!r}: use e.g. 90s, 15m, 24h, 30d, or ISO 8601 such as P1D")


class TransferConfig(BaseModel):
    """Sizes, concurrency and retry budget for the store; the journal's and the artifacts' layout."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Bodies at or above this size go through a multipart upload.
    multipart_threshold: int = Field(default=8 * MiB, ge=5 * MiB)
    #: Part size of multipart uploads; peak memory of a streamed write is about one part.
    part_size: int = Field(default=8 * MiB, ge=5 * MiB)
    #: Thread pool size for work that fans out (GC across sessions, part uploads).
    max_concurrency: int = Field(default=4, ge=1, le=64)
    #: Attempts per request made by our own retry layer (botocore's are on top, see below).
    max_attempts: int = Field(default=6, ge=1)
    #: First backoff step in seconds; later steps grow exponentially with full jitter.
    backoff_base: float = Field(default=0.1, gt=0)
    #: Largest single backoff sleep in seconds.
    backoff_max: float = Field(default=2.0, gt=0)
    #: Overall deadline of one logical store operation, retries included, in seconds.
    deadline: float = Field(default=30.0, gt=0)
    #: botocore's connect and read timeouts in seconds.
    connect_timeout: float = Field(default=3.0, gt=0)
    read_timeout: float = Field(default=20.0, gt=0)
    #: botocore's own retries; kept low because we retry with a deadline above it.
    botocore_max_attempts: int = Field(default=2, ge=1)
    #: botocore's request/response checksum behaviour; ``when_required`` for endpoints
    #: that reject the newer default checksum headers.
    checksum_mode: Literal["when_supported", "when_required"] = "when_supported"

    # -- the lease journal's layout ------------------------------------------------
    #: Compare-and-swap attempts on a journal manifest before JournalContention; each
    #: lost attempt re-reads, re-validates and re-applies after a jittered backoff.
    journal_cas_attempts: int = Field(default=40, ge=1)
    #: Chained records a manifest keeps inline; past this, the oldest
    #: ``journal_segment_records`` (or more, after a large GC batch) move into an
    #: immutable history segment. Small on purpose: every write rewrites the manifest,
    #: so these bound its bytes (20 records: about 10 KiB), whatever the history.
    journal_max_recent_records: int = Field(default=20, ge=8)
    journal_segment_records: int = Field(default=16, ge=4)
    #: Level 0 segments merged into one level 1 segment (LSM-style, by the writer that
    #: cuts the last of them, from records it already verified): keeps the number of
    #: objects a fresh reader fetches near one per ``16 * 16`` records.
    journal_merge_segments: int = Field(default=16, ge=2)

    # -- the artifact layout at rest -----------------------------------------------
    #: Verification unit of an artifact's sidecar index: a page read fetches and hashes
    #: whole chunks, so it transfers at most its own bytes plus two chunks (and the index).
    index_chunk_size: int = Field(default=1 * MiB, ge=16, le=64 * MiB)
    #: Artifacts at rest: ``auto`` compresses text (no NUL byte in the first chunk) as one
    #: independent zstd frame per index chunk, so a page read still fetches only the frames
    #: it needs; ``zstd`` always; ``none`` never.
    artifact_compression: Literal["auto", "zstd", "none"] = "auto"
    #: zstd level of those frames (1-22). 1: on build logs it stores within 1% of level 3's
    #: size at about twice the speed (benchmarks/write_path_bench.py), and compressing is
    #: the write path's largest cost.
    compression_level: int = Field(default=1, ge=1, le=22)
    #: S3 only: write every object with SSE-KMS under this key (ARN or id) instead of the
    #: bucket's default encryption — a fleet tenant's own key (terraform/: ``tenants``,
    #: whose bucket policy requires exactly that key under the tenant's prefix).
    #: ``open_store`` takes it from ``$S3SPILL_KMS_KEY_ID`` when the config leaves it unset.
    sse_kms_key_id: str | None = Field(default=None, min_length=1, max_length=2048)


class LiveConfig(BaseModel):
    """Cadence and bounds of a live artifact (a running command's output, readable as it runs).

    Beside :class:`TransferConfig` rather than in it: these are per run (a test shrinks them
    to milliseconds and kilobytes), and none of them changes how bytes travel.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: A segment is cut this many seconds after its first byte arrived...
    segment_interval: float = Field(default=1.0, gt=0, le=60)
    #: ...or once it holds this many raw bytes, whichever comes first.
    segment_bytes: int = Field(default=1 * MiB, ge=64, le=64 * MiB)
    #: The state is rewritten at least this often while the command is quiet, so a reader
    #: (and GC) can tell a quiet command from a dead writer.
    heartbeat_interval: float = Field(default=5.0, gt=0)
    #: A running state whose heartbeat is older than this is ``lost`` (its writer died).
    #: Three heartbeats: a reader never calls a state lost sooner, whatever is set here.
    lost_after: float = Field(default=15.0, gt=0)
    #: Raw bytes kept per live artifact; past it the head and the newest window are kept.
    max_bytes: int = Field(default=4 * 1024 * MiB, ge=1024)
    #: Of ``max_bytes``, what the head keeps (the first output, never dropped); at most half
    #: of ``max_bytes`` (clamped), so a small cap caps: the rest is the newest window.
    head_bytes: int = Field(default=64 * MiB, ge=0)
    #: Once the state lists twice this many segments inline, the oldest this many move into
    #: an immutable table object: the state (rewritten every second, read by every reader)
    #: stays a few KiB however long the output.
    table_segments: int = Field(default=32, ge=2, le=4096)
    #: Raw bytes that may wait between the command's pipe and the store (backpressure past it).
    queue_bytes: int = Field(default=8 * MiB, ge=64 * 1024)

    @model_validator(mode="before")
    @classmethod
    def _head_within_cap(cls, data: object) -> object:
        """The head default (64 MiB) must not outgrow a smaller cap (issue 34: an 8 MiB cap kept
        68 MB): the head is clamped to half of ``max_bytes``."""
        if isinstance(data, dict):
            cap = data.get("max_bytes", cls.model_fields["max_bytes"].default)
            head = data.get("head_bytes", cls.model_fields["head_bytes"].default)
            if isinstance(cap, int) and isinstance(head, int) and head > cap // 2:
                data = {**data, "head_bytes": cap // 2}
        return data
