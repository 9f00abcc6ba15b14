"""Secrets kept out of what the model sees: detection and masking, in one place.

``detector`` finds credentials in a line (detect-secrets' rules behind one RE2 prefilter);
``masking`` replaces them in place, lengths kept, in a whole text (a preview, a page, a
grep result); ``stream`` does the same to a stream on its way to the store (``at_rest``).
Pure: no I/O, no logging; the spill's glue (counts, the notice's sentence) is
:mod:`s3spill.spill.secrets`.
"""

from __future__ import annotations

from s3spill.context.secrets.detector import Finding, SecretDetector, default_detector
from s3spill.context.secrets.masking import (
    Redacted,
    describe_counts,
    marker,
    mask_view,
    mask_window,
    redact_bytes,
    redact_text,
)
from s3spill.context.secrets.stream import StreamRedactor

__all__ = ["Finding", "Redacted", "SecretDetector", "StreamRedactor", "default_detector", "describe_counts",
           "marker", "mask_view", "mask_window", "redact_bytes", "redact_text"]
