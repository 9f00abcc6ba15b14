"""Binary outputs: one short notice for the model, hexdump reads by byte offset, no raw bytes."""

from __future__ import annotations

import hashlib
import json
import random
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from s3spill.agent.tools import AgentTools
from s3spill.artifacts.store import ArtifactStore
from s3spill.context.policy import SpillPolicy
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import Fault, FaultyStore, child_env
from s3spill.typed.bytepage import unhexdump
from tests.spill.outputs import source_id_of
from tests.typed.samples import gzip_file, png

SESSION = "session-binary-1"
#: Control characters a model or a terminal must not get (newline and nothing else allowed).
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _random(size: int) -> bytes:
    return random.Random(5).randbytes(size)


def _assert_clean(text: str) -> None:
    assert not CONTROL.search(text), repr(CONTROL.search(text))
    assert "\ufffd" not in text


def _follow_hexdump(arts: ArtifactStore, sid: str, *, nbytes: int = 65_536) -> bytes:
    out = bytearray()
    offset = 0
    while True:
        text = arts.read_bytes(sid, byte_offset=offset, nbytes=nbytes).render()
        _assert_clean(text)
        out += unhexdump(text)
        footer = text.rstrip("\n").rsplit("\n", 1)[-1]
        if footer.startswith("[EOF"):
            return bytes(out)
        found = re.search(r"continue with byte_offset=(\d+)\]$", footer)
        assert found, footer
        offset = int(found.group(1))


def test_five_megabytes_of_random_bytes_through_the_spiller(store: ObjectStore) -> None:
    """5 MB of random bytes: a short notice (kind, size, digest, hexdump), clean, and exact reads."""
    data = _random(5_000_000)
    with Spiller(store, SESSION, journal=None) as spiller:
        result = spiller.externalize(iter([data[i : i + 65536] for i in range(0, len(data), 65536)]),
                                     "bash", "c-1", exit_code=0)
    text = result.context_text
    assert result.spilled and result.mode == "pointer" and result.omitted == len(data)
    _assert_clean(text)
    assert len(text) < 1500
    assert "Binary output of bash (call c-1, exit code 0)" in text and "binary data" in text
    assert f"{len(data):,} bytes" in text and hashlib.sha256(data).hexdigest() in text
    assert unhexdump(text) == data[:64]
    assert "byte_offset=" in text and "offset=<lines" not in text
    arts = ArtifactStore(store, session_id=SESSION)
    sid = source_id_of(text)
    assert arts.index(sid).output_kind == "binary"
    assert _follow_hexdump(arts, sid) == data


def test_png_and_gzip_are_named(local_store: LocalStore) -> None:
    """A PNG notice names the format and its size; a gzip notice names gzip."""
    image = png(300, 200)
    with Spiller(local_store, SESSION, journal=None) as spiller:
        shown = spiller.externalize(image, "bash").context_text
        packed = spiller.externalize(gzip_file(200_000), "bash").context_text
    assert "Portable Network Graphics file, 300x200 (image/png)" in shown
    assert "GZIP Archive file (application/x-gzip)" in packed
    for text in (shown, packed):
        _assert_clean(text)
    arts = ArtifactStore(local_store, session_id=SESSION)
    assert _follow_hexdump(arts, source_id_of(shown), nbytes=4096) == image


def test_a_small_binary_output_is_shown_whole_as_hex(local_store: LocalStore) -> None:
    """Under the threshold, a binary output is its complete hexdump, never raw bytes."""
    data = b"\x00\x01\x1b[2J\xff\xfe" * 10
    with Spiller(local_store, SESSION, journal=None) as spiller:
        result = spiller.externalize(data, "bash")
    assert result.mode == "inline" and not result.spilled and result.omitted == 0
    _assert_clean(result.context_text)
    assert unhexdump(result.context_text) == data
    assert "Hexdump (all of it)" in result.context_text


def test_a_binary_output_that_cannot_be_stored_says_so(local_store: LocalStore) -> None:
    """A store that refuses: the notice says the output could NOT be saved, and has no locator."""
    data = _random(500_000)
    store = FaultyStore(local_store, [Fault("*", "unavailable", times=10**9)])
    with Spiller(store, SESSION, journal=None) as spiller:
        result = spiller.externalize(data, "bash")
    assert result.mode == "degraded" and not result.spilled
    _assert_clean(result.context_text)
    assert "could NOT be saved" in result.context_text and "source_id=" not in result.context_text
    assert unhexdump(result.context_text) == data[:64]


def test_hexdump_pages_fit_their_budget_and_tools_read_by_byte(local_store: LocalStore) -> None:
    """The read tool pages a binary artifact as a hexdump within budget, from any byte offset."""
    data = _random(300_000)
    with Spiller(local_store, SESSION, journal=None) as spiller:
        sid = source_id_of(spiller.externalize(data, "bash").context_text)
    tools = AgentTools(local_store, SESSION, policy=SpillPolicy())
    first = tools.call("read_artifact", {"source_id": sid})
    assert not first.is_error and first.structured is not None
    _assert_clean(first.text)
    assert first.structured["output_kind"] == "binary" and first.structured["byte_offset"] == 0
    assert unhexdump(first.text) == data[: first.structured["next_byte_offset"]]
    later = tools.call("read_artifact", {"source_id": sid, "byte_offset": 299_990, "bytes": 100})
    assert unhexdump(later.text) == data[299_990:] and later.structured is not None
    assert later.structured["eof"] is True
    beyond = tools.call("read_artifact", {"source_id": sid, "byte_offset": 300_000})
    assert beyond.is_error and "beyond the end" in beyond.text


