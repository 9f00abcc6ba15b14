"""``s3spill demo``: a short, self-contained tour against an embedded S3.

Why a list of steps: the demo grows with the project (artifacts, the context pointer,
the journal and GC add their own steps), so each step is a small function that reads
and extends one shared :class:`DemoContext`, and :func:`register_step` lets a module
add its step without editing the others. Everything runs against a moto server on
127.0.0.1 started for the demo, so it needs no account and touches no network.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from s3spill.config import MiB, TransferConfig
from s3spill.errors import AlreadyExists, ConfigError, PreconditionFailed
from s3spill.store.s3 import S3Store

DEMO_BUCKET = "s3spill-demo"
DEMO_PREFIX = "demo"


@dataclass
class DemoContext:
    """What the steps share: where to print, the embedded S3, the store, and notes."""

    out: TextIO
    endpoint_url: str
    store: S3Store
    s3: Any  # the EmbeddedS3 (typed loosely: s3spill.testing needs the `local` extra)
    state: dict[str, Any] = field(default_factory=dict)

    def say(self, text: str = "") -> None:
        print(f"    {text}" if text else "", file=self.out)


DemoStep = Callable[[DemoContext], None]
STEPS: list[tuple[str, DemoStep]] = []
#: Modules that register their own steps when imported; run_demo imports them.
STEP_MODULES: tuple[str, ...] = ("s3spill.demo_spill", "s3spill.demo_agent", "s3spill.demo_journal")


def register_step(title: str, step: DemoStep, *, before: str | None = None) -> DemoStep:
    """Add a step (at the end, or before the step titled ``before``)."""
    index = len(STEPS)
    if before is not None:
        index = next((i for i, (t, _) in enumerate(STEPS) if t == before), index)
    STEPS.insert(index, (title, step))
    return step


def step(title: str) -> Callable[[DemoStep], DemoStep]:
    def decorate(fn: DemoStep) -> DemoStep:
        return register_step(title, fn)

    return decorate


def tool_output(lines: int) -> Iterator[bytes]:
    """A deterministic, long 'tool output' (a build log), produced as a stream."""
    for n in range(lines):
        level = "ERROR" if n % 9973 == 0 else "INFO"
        yield f"{n:08d} {level} compiling module_{n % 977:03d}.c -> ok ({n * 7919 % 1000} ms)\n".encode()


# -- the steps --------------------------------------------------------------------------


@step("create-once write")
def _create_once(ctx: DemoContext) -> None:
    body = b"hello from s3spill\n"
    result = ctx.store.put_if_absent("demo/hello.txt", body, content_type="text/plain")
    ctx.say(f"put_if_absent demo/hello.txt -> {result.size} bytes, ETag {result.etag}")
    ctx.say(f"sha256 {result.sha256} (sent as ChecksumSHA256, kept in metadata)")
    try:
        ctx.store.put_if_absent("demo/hello.txt", b"someone else\n")
        ctx.say("!! a second create overwrote the object")
    except AlreadyExists:
        ctx.say("a second put_if_absent of the same key -> AlreadyExists (If-None-Match: *)")
    ctx.say(f"read back: {ctx.store.get('demo/hello.txt')!r}")
    ctx.state["hello_etag"] = result.etag


@step("streamed multipart write of a large tool output")
def _streamed(ctx: DemoContext) -> None:
    started = time.monotonic()
    result = ctx.store.put_if_absent("demo/build.log", tool_output(200_000),
                                     content_type="text/plain")
    parts = -(-result.size // ctx.store.config.part_size)
    ctx.say(f"streamed {result.size / MiB:.1f} MiB as {parts} parts of "
            f"{ctx.store.config.part_size // MiB} MiB in {time.monotonic() - started:.2f}s")
    digest = hashlib.sha256()
    for chunk in ctx.store.iter_chunks("demo/build.log"):
        digest.update(chunk)
    info = ctx.store.head("demo/build.log")
    ctx.say(f"head: sha256 {info.sha256}")
    ctx.say(f"read back and re-hashed: {'match' if digest.hexdigest() == info.sha256 else 'MISMATCH'}")
    first_line = ctx.store.get("demo/build.log", (0, 80)).split(b"\n")[0].decode()
    ctx.say(f"ranged read of bytes [0, 80): {first_line!r}")


@step("compare-and-swap")
def _cas(ctx: DemoContext) -> None:
    old = ctx.state["hello_etag"]
    new = ctx.store.put_if_match("demo/hello.txt", b"hello again\n", old)
    ctx.say(f"put_if_match with the current ETag -> replaced, new ETag {new.etag}")
    try:
        ctx.store.put_if_match("demo/hello.txt", b"stale writer\n", old)
        ctx.say("!! a stale put_if_match replaced the object")
    except PreconditionFailed:
        ctx.say("put_if_match with the old ETag -> PreconditionFailed, object unchanged")


@step("a lost answer is resolved by reading back the put id")
def _lost_answer(ctx: DemoContext) -> None:
    from s3spill.testing import drop_response_after_send

    fault = drop_response_after_send(ctx.store.client, "PutObject")
    try:
        result = ctx.store.put_if_absent("demo/lost-answer.txt", b"landed\n")
    finally:
        fault.remove()
    ctx.say("the PutObject landed but its answer was dropped; botocore retried and got 412")
    ctx.say(f"HEAD found our put id -> reported as success (ETag {result.etag}), not AlreadyExists")


@step("doctor: what this store honours")
def _doctor(ctx: DemoContext) -> None:
    from s3spill.doctor import render, run_doctor

    report = run_doctor(ctx.store)
    for line in render(report).splitlines():
        ctx.say(line)


@step("garbage collection: plan, then apply")
def _gc(ctx: DemoContext) -> None:
    from s3spill.gc_demo import gc_demo_step

    gc_demo_step(ctx)


def run_demo(out: TextIO = sys.stdout, *, config: TransferConfig | None = None) -> int:
    """Start an embedded S3, run every registered step in order, stop the server."""
    try:
        from s3spill.testing import EmbeddedS3
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("the demo needs moto: pip install 's3spill[local]'") from exc
    for module in STEP_MODULES:
        importlib.import_module(module)
    print("s3spill demo: an embedded S3 (moto, one request at a time) on 127.0.0.1", file=out)
    with EmbeddedS3() as s3:
        s3.create_bucket(DEMO_BUCKET)
        store: S3Store = s3.store(DEMO_BUCKET, DEMO_PREFIX, config)
        ctx = DemoContext(out=out, endpoint_url=s3.endpoint_url, store=store, s3=s3)
        print(f"store s3://{DEMO_BUCKET}/{DEMO_PREFIX} at {s3.endpoint_url}", file=out)
        try:
            for number, (title, fn) in enumerate(STEPS, start=1):
                print(f"\n[{number}/{len(STEPS)}] {title}", file=out)
                fn(ctx)
        finally:
            store.close()
    print("\ndone: the embedded S3 has been stopped and its data discarded.", file=out)
    return 0
