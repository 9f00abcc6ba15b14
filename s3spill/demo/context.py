"""What the demo's steps share, kept apart from the runner so steps never import it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from s3spill.store.s3.store import S3Store

DEMO_BUCKET = "s3spill-demo"
DEMO_PREFIX = "demo"


@dataclass
class DemoContext:
    """What the steps share: where to print, the embedded S3, the store, and notes."""

    out: TextIO
    endpoint_url: str
    store: S3Store
    #: Empty on the embedded S3 (its data is discarded); on a real store, a fresh token
    #: per run so every run has its own sessions and keys and never meets an earlier one.
    run_id: str = ""
    state: dict[str, Any] = field(default_factory=dict)

    def say(self, text: str = "") -> None:
        print(f"    {text}" if text else "", file=self.out)

    def session(self, name: str) -> str:
        """The session id a step uses, unique to this run on a real store."""
        return f"{name}-{self.run_id}" if self.run_id else name

    def key(self, leaf: str) -> str:
        """A scratch key for the store-level steps, under ``demo/`` (and the run's id)."""
        return f"demo/{self.run_id}/{leaf}" if self.run_id else f"demo/{leaf}"


DemoStep = Callable[[DemoContext], None]


def tool_output(lines: int) -> Iterator[bytes]:
    """A deterministic, long 'tool output' (a build log), produced as a stream."""
    for n in range(lines):
        level = "ERROR" if n % 9973 == 0 else "INFO"
        yield f"{n:08d} {level} compiling module_{n % 977:03d}.c -> ok ({n * 7919 % 1000} ms)\n".encode()
