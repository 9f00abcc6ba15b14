"""Secrets kept out of what the model sees: detection and masking, in one place.

``detector`` finds credentials in a line (detect-secrets' rules behind one RE2 prefilter);
``masking`` replaces them in place, lengths kept, in a whole text (a preview, a page, a
grep result); ``stream`` does the same to a stream on its way to the store (``at_rest``).
Pure: no I/O, no logging; the spill's glue (counts, the notice's sentence) is
:mod:`s3spill.spill.secrets`.

Names are imported on first use (PEP 562): ``s3spill run`` asks only
:mod:`.triggers` whether a small output can hold a secret at all, without building the
detector (detect-secrets' import and the RE2 sets cost ~0.2 s).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not imported from typing: the fast paths skip that import
if TYPE_CHECKING:
    from s3spill.context.secrets.detector import Finding as Finding
    from s3spill.context.secrets.detector import SecretDetector as SecretDetector
    from s3spill.context.secrets.detector import default_detector as default_detector
    from s3spill.context.secrets.masking import Redacted as Redacted
    from s3spill.context.secrets.masking import describe_counts as describe_counts
    from s3spill.context.secrets.masking import marker as marker
    from s3spill.context.secrets.masking import mask_view as mask_view
    from s3spill.context.secrets.masking import mask_window as mask_window
    from s3spill.context.secrets.masking import redact_bytes as redact_bytes
    from s3spill.context.secrets.masking import redact_text as redact_text
    from s3spill.context.secrets.stream import StreamRedactor as StreamRedactor

_EXPORTS: dict[str, str] = {
    "Finding": "s3spill.context.secrets.detector",
    "Redacted": "s3spill.context.secrets.masking",
    "SecretDetector": "s3spill.context.secrets.detector",
    "StreamRedactor": "s3spill.context.secrets.stream",
    "default_detector": "s3spill.context.secrets.detector",
    "describe_counts": "s3spill.context.secrets.masking",
    "marker": "s3spill.context.secrets.masking",
    "mask_view": "s3spill.context.secrets.masking",
    "mask_window": "s3spill.context.secrets.masking",
    "redact_bytes": "s3spill.context.secrets.masking",
    "redact_text": "s3spill.context.secrets.masking",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    from s3spill.lazy_exports import load

    return load(globals(), _EXPORTS, name)
