"""What ``s3spill mcp-proxy`` spills, and what it calls its own tools: one file, or flags.

Why a token budget by default: the harnesses the proxy exists for reject MCP results by
tokens, not by bytes (Claude Code's ``MAX_MCP_OUTPUT_TOKENS`` defaults to 25,000), and an
image costs tokens but no characters, so without a token budget no image would ever be
stored. Why a byte limit per image: a picture above the model API's per-image limit is
rejected whatever its vision price, so it is priced as what it is on the wire — base64
text — and is stored instead of sent.

The file (JSON)::

    {"tool_prefix": "s3spill_", "max_inline_tokens": 25000, "hard_cap_chars": 100000,
     "thresholds": {"read_text_file": 200000}, "never_spill": ["get-env"], "call_timeout": 1800}

``thresholds`` are bytes of text per tool name (the upstream's own names); a tool in
``never_spill`` is passed through whatever its size.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from s3spill.agent.tools import LIST_TOOL
from s3spill.context.block_plan import ImageBlock, default_image_price
from s3spill.context.policy import DEFAULT_POLICY, GREP_TOOL, READ_TOOL, SpillPolicy, ToolPolicy
from s3spill.context.tokens import BYTES_PER_TOKEN
from s3spill.errors import ConfigError
from s3spill.fleet.policy_file import LoadedPolicy

MiB = 1024 * 1024
#: Anthropic's Messages API refuses an image over 5 MB; a larger one is never worth sending.
DEFAULT_MAX_IMAGE_BYTES = 5 * MiB
#: Half an hour: longer than any tool a harness waits for by default, short enough that a
#: call a wedged upstream never answers does not hang the agent's turn for good.
DEFAULT_CALL_TIMEOUT = 1800.0


class ProxySettings(BaseModel):
    """The proxy's spill rules; frozen, validated, loaded from a file and/or flags."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Put before read_artifact / grep_artifact / list_artifacts so they cannot take an
    #: upstream tool's name (a clash is refused, never shadowed).
    tool_prefix: str = Field(default="s3spill_", pattern=r"^[A-Za-z0-9_.-]{0,40}$")
    max_inline_tokens: int | None = Field(default=25_000, ge=1)
    hard_cap_chars: int = Field(default=100_000, ge=2_000)
    max_image_bytes: int = Field(default=DEFAULT_MAX_IMAGE_BYTES, ge=0)
    thresholds: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    never_spill: frozenset[str] = frozenset()
    #: Seconds a ``tools/call`` may wait for the upstream's answer before the client gets a
    #: timeout error and the call is cancelled upstream (None: no limit).
    call_timeout: float | None = Field(default=DEFAULT_CALL_TIMEOUT, gt=0)

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: object) -> ProxySettings:
        """The file's settings (if any) with ``overrides`` on top; a bad file is a ConfigError."""
        data: dict[str, Any] = {}
        if path is not None:
            try:
                loaded = cls.model_validate_json(Path(path).read_bytes())
            except OSError as exc:
                raise ConfigError(f"cannot read proxy config {path}: {exc.strerror}") from None
            except ValidationError as exc:
                raise ConfigError(f"proxy config {path} does not parse: "
                                  f"{str(exc).splitlines()[0]} ({exc.errors()[0]['msg']})") from None
            data = loaded.model_dump()
        for key, value in overrides.items():
            if value is None:
                continue
            if key == "thresholds":
                data["thresholds"] = {**(data.get("thresholds") or {}), **value}  # type: ignore[dict-item]
            elif key == "never_spill":
                data["never_spill"] = frozenset(data.get("never_spill") or ()) | frozenset(value)  # type: ignore[call-overload]
            else:
                data[key] = value
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid proxy setting: {exc.errors()[0]['loc']}: "
                              f"{exc.errors()[0]['msg']}") from None

    @classmethod
    def from_policy(cls, fleet: LoadedPolicy, legacy: str | Path | None = None,
                    **flags: Any) -> ProxySettings:
        """The proxy's settings under the fleet policy: a legacy JSON file (``--config
        FILE.json``) at the bottom, then what the policy sets (``[proxy]``, ``spill.hard_cap_chars``,
        the ``[tools]`` and ``[harness.mcp-proxy]`` thresholds and never_spill), then flags."""
        base = cls.load(legacy)
        data = base.model_dump()
        for key in ("tool_prefix", "max_inline_tokens", "max_image_bytes"):
            if fleet.is_set("proxy", key):
                value = fleet.value("proxy", key)
                data[key] = int(value) if isinstance(value, int) else value
        if fleet.is_set("spill", "hard_cap_chars"):
            data["hard_cap_chars"] = fleet.policy.spill.hard_cap_chars
        rules = fleet.policy.rules("mcp-proxy")
        thresholds = {**base.thresholds,
                      **{n: int(r.threshold) for n, r in rules.items() if r.threshold is not None}}
        never = set(base.never_spill) | {n for n, r in rules.items() if r.never_spill}
        thresholds.update(flags.pop("thresholds", None) or {})
        never.update(flags.pop("never_spill", None) or ())
        data.update({k: v for k, v in flags.items() if v is not None})
        return cls.load(None, **{**data, "thresholds": thresholds, "never_spill": frozenset(never)})

    def fleet_policy(self, fleet: LoadedPolicy) -> SpillPolicy:
        """:meth:`policy` with the fleet policy's spill keys on top (cap, secrets, ...)."""
        return fleet.spill_policy(self.policy(), "mcp-proxy")

    @property
    def read_tool(self) -> str:
        return self.tool_prefix + READ_TOOL

    @property
    def grep_tool(self) -> str:
        return self.tool_prefix + GREP_TOOL

    @property
    def list_tool(self) -> str:
        return self.tool_prefix + LIST_TOOL

    @property
    def own_tools(self) -> tuple[str, str, str]:
        return (self.read_tool, self.grep_tool, self.list_tool)

    def price_binary(self, block: ImageBlock) -> int:
        """Tokens a binary block costs the model: the vision price for an image it can be
        shown, its base64 text for anything else (audio, files, oversized images)."""
        if block.media_type.lower().startswith("image/") and len(block.data) <= self.max_image_bytes:
            return default_image_price(block)
        return math.ceil(math.ceil(len(block.data) / 3) * 4 / BYTES_PER_TOKEN)

    def policy(self) -> SpillPolicy:
        """The Spiller's policy: our tool names in every pointer, the per-tool thresholds."""
        tools = {name: ToolPolicy(**{**DEFAULT_POLICY.model_dump(), "threshold": limit})
                 for name, limit in self.thresholds.items()}
        return SpillPolicy(read_tool=self.read_tool, grep_tool=self.grep_tool, tools=tools,
                           max_inline_tokens=self.max_inline_tokens, hard_cap_chars=self.hard_cap_chars,
                           image_pricer=self.price_binary)
