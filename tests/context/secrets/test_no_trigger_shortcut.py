"""A window no secret rule's trigger matches is answered without building the detector."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROBE = """
import sys
from s3spill.context.secrets import detector
from s3spill.context.secrets.masking import mask_view, mask_window
assert mask_view(b"make: all targets built\\n", b"before\\n", b"after\\n") == b"make: all targets built\\n"
assert mask_window(b"ok\\n").counts == {}
print(detector._DETECTOR is None, "detect_secrets" in sys.modules)
masked = mask_window(b"AWS_KEY=AKIAIOSFODNN7EXAMPLE\\n")
print(detector._DETECTOR is None, dict(masked.counts))
"""


def test_plain_text_never_builds_the_detector_and_a_secret_still_is_masked() -> None:
    """No trigger: unchanged, no detect-secrets import; an AWS key right after: masked as ever."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout.splitlines()
    assert out[0] == "True False"
    assert out[1] == "False {'aws-key': 1}"
