"""Shared setup of the usage tests: a scripted agent run whose behaviour per tool is planted."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from s3spill.agent.tools import AgentTools
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.usage.recorder import UsageRecorder

SESSION = "usage-test-session"
#: A credential the model must never see: masked in what it is shown, so in usage too.
SECRET = "AKIAIOSFODNN7EXAMPLE"  # noqa: S105 - AWS's documented example key


@dataclass
class Planted:
    """What the scripted run did: calls per tool and how often the model read them back."""

    calls: int
    build_spills: int
    search_spills: int
    small: int


def scripted_run(store: ObjectStore, usage: UsageRecorder, session: str = SESSION,
                 calls: int = 200) -> Planted:
    """A harness loop of ``calls`` tool calls: ``build`` outputs are always read back (two
    pages and a grep, as a model hunting an error does), ``search`` outputs never, ``ls``
    stays inline. The model's reads take the source id from the pointer it was shown."""
    spiller = Spiller(store, session, usage=usage)
    tools = AgentTools(store, session, usage=usage)
    made = Planted(0, 0, 0, 0)
    i = 0
    while made.calls < calls:
        i += 1
        build = spiller.externalize("".join(_build_line(i, n) for n in range(4000))
                                    + "ERROR: link failed\n", "build")
        made.calls += 1
        made.build_spills += 1
        sid = _source_id(build.context_text)
        for offset in (0, 2000):
            if made.calls < calls:
                assert not tools.call(tools.read_name, {"source_id": sid, "offset": offset}).is_error
                made.calls += 1
        if made.calls < calls:
            assert not tools.call(tools.grep_name, {"source_id": sid, "pattern": "ERROR"}).is_error
            made.calls += 1
        if made.calls < calls:
            spiller.externalize("".join(f"match {i}:{n} src/file_{n}.py\n" for n in range(5000)), "search")
            made.calls += 1
            made.search_spills += 1
        if made.calls < calls:
            spiller.externalize("a.txt\nb.txt\n", "ls")
            made.calls += 1
            made.small += 1
    spiller.close()
    return made


def _build_line(i: int, n: int) -> str:
    """A build log line; every 100th (among them the first line of each page read back,
    0 and 2000) carries the credential. Masking scans every line that carries one, and a
    credential on all 4,000 lines cost the 200-call run 30 s of CPU without proving more."""
    return f"step {i}.{n} compiling unit {n}" + (f" key={SECRET}\n" if n % 100 == 0 else "\n")


def _source_id(pointer: str) -> str:
    marker = 'source_id="'
    start = pointer.index(marker) + len(marker)
    return pointer[start:pointer.index('"', start)]


@pytest.fixture
def recorder(store: ObjectStore) -> Iterator[UsageRecorder]:
    """A batching recorder on the parametrised store (local and moto), closed after the test."""
    rec = UsageRecorder(store, max_events=50, max_age=60.0)
    yield rec
    rec.close()
