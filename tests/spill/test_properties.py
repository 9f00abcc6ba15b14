"""Property: whatever the content and the budgets, the context text stays within the budget."""

from __future__ import annotations

import random
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3spill.artifacts.store import ArtifactStore
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore
from tests.examples import examples

PIECES = [b"ok\n", b"line of log output\n", b"ERROR: it broke\n", "é✓漢字🙂\n".encode(), b"x" * 3000,
          b"\xff\xfe\x80", b"\n", b"Traceback (most recent call last):\n", b"\t", b" " * 50]


def _content(seed: int, size: int) -> bytes:
    rng = random.Random(seed)
    out = bytearray()
    while len(out) < size:
        out += rng.choice(PIECES)
    return bytes(out[:size])


@settings(max_examples=examples(suite=10, thorough=40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    size=st.one_of(st.integers(0, 3000), st.integers(3000, 300_000)),
    hard_cap=st.integers(2_000, 60_000),
    tokens=st.one_of(st.none(), st.integers(0, 30_000)),
    tool=st.sampled_from(["bash", "search", "tiny"]),
    exit_code=st.sampled_from([None, 0, 1]),
    as_text=st.booleans(),
)
def test_context_text_never_exceeds_the_budget(seed: int, size: int, hard_cap: int, tokens: int | None,
                                               tool: str, exit_code: int | None, as_text: bool) -> None:
    """Hard cap always; the token budget too unless the documented hard-cap fallback was taken."""
    data = _content(seed, size)
    output: str | bytes = data.decode("utf-8", "surrogateescape") if as_text else data
    policy = SpillPolicy(hard_cap_chars=hard_cap, max_inline_tokens=tokens,
                         tools={"tiny": ToolPolicy(threshold=100, head_bytes=50, tail_bytes=50)})
    with tempfile.TemporaryDirectory() as root:
        store = LocalStore(root)
        with Spiller(store, "prop-session", policy) as spiller:
            result = spiller.externalize(output, tool, "c", exit_code=exit_code)
        text = result.context_text
        assert len(text) <= hard_cap
        if tokens is not None and not result.mode.endswith("hard_cap"):
            assert policy.counter()(text) <= tokens
        assert result.total_bytes == len(data)
        assert 0 <= result.omitted <= len(data)
        if result.spilled:
            assert result.artifact is not None and result.artifact.source_id in text
            stored = b"".join(ArtifactStore(store, session_id="prop-session")
                              .iter_verified(result.artifact.source_id))
            assert stored == data
        else:
            assert result.degraded_reason is None and result.artifact is None
            assert "artifact:" not in text or b"artifact:" in data
