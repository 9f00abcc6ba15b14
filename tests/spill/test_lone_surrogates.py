"""Text a Python harness hands over with lone surrogates is shown and masked, never degraded."""

from __future__ import annotations

import pytest

from s3spill.context.policy import SpillPolicy
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore

KEY = "q8Jd2LxV9mPzR4tYw7Nc/Bf5Hs3Gk6Ue0Ao9Ti2E"


@pytest.mark.parametrize("secrets", ["preview", "at_rest"])
@pytest.mark.parametrize("odd", ["\ud800", "\udce9", "\ud800\udce9"])
def test_a_small_output_with_a_lone_surrogate_stays_inline_and_masked(local_store: LocalStore, secrets: str,
                                                                      odd: str) -> None:
    """A lone surrogate (a JSON \\ud800 escape, or a surrogate-escaped byte) in a small str output
    gives the inline text with the secret masked; it was 'degraded: internal error' before."""
    text = f"deploy {odd} failed: aws_secret_access_key = {KEY}\n"
    with Spiller(local_store, "odd", journal=None, policy=SpillPolicy(secrets=secrets)) as spiller:  # type: ignore[arg-type]
        result = spiller.externalize(text, "bash")
    assert result.mode == "inline" and result.degraded_reason is None
    assert KEY[:4] not in result.context_text and odd in result.context_text
    assert result.context_text.startswith(f"deploy {odd} failed: aws_secret_access_key = ")
