"""Local development: ``s3spill demo`` (the tour) and ``s3spill serve-s3`` (an embedded S3).

Why the demo takes a store only from its own ``--store`` (or the global one given on the
command line), never from ``$S3SPILL_STORE``: ``s3spill demo`` is the first command a
reader runs, and it must not write into whatever store the environment happens to name.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from types import FrameType

from s3spill.cli.voice import say


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo", help="run a short tour against an embedded S3 on 127.0.0.1 (or --store URL)",
        description="Write and read back through the S3 store, show the conditional-write "
        "guarantees, spill a command's output, run an agent loop, publish a reference under a "
        "lease and run GC. Without --store it starts a moto S3 server on 127.0.0.1 (one "
        "request at a time; needs the `local` extra; touches no network) and discards it "
        "afterwards. With --store s3://bucket/prefix it runs against that store (e.g. MinIO): "
        "every run uses its own sessions and keys, GC is scoped to the demo's own session, "
        "and the objects are left in place.")
    demo.add_argument("--store", dest="demo_store", metavar="URL",
                      help="run against this S3 store instead of an embedded one (s3://bucket/prefix)")
    demo.set_defaults(func=cmd_demo)

    serve = sub.add_parser(
        "serve-s3", help="serve an embedded S3 (moto) on 127.0.0.1 until interrupted",
        description="Run moto's S3 in the foreground, one request at a time (so conditional "
        "writes are checked atomically), until Ctrl-C or SIGTERM. Data lives in memory and is "
        "gone when it stops. Point s3spill (or any S3 client) at it with the printed "
        "AWS_* variables. Needs the `local` extra.")
    serve.add_argument("--port", type=int, default=9000, help="port on 127.0.0.1 (default 9000; 0: any)")
    serve.add_argument("--bucket", action="append", default=[],
                       help="create this bucket at start (repeatable)")
    serve.add_argument("--versioned", action="store_true", help="turn versioning on for --bucket")
    serve.set_defaults(func=cmd_serve_s3)


def cmd_demo(args: argparse.Namespace) -> int:
    from s3spill.demo.runner import run_demo

    return run_demo(sys.stdout, store_url=args.demo_store or getattr(args, "store", None))


def cmd_serve_s3(args: argparse.Namespace) -> int:
    from s3spill.errors import ConfigError

    try:
        from s3spill.testing.server import FAKE_CREDENTIALS, serve
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("serve-s3 needs moto, which is not installed",
                          hint="pip install 's3spill[local]'") from exc

    def ready(url: str) -> None:
        print(f"s3spill serve-s3: moto S3 at {url} (in memory, one request at a time); Ctrl-C stops it")
        print(f"export AWS_ENDPOINT_URL={url}")
        print(f"export AWS_ACCESS_KEY_ID={FAKE_CREDENTIALS['aws_access_key_id']}")
        print(f"export AWS_SECRET_ACCESS_KEY={FAKE_CREDENTIALS['aws_secret_access_key']}")
        print("export AWS_REGION=us-east-1")
        for bucket in args.bucket:
            print(f"export S3SPILL_STORE=s3://{bucket}/dev  # bucket {bucket} created")
        sys.stdout.flush()

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    with contextlib.suppress(KeyboardInterrupt):
        serve(args.port, buckets=args.bucket, versioned=args.versioned, ready=ready)
    print(say("serve-s3: stopped"), file=sys.stderr)
    return 0
