"""A read decodes zstd frames with the package's C backend alone, the same classes as the package's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHILD = """
import sys
from s3spill.artifacts import zstd_light
backend = zstd_light.backend()
frame = backend.ZstdCompressor().compress(b"line\\n" * 1000)
assert zstd_light.decompress(frame, 5000) == b"line\\n" * 1000
alone = "zstandard" not in sys.modules and "platform" not in sys.modules
try:
    zstd_light.decompress(b"not a frame", 10)
except zstd_light.ZstdError():
    refused = True
import zstandard
same = zstandard.ZstdError is backend.ZstdError, zstandard.ZstdDecompressor is backend.ZstdDecompressor
print(alone, refused, *same, zstd_light.backend() is zstandard)
"""


@pytest.mark.parametrize(("policy", "expected"), [(None, "True True True True True"),
                                                  ("cffi_fallback", "False True True True True")])
def test_the_backend_alone_is_what_the_package_exports(policy: str | None, expected: str) -> None:
    """Without the package's __init__ (no ``platform``), unless an import policy is set; a later
    ``import zstandard`` reuses the loaded backend (one ``ZstdError`` class)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_ZSTANDARD_IMPORT_POLICY"}
    if policy:
        env["PYTHON_ZSTANDARD_IMPORT_POLICY"] = policy
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True,
                         timeout=60).stdout
    assert out.split() == expected.split()
