"""A cap on one output's stored size: head and newest tail stored, exact counts, bounded memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from s3spill.agent.tools import AgentTools
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.fleet.cap import StoreCap
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore

KiB, MiB, GiB = 1024, 1024 * 1024, 1024 * 1024 * 1024
ROOT = Path(__file__).resolve().parents[2]

#: GiB streamed through a 1 MiB cap: 1 in the suite (a thousand times the cap and five times
#: the RSS bound, so a copy that grew with the stream would show; ~2 s of CPU), 10 in the
#: fleet step of .ci/run (S3SPILL_CAP_STREAM_GIB=10, ~12 s), the figure docs/fleet.md gives.
STREAM_GIB = int(os.environ.get("S3SPILL_CAP_STREAM_GIB", "1"))
#: The run lives in a child process so its peak RSS is its own, not the suite's.
_CHILD = textwrap.dedent("""
    import json, sys, tempfile
    from s3spill.context.policy import SpillPolicy
    from s3spill.spill.spiller import Spiller
    from s3spill.store.local import LocalStore

    MiB = 1 << 20
    line = b"the runaway command printed this line again and again".ljust(63, b".") + b"\\n"
    block = line * (MiB // len(line))  # exactly 1 MiB, 16384 lines
    total = int(sys.argv[1])

    def output():  # generated, never materialised: the same 1 MiB block, total // 1 MiB times
        for _ in range(total // MiB):
            yield block

    def peak_mib():  # the process's peak RSS so far (Linux)
        line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
        return int(line.split()[1]) / 1024

    with tempfile.TemporaryDirectory() as root:
        store = LocalStore(root)
        policy = SpillPolicy(max_stored_bytes=MiB, capped_tail_bytes=256 * 1024, store_deadline=120)
        with Spiller(store, "runaway", policy, journal=None) as spiller:
            result = spiller.externalize(output(), "bash")
        peak = peak_mib()  # the spill's peak, before the checks below read the copy back
        ref = result.artifact
        stored = open(next(p for p in __import__("pathlib").Path(root).rglob("*-bash")), "rb").read()
        from s3spill.artifacts.store import ArtifactStore
        body = b"".join(ArtifactStore(store, session_id="runaway").iter_verified(ref.source_id))
        print(json.dumps({
            "mode": result.mode, "total_bytes": result.total_bytes, "stored_bytes": result.stored_bytes,
            "ref_size": ref.size_bytes, "ref_lines": ref.line_count, "text": result.context_text,
            "head_ok": body.startswith(block[: 512 * 1024]), "tail_ok": body.endswith(block[-200 * 1024:]),
            "marker": [l.decode() for l in body.split(b"\\n") if l.startswith(b"[s3spill:")],
            "body_lines": body.count(b"\\n"),
            "peak_mib": peak,
        }))
""")


def test_a_gib_scale_generated_stream_is_stored_at_the_cap_with_exact_counts_and_bounded_memory() -> None:
    """The runaway command: STREAM_GIB read once, 1 MiB stored, every count exact, RSS flat."""
    total = STREAM_GIB * GiB
    run = subprocess.run([sys.executable, "-c", _CHILD, str(total)], capture_output=True, text=True,
                         cwd=ROOT, timeout=240, check=True)
    out = json.loads(run.stdout.strip().splitlines()[-1])
    lines = total // 64
    assert out["mode"] == "pointer" and out["total_bytes"] == total
    assert out["stored_bytes"] == out["ref_size"] <= MiB
    assert out["head_ok"] and out["tail_ok"] and out["ref_lines"] == out["body_lines"]
    text = out["text"]
    assert f"Full output of bash: {total} bytes, {lines} lines" in text
    assert "The stored copy is truncated (over the 1,048,576-byte cap per stored output)" in text
    [marker] = out["marker"]
    head_lines = (MiB - 256 * KiB - 512) // 64  # the head ends on a line boundary here
    tail = 256 * KiB - 64  # the tail starts at the first line start in its window
    omitted = total - head_lines * 64 - tail
    assert marker.startswith(f"[s3spill: {omitted:,} bytes of this output (lines {head_lines + 1}-"
                             f"{head_lines + omitted // 64})")
    assert f"the {omitted:,} bytes of lines {head_lines + 1}-{head_lines + omitted // 64}" in text
    assert out["peak_mib"] < 200, out["peak_mib"]


def _stream(n_lines: int) -> Iterator[bytes]:
    for start in range(0, n_lines, 1000):
        yield b"".join(b"row %06d\n" % i for i in range(start, min(n_lines, start + 1000)))


@pytest.mark.parametrize("n_lines", [1, 999, 30_000])
def test_the_window_never_holds_more_than_two_tails(n_lines: int) -> None:
    """Memory is bounded by the tail window, whatever the stream length or chunking."""
    cap = StoreCap(128 * KiB, 16 * KiB)
    stored = b"".join(cap.take(c) for c in _stream(n_lines))
    data = b"".join(_stream(n_lines))
    rest, facts = cap.finish(len(data), data.count(b"\n"))
    assert cap.peak_buffered <= 16 * KiB + 512 + 10_000
    if len(data) <= 128 * KiB:
        assert facts is None and stored + rest == data
    else:
        assert facts is not None and len(stored + rest) <= 128 * KiB
        tail = rest.split(b" bytes follow]\n", 1)[1]
        assert data.startswith(stored) and data.endswith(tail) and len(tail) == facts.tail_bytes
        assert facts.omitted_bytes == len(data) - facts.head_bytes - facts.tail_bytes
        tail_first = data.count(b"\n") - tail.count(b"\n") + 1
        assert facts.last_line == tail_first - 1 and facts.first_line == stored.count(b"\n") + 1


def test_an_output_at_the_cap_is_stored_whole_and_one_byte_more_is_truncated(tmp_path: Path) -> None:
    """The cap is inclusive: exactly ``max_stored_bytes`` is not truncated."""
    store = LocalStore(tmp_path)
    cap = 64 * KiB
    policy = SpillPolicy(max_stored_bytes=cap, capped_tail_bytes=8 * KiB)
    exact = (b"x" * 99 + b"\n") * (cap // 100) + b"y" * (cap % 100)
    with Spiller(store, "s", policy, journal=None) as spiller:
        whole = spiller.externalize(exact, "bash")
        over = spiller.externalize(exact + b"z", "bash")
    assert whole.artifact is not None and whole.artifact.size_bytes == cap and whole.stored_bytes is None
    assert "truncated" not in whole.context_text
    assert over.artifact is not None and over.stored_bytes == over.artifact.size_bytes <= cap
    assert over.total_bytes == cap + 1 and "The stored copy is truncated" in over.context_text
    tools = AgentTools(store, "s", policy=policy)
    assert "[s3spill:" in tools.grep_artifact(over.artifact.source_id, r"^\[s3spill:")


def test_a_tool_can_have_its_own_cap(tmp_path: Path) -> None:
    """``ToolPolicy.max_stored_bytes`` wins over the policy's for that tool only."""
    policy = SpillPolicy(tools={"dump": ToolPolicy(threshold=1000, max_stored_bytes=64 * KiB)},
                         capped_tail_bytes=8 * KiB)
    data = b"0123456789abcdef\n" * 20_000  # 340 KB
    with Spiller(LocalStore(tmp_path), "s", policy, journal=None) as spiller:
        capped = spiller.externalize(data, "dump")
        whole = spiller.externalize(data, "bash")
    assert capped.stored_bytes is not None and capped.stored_bytes <= 64 * KiB
    assert whole.artifact is not None and whole.stored_bytes is None
    assert whole.artifact.size_bytes == len(data)
    assert policy.stored_cap("dump") == 64 * KiB and policy.stored_cap("bash") == 4 * GiB
