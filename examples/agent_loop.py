"""A reference agent loop with s3spill between the tools and the model (no API key needed).

A scripted model runs a build whose output is about 2 MB, receives a pointer instead of
the output, pages into the middle by following the footers (a 20,000-character line
included), greps for the error, keeps the finding as a memory reference published under a
lease, and answers. Each step is printed with the context size before and after.

    python examples/agent_loop.py                       # a temporary local store
    python examples/agent_loop.py --store s3://bucket/prefix --session my-session

The loop itself is :func:`s3spill.demo.scripted_agent.run_agent_example` (also the main act of
``s3spill demo``); read that module to see the harness side.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from s3spill import open_store
from s3spill.demo.scripted_agent import run_agent_example


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="store URL (default: a fresh temporary directory)")
    parser.add_argument("--session", default="agent-loop-example", help="the harness's session id")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="s3spill-agent-") as tmp:
        store = open_store(args.store or Path(tmp, "store").as_uri())
        try:
            print(f"store {store.url}, session {args.session!r}")
            run = run_agent_example(store, args.session, sys.stdout)
        finally:
            store.close()
    return 0 if run.answer and run.published else 1


if __name__ == "__main__":
    sys.exit(main())