def test_grep_of_a_binary_artifact_is_refused_without_printing_its_bytes(local_store: LocalStore,
                                                                       tmp_path: Path) -> None:
    """grep over binary data is one clean refusal that points at the hexdump, never raw bytes."""
    data = _random(300_000)
    with Spiller(local_store, SESSION, journal=None) as spiller:
        sid = source_id_of(spiller.externalize(data, "bash").context_text)
    tools = AgentTools(local_store, SESSION, policy=SpillPolicy())
    refused = tools.call("grep_artifact", {"source_id": sid, "pattern": "a"})
    assert refused.is_error and "grep searches text" in refused.text
    _assert_clean(refused.text)
    spilled = _cli(tmp_path, "spill", "-", input_bytes=data)
    cli_sid = spilled.stdout.decode().splitlines()[0]
    proc = _cli(tmp_path, "grep", cli_sid, "a")
    assert proc.returncode == 2 and proc.stdout == b"" and b"--byte-offset" in proc.stderr
    _assert_clean(proc.stderr.decode())


def _cli(tmp_path: Path, *args: str, input_bytes: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = child_env({"S3SPILL_STORE": (tmp_path / "store").as_uri(), "S3SPILL_SESSION": SESSION})
    return subprocess.run([sys.executable, "-m", "s3spill", *args], env=env, capture_output=True,
                          input=input_bytes, timeout=120)


@pytest.mark.slow
def test_run_cat_of_random_bytes_and_read_never_print_control_bytes(tmp_path: Path) -> None:
    """`s3spill run -- cat r.bin` prints the notice; `s3spill read` pages it as a clean hexdump."""
    data = _random(5_000_000)
    (tmp_path / "r.bin").write_bytes(data)
    proc = _cli(tmp_path, "run", "--", "cat", str(tmp_path / "r.bin"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode("ascii")  # plain ASCII: it decodes strictly
    _assert_clean(out)
    assert "binary data, 5,000,000 bytes" in out
    assert "`s3spill read <source_id> --byte-offset <n> --bytes <count>`" in out  # run: CLI style
    sid = source_id_of(out)
    page = _cli(tmp_path, "read", sid)
    assert page.returncode == 0, page.stderr
    shown = page.stdout.decode("ascii")
    _assert_clean(shown)
    assert unhexdump(shown) == data[:4096]
    assert "[more bytes follow; continue with --byte-offset 4096]" in shown
    tail = _cli(tmp_path, "read", sid, "--byte-offset", "4999000", "--bytes", "1000")
    assert unhexdump(tail.stdout.decode("ascii")) == data[4_999_000:]
    assert b"[EOF: byte 4,999,999 is the last byte]" in tail.stdout


def test_cli_spill_records_the_kind(tmp_path: Path) -> None:
    """`s3spill spill FILE` detects the file's kind and stores it in the index."""
    (tmp_path / "img.png").write_bytes(png(40, 30))
    proc = _cli(tmp_path, "spill", str(tmp_path / "img.png"), "--json")
    assert proc.returncode == 0, proc.stderr
    ref = json.loads(proc.stdout)
    index = ArtifactStore(LocalStore(tmp_path / "store"), session_id=SESSION).index(ref["source_id"])
    assert index.output_kind == "binary" and index.output_description is not None
    assert index.output_description.endswith("40x30") and ref["summary"].startswith("Portable Network")


def test_omitted_image_blocks_are_stored_as_images(local_store: LocalStore) -> None:
    """An image block left out of a budgeted result is stored as a binary PNG artifact, sized."""
    from s3spill.context.block_plan import ImageBlock, TextBlock

    def header_only(width: int, height: int) -> bytes:  # what the pricer and detector read
        return (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + struct.pack(">II", width, height)
                + bytes(range(256)) * 20)

    blocks = [TextBlock("report\n" + "row of text\n" * 300), ImageBlock(header_only(1600, 1200)),
              ImageBlock(header_only(1024, 768))]
    with Spiller(local_store, SESSION, SpillPolicy(max_inline_tokens=3_000), journal=None) as spiller:
        result = spiller.externalize_blocks(blocks, "browser", "c1")
    arts = ArtifactStore(local_store, session_id=SESSION)
    stored = [arts.index(ref.source_id) for ref in result.images.values() if ref is not None]
    assert stored and all(i.output_kind == "binary" for i in stored)
    assert {i.output_description for i in stored} <= {
        "Portable Network Graphics file, 1600x1200", "Portable Network Graphics file, 1024x768"}
    assert result.artifact is not None and arts.index(result.artifact.source_id).output_kind == "text"
