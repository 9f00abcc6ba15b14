"""``s3spill demo``: a short, self-contained tour against an embedded S3.

Why a list of steps: the demo grows with the project (artifacts, the context pointer,
the journal and GC add their own steps), so each step is a small function that reads
and extends one shared :class:`DemoContext`; :data:`STEPS` lists them, in the order they
run, in one place. Everything runs against a moto server on 127.0.0.1 started for the
demo, so it needs no account and touches no network.
"""

from __future__ import annotations

import hashlib
import secrets
import sys
import time
from typing import TextIO

from s3spill.config import MiB, TransferConfig
from s3spill.demo.agent import agent_demo_step
from s3spill.demo.context import DEMO_BUCKET, DEMO_PREFIX, DemoContext, DemoStep, tool_output
from s3spill.demo.gc import gc_demo_step
from s3spill.demo.journal import journal_step
from s3spill.demo.spill import spill_step
from s3spill.errors import AlreadyExists, ConfigError, PreconditionFailed
from s3spill.store.s3.store import S3Store

# -- the steps --------------------------------------------------------------------------


def _create_once(ctx: DemoContext) -> None:
    body = b"hello from s3spill\n"
    result = ctx.store.put_if_absent(ctx.key("hello.txt"), body, content_type="text/plain")
    ctx.say(f"put_if_absent {ctx.key('hello.txt')} -> {result.size} bytes, ETag {result.etag}")
    ctx.say(f"sha256 {result.sha256} (sent as ChecksumSHA256, kept in metadata)")
    try:
        ctx.store.put_if_absent(ctx.key("hello.txt"), b"someone else\n")
        ctx.say("!! a second create overwrote the object")
    except AlreadyExists:
        ctx.say("a second put_if_absent of the same key -> AlreadyExists (If-None-Match: *)")
    ctx.say(f"read back: {ctx.store.get(ctx.key('hello.txt'))!r}")
    ctx.state["hello_etag"] = result.etag


def _streamed(ctx: DemoContext) -> None:
    started = time.monotonic()
    result = ctx.store.put_if_absent(ctx.key("build.log"), tool_output(200_000),
                                     content_type="text/plain")
    parts = -(-result.size // ctx.store.config.part_size)
    ctx.say(f"streamed {result.size / MiB:.1f} MiB as {parts} parts of "
            f"{ctx.store.config.part_size // MiB} MiB in {time.monotonic() - started:.2f}s")
    digest = hashlib.sha256()
    for chunk in ctx.store.iter_chunks(ctx.key("build.log")):
        digest.update(chunk)
    info = ctx.store.head(ctx.key("build.log"))
    ctx.say(f"head: sha256 {info.sha256}")
    ctx.say(f"read back and re-hashed: {'match' if digest.hexdigest() == info.sha256 else 'MISMATCH'}")
    first_line = ctx.store.get(ctx.key("build.log"), (0, 80)).split(b"\n")[0].decode()
    ctx.say(f"ranged read of bytes [0, 80): {first_line!r}")


def _cas(ctx: DemoContext) -> None:
    old = ctx.state["hello_etag"]
    new = ctx.store.put_if_match(ctx.key("hello.txt"), b"hello again\n", old)
    ctx.say(f"put_if_match with the current ETag -> replaced, new ETag {new.etag}")
    try:
        ctx.store.put_if_match(ctx.key("hello.txt"), b"stale writer\n", old)
        ctx.say("!! a stale put_if_match replaced the object")
    except PreconditionFailed:
        ctx.say("put_if_match with the old ETag -> PreconditionFailed, object unchanged")


def _lost_answer(ctx: DemoContext) -> None:
    from s3spill.testing.http_faults import drop_response_after_send

    fault = drop_response_after_send(ctx.store.client, "PutObject")
    try:
        result = ctx.store.put_if_absent(ctx.key("lost-answer.txt"), b"landed\n")
    finally:
        fault.remove()
    ctx.say("the PutObject landed but its answer was dropped; botocore retried and got 412")
    ctx.say(f"HEAD found our put id -> reported as success (ETag {result.etag}), not AlreadyExists")


def _doctor(ctx: DemoContext) -> None:
    from s3spill.cli.store_cmds import render
    from s3spill.store.probes import probe_capabilities

    report = probe_capabilities(ctx.store)
    for line in render(report).splitlines():
        ctx.say(line)


def _gc(ctx: DemoContext) -> None:
    from s3spill.demo.gc import gc_demo_step

    gc_demo_step(ctx)


#: Every step, in the order it runs: the store's guarantees first, then the context side
#: and the agent loop that rely on them, then what the store honours, the journal, and GC.
STEPS: tuple[tuple[str, DemoStep], ...] = (
    ("create-once write", _create_once),
    ("streamed multipart write of a large tool output", _streamed),
    ("compare-and-swap", _cas),
    ("a lost answer is resolved by reading back the put id", _lost_answer),
    ("a 2 MB command output spilled, and a page read back by following the pointer", spill_step),
    ("the main act: an agent loop over a 2 MB build log (scripted model, no API key)", agent_demo_step),
    ("doctor: what this store honours", _doctor),
    ("lease journal: publish a memory reference, crash, reconcile, verify", journal_step),
    ("garbage collection: plan, then apply", gc_demo_step),
)


def run_demo(out: TextIO = sys.stdout, *, config: TransferConfig | None = None,
             store_url: str | None = None) -> int:
    """Run every step in order: on ``store_url`` if given, else on an embedded S3."""
    if store_url:
        return _run_on(out, store_url, config)
    try:
        from s3spill.testing.server import EmbeddedS3
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("the demo needs moto, which is not installed",
                          hint="pip install 's3spill[local]'") from exc
    print("s3spill demo: an embedded S3 (moto, one request at a time) on 127.0.0.1", file=out)
    with EmbeddedS3() as s3:
        s3.create_bucket(DEMO_BUCKET)
        store: S3Store = s3.store(DEMO_BUCKET, DEMO_PREFIX, config)
        ctx = DemoContext(out=out, endpoint_url=s3.endpoint_url, store=store)
        print(f"store s3://{DEMO_BUCKET}/{DEMO_PREFIX} at {s3.endpoint_url}", file=out)
        _run_steps(ctx)
    print("\ndone: the embedded S3 has been stopped and its data discarded.", file=out)
    return 0


def _run_on(out: TextIO, url: str, config: TransferConfig | None) -> int:
    """The same steps on a real S3 store (MinIO, AWS): fresh sessions and keys, nothing removed."""
    if not url.startswith("s3://"):
        raise ConfigError(f"demo --store needs an S3 URL (s3://bucket/prefix), not {url!r}: "
                          "its steps show S3's conditional writes and fault handling")
    store = S3Store.from_url(url, config)
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)
    endpoint = str(store.client.meta.endpoint_url)
    print(f"s3spill demo: store {store.url} at {endpoint}, run {run_id}", file=out)
    _run_steps(DemoContext(out=out, endpoint_url=endpoint, store=store, run_id=run_id))
    print(f"\ndone: the demo's objects stay in {store.url} (keys under demo/{run_id}/ and "
          f"sessions named *-{run_id}); GC deletes the expired ones like any other.", file=out)
    return 0


def _run_steps(ctx: DemoContext) -> None:
    try:
        for number, (title, fn) in enumerate(STEPS, start=1):
            print(f"\n[{number}/{len(STEPS)}] {title}", file=ctx.out)
            fn(ctx)
    finally:
        ctx.store.close()
