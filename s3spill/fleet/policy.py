"""The fleet policy: every setting an operator gives all entry points, as one typed schema.

Why one schema for every entry point: an operator who runs hooks, the MCP proxy and
``s3spill run`` across a fleet says "cap 1 GiB, quota 20 GiB per session, secrets masked at
rest, never spill ``Read``" once, and each entry point applies the same words the same way.
Each entry point keeps its own *defaults* (the hooks' thresholds fit Claude Code's limits,
the proxy's token budget fits MCP clients); the policy replaces only what the operator set
(:class:`~s3spill.fleet.policy_file.LoadedPolicy` knows which keys those are).

Every leaf key has one environment variable (``Field(json_schema_extra={"env": ...})``, else
``S3SPILL_<SECTION>_<KEY>``); where a CLI flag already meant the same thing its variable is
kept (``S3SPILL_SESSION_TTL`` is both ``gc --session-ttl`` and ``[gc] session_ttl``). Tables
keyed by tool name (``[tools.Read]``, ``[harness.claude-code.tools.Bash]``) come from files only.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ByteSize, ConfigDict, Field

from s3spill.config import LiveConfig, parse_duration
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.errors import ConfigError

__all__ = ["HARNESSES", "FleetPolicy", "ToolRule"]

_SPILL = SpillPolicy.model_fields
_LIVE = LiveConfig.model_fields

#: The entry points that have ``[harness.<name>]`` tables, and the tool names each one's
#: model calls (docs/configuration.md lists them): a rule under a harness applies only there.
HARNESSES: dict[str, tuple[str, ...]] = {
    "claude-code": ("Bash", "Read", "Grep", "Glob", "WebFetch", "WebSearch", "Task", "mcp__<server>__<tool>"),
    "gemini-cli": ("run_shell_command", "read_file", "read_many_files", "search_file_content", "glob",
                   "web_fetch", "google_web_search"),
    "mcp-proxy": ("<the upstream server's own tool names>",),
    "run": ("bash (or --tool NAME)",),
    "spill": ("spill (or --tool NAME)",),
}


def _seconds(value: object) -> object:
    """A duration: seconds as a number, or text such as ``90s``, ``15m``, ``30d``, ``P1D``."""
    if isinstance(value, bool):
        return value  # left for pydantic to refuse
    if isinstance(value, (int, float)):
        return timedelta(seconds=value)
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ConfigError as exc:  # pydantic then names the key (and the file names the line)
            raise ValueError(str(exc)) from None
    return value


Duration = Annotated[timedelta, BeforeValidator(_seconds)]


def env(name: str) -> Any:
    """The variable a key takes when it is not ``S3SPILL_<SECTION>_<KEY>``."""
    return {"env": name}


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StoreSection(_Section):
    """Where outputs go. A project file may never set these (a clone must not move the store)."""

    url: str | None = Field(default=None, min_length=1, json_schema_extra=env("S3SPILL_STORE"))
    kms_key_id: str | None = Field(default=None, min_length=1, max_length=2048,
                                   json_schema_extra=env("S3SPILL_KMS_KEY_ID"))


class ProjectSection(_Section):
    """Whether a ``.s3spill.toml`` in the working directory or its repository is read at all."""

    allow_file: bool = Field(default=False, json_schema_extra=env("S3SPILL_PROJECT_FILE"))


class ToolRule(_Section):
    """What the policy says about one tool; an unset field keeps the entry point's rule."""

    threshold: ByteSize | None = Field(default=None, ge=0)
    threshold_unit: Literal["chars", "bytes"] | None = None
    head_bytes: ByteSize | None = Field(default=None, ge=0)
    tail_bytes: ByteSize | None = Field(default=None, ge=0)
    max_stored_bytes: ByteSize | None = Field(default=None, ge=64 * 1024)
    #: Never stored: the result reaches the model as the tool gave it (a hook or the proxy
    #: passes it on untouched; the library keeps it inline, clipped to the hard cap).
    never_spill: bool = False

    def applied(self, base: ToolPolicy) -> ToolPolicy:
        update = {k: int(v) if isinstance(v, int) else v
                  for k, v in self.model_dump(exclude={"never_spill"}).items() if v is not None}
        return base.model_copy(update=update) if update else base


class SpillSection(_Section):
    """What stays in the model's context, and the cap on one stored output."""

    pointer_style: Literal["tools", "cli"] = Field(default="tools",
                                                   json_schema_extra=env("S3SPILL_POINTER_STYLE"))
    secrets: Literal["off", "preview", "at_rest"] = Field(default="preview",
                                                          json_schema_extra=env("S3SPILL_SECRETS"))
    hard_cap_chars: int = Field(default=_SPILL["hard_cap_chars"].default, ge=2_000,
                                json_schema_extra=env("S3SPILL_HARD_CAP_CHARS"))
    max_inline_tokens: int | None = Field(default=None, ge=0,
                                          json_schema_extra=env("S3SPILL_MAX_INLINE_TOKENS"))
    store_deadline: float = Field(default=_SPILL["store_deadline"].default, gt=0,
                                  json_schema_extra=env("S3SPILL_STORE_DEADLINE"))
    #: The one cap on a stored output: foreground, background, proxy and hook outputs alike.
    max_stored_bytes: ByteSize = Field(default=_SPILL["max_stored_bytes"].default, ge=64 * 1024,
                                       json_schema_extra=env("S3SPILL_MAX_STORED_BYTES"))
    capped_tail_bytes: ByteSize = Field(default=_SPILL["capped_tail_bytes"].default, ge=1024,
                                        json_schema_extra=env("S3SPILL_CAPPED_TAIL_BYTES"))
    #: The rule for shell-like tools and for every other tool, on top of the entry point's.
    shell: ToolRule = ToolRule()
    default: ToolRule = ToolRule()


