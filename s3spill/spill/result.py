"""What one spill call returns: the model's text and where the rest of the output went.

Its own module so that the job and the previews that render it share the one model
without importing each other.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from s3spill.context.pointer import RenderedContext
from s3spill.models import ArtifactReference, Record

__all__ = ["Mode", "SpillResult", "degraded_mode", "pointer_mode"]

Mode = Literal["inline", "clipped", "pointer", "pointer_hard_cap", "degraded", "degraded_hard_cap"]


class SpillResult(Record):
    """What the model sees of one tool result, and where the rest went (if anywhere)."""

    kind: Literal["spill_result"] = "spill_result"
    #: The model-facing text; within the policy's budget (hard cap always, tokens when set).
    context_text: str
    #: The stored full output; None when inline, clipped or degraded.
    artifact: ArtifactReference | None = None
    spilled: bool
    #: Bytes of the whole output (UTF-8 for text).
    total_bytes: int = Field(ge=0)
    #: Bytes of the output the context text does not show verbatim.
    omitted: int = Field(ge=0)
    #: Why the output could not be saved; set only when it was too large and the store failed.
    degraded_reason: str | None = None
    mode: Mode
    tool: str
    call_id: str | None = None
    exit_code: int | None = None
    #: How the output was captured, when that needs saying (e.g. a background process kept the
    #: pipe open); the pointer's notice says it too.
    note: str | None = None
    #: Secrets masked, by kind (s3spill.context.secrets); empty when none were found.
    masked: dict[str, int] = Field(default_factory=dict)
    #: True when they were masked in the stored copy too (policy ``secrets="at_rest"``).
    masked_at_rest: bool = False
    #: Bytes of the stored copy when it is truncated (over the policy's ``max_stored_bytes``).
    stored_bytes: int | None = Field(default=None, ge=0)


def pointer_mode(rendered: RenderedContext) -> Mode:
    return "pointer" if rendered.mode == "pointer" else "pointer_hard_cap"


def degraded_mode(rendered: RenderedContext) -> Mode:
    return "degraded" if rendered.mode == "degraded" else "degraded_hard_cap"
