"""The demo's context-side step: a 2 MB command output spilled, and followed back.

Listed in :data:`s3spill.demo.runner.STEPS` after the store's own steps, so the
tour shows what an agent's model actually sees: the head, the gap with the error
lines quoted from it, the tail and the notice, and then a page read back from the
store by following the notice's locator and line numbers; the page's bytes are
checked against the original.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator

from s3spill.artifacts.store import ArtifactStore
from s3spill.demo.context import DemoContext
from s3spill.spill.spiller import Spiller

SESSION = "demo-session"
_GAP = re.compile(r"^\[… (\d+) bytes omitted \((?:the rest of line (\d+), )?lines (\d+)–(\d+)")
_SID = re.compile(r'source_id="([^"]+)"')
_QUOTED = re.compile(r"^  line (\d+): ", re.M)


def command_output(target: int = 2 * 1024 * 1024) -> bytes:
    """About 2 MB of a failing build's output, with one early error in the middle."""
    lines = []
    size = n = 0
    while size < target:
        n += 1
        if n == 9_000:
            line = f"{n:06d} ERROR linker: undefined reference to `frobnicate' in module_{n % 977:03d}.o\n"
        else:
            line = f"{n:06d} INFO compiling module_{n % 977:03d}.c -> ok ({n * 7919 % 1000} ms)\n"
        lines.append(line)
        size += len(line)
    lines.append("build FAILED: 1 error\n")
    return "".join(lines).encode()


def _show(ctx: DemoContext, text: str, keep_head: int = 3, keep_tail: int = 2) -> None:
    """Print the context text abridged: a few head and tail lines, the gap and the notice."""
    lines = text.split("\n")
    gap = next((i for i, ln in enumerate(lines) if ln.startswith("[… ")), None)
    notice = next(i for i, ln in enumerate(lines) if ln.startswith("[s3spill] "))
    if gap is None:
        for line in lines[:notice]:
            ctx.say(f"| {line}")
    else:
        gap_end = next(i for i in range(gap, notice) if lines[i].endswith("…]"))
        shown = [*lines[:keep_head], f"(… {gap - keep_head} more head lines …)", *lines[gap : gap_end + 1]]
        shown += [f"(… {notice - gap_end - 1 - keep_tail} more tail lines …)"]
        shown += lines[notice - keep_tail - 1 : notice]
        for line in shown:
            ctx.say(f"| {line}")
    for line in lines[notice:]:
        ctx.say(f"| {line}")


def spill_step(ctx: DemoContext) -> None:
    session = ctx.session(SESSION)
    output = command_output()
    spiller = Spiller(ctx.store, session)
    result = spiller.externalize(iter([output[i : i + 65536] for i in range(0, len(output), 65536)]),
                                 "bash", "call-1", exit_code=1)
    spiller.close()
    ctx.say(f"the command printed {len(output):,} bytes; the model sees {len(result.context_text):,} "
            f"characters ({result.mode}):")
    _show(ctx, result.context_text)

    sid = _SID.search(result.context_text)
    gap = next((m for ln in result.context_text.split("\n") if (m := _GAP.match(ln))), None)
    if sid is None or gap is None:
        ctx.say("!! the pointer names no source id or gap")
        return
    quoted = _QUOTED.search(result.context_text)
    first = int(quoted.group(1)) if quoted else int(gap.group(2) or gap.group(3))
    ctx.say("")
    ctx.say(f"following the pointer to line {first} (\"line N is at offset=N-1\"): "
            f"read(source_id, offset={first - 1}, limit=3)")
    reader = ArtifactStore(ctx.store, session_id=session)
    page = reader.read_page(sid.group(1), offset=first - 1, limit=3)
    for line in page.render().rstrip("\n").split("\n"):
        ctx.say(f"| {line}")
    start = sum(len(ln) + 1 for ln in output.split(b"\n")[: first - 1])
    same = page.raw() == output[start : start + len(page.raw())]
    ctx.say(f"the page's bytes equal the original output at that place: {'yes' if same else '!! NO'}")

    # The fault helpers load here, in the one step that shows an outage, not with the demo.
    from s3spill.testing.fault_stores import Fault, FaultyStore

    down = FaultyStore(ctx.store, [Fault("*", "unavailable", times=10**9)])
    # The Spiller logs a spill.degraded warning for this injected outage, as it should in
    # production; the tour shows what the model gets instead of the log line.
    with _quiet("s3spill.spill"):
        degraded = Spiller(down, session, journal=None).externalize(output, "bash", "call-2", exit_code=1)
    notice = degraded.context_text[degraded.context_text.rfind("[s3spill] "):]
    ctx.say("")
    ctx.say("with the store down, the same call fails open and says so (no locator):")
    for line in notice.split("\n"):
        ctx.say(f"| {line}")


@contextlib.contextmanager
def _quiet(logger: str) -> Iterator[None]:
    """Silence ``logger`` below ERROR for the block (the tour's own injected faults)."""
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)