class QuotaSection(_Section):
    """Bytes and objects one session, and the whole store prefix, may store (unset: no limit)."""

    session_bytes: ByteSize | None = Field(default=None, ge=0)
    session_objects: int | None = Field(default=None, ge=0)
    prefix_bytes: ByteSize | None = Field(default=None, ge=0)
    prefix_objects: int | None = Field(default=None, ge=0)


class LiveSection(_Section):
    """Background commands (``run --background``): cadence, liveness and buffers."""

    segment_interval: float = Field(default=_LIVE["segment_interval"].default, gt=0, le=60,
                                    json_schema_extra=env("S3SPILL_SEGMENT_INTERVAL"))
    segment_bytes: ByteSize = Field(default=_LIVE["segment_bytes"].default, ge=64, le=64 * 1024 * 1024,
                                    json_schema_extra=env("S3SPILL_SEGMENT_BYTES"))
    heartbeat_interval: float = Field(default=_LIVE["heartbeat_interval"].default, gt=0,
                                      json_schema_extra=env("S3SPILL_HEARTBEAT_INTERVAL"))
    #: A running state whose heartbeat is older than this reads as lost (its writer died).
    lost_after: Duration = Field(default=timedelta(seconds=_LIVE["lost_after"].default),
                                 json_schema_extra=env("S3SPILL_LOST_AFTER"))
    head_bytes: ByteSize = Field(default=_LIVE["head_bytes"].default, ge=0)
    queue_bytes: ByteSize = Field(default=_LIVE["queue_bytes"].default, ge=64 * 1024)


class GcSection(_Section):
    """Garbage collection's TTLs and batch bound (``gc plan|apply|run``)."""

    orphan_ttl: Duration = Field(default=timedelta(hours=24), json_schema_extra=env("S3SPILL_ORPHAN_TTL"))
    session_ttl: Duration = Field(default=timedelta(hours=24), json_schema_extra=env("S3SPILL_SESSION_TTL"))
    tombstone_ttl: Duration = Field(default=timedelta(days=30),
                                    json_schema_extra=env("S3SPILL_TOMBSTONE_TTL"))
    max_deletions: int | None = Field(default=10_000, ge=0, json_schema_extra=env("S3SPILL_MAX_DELETIONS"))


class ProxySection(_Section):
    """``s3spill mcp-proxy``'s own knobs (its thresholds are ``[tools]`` / ``[harness.mcp-proxy]``)."""

    tool_prefix: str = Field(default="s3spill_", pattern=r"^[A-Za-z0-9_.-]{0,40}$",
                             json_schema_extra=env("S3SPILL_TOOL_PREFIX"))
    max_inline_tokens: int | None = Field(default=25_000, ge=1, json_schema_extra=env("S3SPILL_MAX_TOKENS"))
    max_image_bytes: ByteSize = Field(default=ByteSize(5 * 1024 * 1024), ge=0)


class HarnessSection(_Section):
    """Rules that apply only in one entry point (``[harness.claude-code.tools.Read]``)."""

    tools: dict[str, ToolRule] = Field(default_factory=dict)


class FleetPolicy(_Section):
    """The whole policy file; every section optional, every key checked (a typo is an error)."""

    store: StoreSection = StoreSection()
    project: ProjectSection = ProjectSection()
    spill: SpillSection = SpillSection()
    tools: dict[str, ToolRule] = Field(default_factory=dict)
    harness: dict[Literal["claude-code", "gemini-cli", "mcp-proxy", "run", "spill", "mcp"],
                  HarnessSection] = Field(default_factory=dict)
    quota: QuotaSection = QuotaSection()
    live: LiveSection = LiveSection()
    gc: GcSection = GcSection()
    proxy: ProxySection = ProxySection()

    def rules(self, harness: str | None) -> dict[str, ToolRule]:
        """The per-tool rules in force in ``harness``: ``[tools]``, then its own on top."""
        merged = dict(self.tools)
        for name, section in self.harness.items():
            if name == harness:
                merged.update(section.tools)
        return merged


def env_name(section: str | None, key: str, extra: object) -> str:
    """The variable of one leaf key (see the module docstring)."""
    if isinstance(extra, dict) and isinstance(extra.get("env"), str):
        return str(extra["env"])
    return "S3SPILL_" + "_".join(p.upper() for p in (section, key) if p)


def leaf_keys() -> list[tuple[tuple[str, str], str]]:
    """((section, key), variable) of every scalar key: what ``config show`` lists and the
    environment can set (tables keyed by tool name are files only)."""
    out: list[tuple[tuple[str, str], str]] = []
    for section, field in FleetPolicy.model_fields.items():
        model = field.annotation
        if not (isinstance(model, type) and issubclass(model, _Section)):
            continue
        for key, sub in model.model_fields.items():
            if isinstance(sub.annotation, type) and issubclass(sub.annotation, _Section):
                continue
            out.append(((section, key), env_name(section, key, sub.json_schema_extra)))
    return out
