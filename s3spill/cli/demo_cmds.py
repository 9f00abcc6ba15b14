"""``s3spill demo``: the library's tour against an embedded S3 (see :mod:`s3spill.demo.runner`)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo", help="run a short tour against an embedded S3 on 127.0.0.1",
        description="Start a moto S3 server on 127.0.0.1 (one request at a time), write and "
        "read back through the S3 store, show the conditional-write guarantees and run the "
        "doctor. Needs the `local` extra; touches no network.")
    demo.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from s3spill.demo.runner import run_demo

    return run_demo(sys.stdout)
