"""Outputs of known kinds for the typed-output tests: a PNG, a gzip file, JSON, CSV, NDJSON."""

from __future__ import annotations

import gzip
import json
import random
import struct
import zlib


def png(width: int, height: int, *, seed: int = 1) -> bytes:
    """A valid RGB PNG of noise (so it does not compress to nothing)."""
    rng = random.Random(seed)
    raw = b"".join(b"\0" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def gzip_file(size: int, *, seed: int = 2) -> bytes:
    """A gzip file of about ``size`` bytes (random lines compress little)."""
    rng = random.Random(seed)
    text = b"".join(f"{rng.random():.17f} {rng.getrandbits(64):x}\n".encode() for _ in range(size // 20))
    return gzip.compress(text, mtime=0)


def one_line_json(items: int, *, pad: int = 200) -> bytes:
    """A minified, one-line JSON document shaped like ``kubectl get -o json``."""
    doc = {
        "apiVersion": "v1",
        "items": [{"kind": "Pod", "metadata": {"name": f"pod-{i:07d}", "uid": f"{i:032x}"},
                   "spec": {"containers": [{"image": "x" * (pad + i % 7), "args": ["a", "b\"c"]}]},
                   "status": {"phase": "Running", "ready": i % 3 == 0}}
                  for i in range(items)],
        "kind": "List",
        "metadata": {"resourceVersion": "12345"},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def csv_with_quoted_newlines(rows: int) -> bytes:
    """A CSV whose every fifth record has a quoted field spanning two lines."""
    out = ["id,name,comment\r\n"]
    for i in range(rows):
        comment = f'"multi\nline, {i}"' if i % 5 == 0 else f"plain {i}"
        out.append(f'{i},"name ""{i}""",{comment}\r\n')
    return "".join(out).encode()


def ndjson(records: int) -> bytes:
    return b"".join(json.dumps({"n": i, "msg": f"event {i}", "pad": "y" * (i % 50)}).encode() + b"\n"
                    for i in range(records))
