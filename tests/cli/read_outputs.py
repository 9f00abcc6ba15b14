"""The artifacts and CLI reads whose printed bytes ``test_read_outputs`` pins (issue 35).

The read path was rewritten without pydantic (plain index, page and grep classes); the
expected outputs in ``data/read_outputs.json`` were recorded with the pydantic read path
before that change (``python -m tests.cli.read_outputs --record``), so the test compares
what a read prints now with what it printed then, byte for byte: text, log, JSON, CSV and
binary artifacts, masked and with ``--show-secrets``, plain and ``--json``, and the errors
of a refused read. Source ids differ per run, so they are replaced by ``<ID:name>``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from s3spill.artifacts.store import ArtifactStore
from s3spill.store.local import LocalStore

EXPECTED = Path(__file__).with_name("data") / "read_outputs.json"
SESSION = "s"
#: A credential every masked read must hide (an AWS key pair the detector knows).
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # noqa: S105 - AWS's documented example


def _log() -> bytes:
    lines = [f"{i:06d} INFO request handled path=/api/v1/items/{i * 7:08d}"
             f" status={500 if i % 37 == 0 else 200}" for i in range(3000)]
    lines[1200] = f"2026-12-02 export AWS_ACCESS_KEY_ID={AWS_KEY}"
    lines[1201] = AWS_SECRET
    lines[1500] = "long " + "x" * 5000 + " status=500 end"
    lines[1700] = "caf\u00e9 \u00fcber \u4e2d\u6587 emoji \U0001f600 tab\there"
    return ("\n".join(lines) + "\n").encode() + b"bad bytes \xff\xfe here\n" + b"no newline at end"


def _json() -> bytes:
    doc = {"items": [{"id": i, "name": f"item-{i}", "token": AWS_KEY if i == 3 else None}
                     for i in range(40)], "meta": {"count": 40, "note": "caf\u00e9"}}
    return json.dumps(doc, indent=2).encode()


def _csv() -> bytes:
    rows = ["id,name,comment"] + [f'{i},name-{i},"multi\nline {i}"' if i % 10 == 0 else f"{i},name-{i},plain"
                                  for i in range(200)]
    rows[50] = f"50,key,{AWS_KEY}"
    return ("\n".join(rows) + "\n").encode()


def _binary() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 20 + AWS_KEY.encode() + bytes(range(255, -1, -1))


#: name -> (its bytes, output kind, description)
ARTIFACTS: dict[str, tuple[Callable[[], bytes], str, str | None]] = {
    "log": (_log, "text", None),
    "json": (_json, "json", "JSON object"),
    "csv": (_csv, "csv", "CSV, 3 columns"),
    "binary": (_binary, "binary", "PNG image data"),
    "empty": (lambda: b"", "text", None),
}

#: (artifact, CLI arguments after the source id); each is run masked and --show-secrets.
READS: list[tuple[str, tuple[str, ...]]] = [
    ("log", ("read",)),
    ("log", ("read", "--offset", "1190", "--limit", "30")),
    ("log", ("read", "--offset", "1190", "--limit", "30", "--json")),
    ("log", ("read", "--offset", "1499", "--limit", "3", "--max-chars", "1200")),
    ("log", ("read", "--offset", "1500", "--char-offset", "700", "--limit", "2", "--max-chars", "1500")),
    ("log", ("read", "--offset", "1695", "--limit", "10", "--json")),
    ("log", ("read", "--offset", "2995", "--limit", "20")),
    ("log", ("read", "--offset", "2998", "--json")),
    ("log", ("read", "--since", "100000", "--limit", "5")),
    ("log", ("read", "--byte-offset", "0", "--bytes", "256")),
    ("log", ("grep", "status=500", "--max-matches", "5")),
    ("log", ("grep", "status=500", "--max-matches", "3", "--context", "2", "--json")),
    ("log", ("grep", "AWS|aws_secret", "-i")),
    ("log", ("grep", "no such thing")),
    ("log", ("grep", "\\xff|bad")),
    ("log", ("read", "--offset", "99999")),
    ("log", ("grep", "(unclosed")),
    ("json", ("read",)),
    ("json", ("read", "--path", "/items/3")),
    ("json", ("read", "--path", "/items", "--offset", "2", "--limit", "3", "--json")),
    ("json", ("grep", "AKIA")),
    ("csv", ("read", "--limit", "20")),
    ("csv", ("read", "--record-offset", "45", "--limit", "10")),
    ("csv", ("read", "--record-offset", "5", "--limit", "8", "--json")),
    ("csv", ("grep", "multi|key", "--max-matches", "6")),
    ("csv", ("grep", "line 1", "--json")),
    ("binary", ("read",)),
    ("binary", ("read", "--byte-offset", "5120", "--bytes", "64", "--json")),
    ("binary", ("grep", "AKIA")),
    ("empty", ("read",)),
    ("empty", ("read", "--json")),
    ("empty", ("grep", "x")),
]


def write_artifacts(store: LocalStore, chunk_size: int = 4096) -> dict[str, str]:
    """The artifacts of :data:`ARTIFACTS` in ``store`` (small chunks: pages cross them)."""
    from s3spill.config import TransferConfig

    arts = ArtifactStore(store, TransferConfig(index_chunk_size=chunk_size), session_id=SESSION)
    ids = {}
    for name, (make, kind, desc) in ARTIFACTS.items():
        ref = arts.write(SESSION, [make()], "bench", output_kind=kind,  # type: ignore[arg-type]
                         output_description=desc)
        ids[name] = ref.source_id
    return ids


def outputs(cli: Callable[..., tuple[int, str, str]], ids: dict[str, str]) -> dict[str, tuple[int, str, str]]:
    """What each read of :data:`READS` printed (code, stdout, stderr), ids normalised."""
    got: dict[str, tuple[int, str, str]] = {}
    for name, argv in READS:
        for show in (False, True):
            extra = ("--show-secrets",) if show else ()
            code, out, err = cli(argv[0], ids[name], *argv[1:], *extra)
            for other, sid in ids.items():
                out, err = out.replace(sid, f"<ID:{other}>"), err.replace(sid, f"<ID:{other}>")
            got[" ".join((name, *argv, *extra))] = (code, out, err)
    return got


def _record() -> None:
    import contextlib
    import io
    import os
    import tempfile

    from s3spill.cli import main

    def cli(*argv: str) -> tuple[int, str, str]:
        buf, err = io.BytesIO(), io.StringIO()
        out = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse's usage errors
                code = int(exc.code or 0)
            out.flush()
        return code, buf.getvalue().decode("utf-8"), err.getvalue()

    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(S3SPILL_STORE=Path(tmp, "store").as_uri(), S3SPILL_SESSION=SESSION,
                          S3SPILL_USAGE="off")
        ids = write_artifacts(LocalStore(Path(tmp, "store")))
        EXPECTED.write_text(json.dumps(outputs(cli, ids), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    _record()
