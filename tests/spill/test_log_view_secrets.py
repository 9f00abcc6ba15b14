"""A log-compressed preview masks what its folds cut, with the whole output as context."""

from __future__ import annotations

from pathlib import Path

import pytest

from s3spill.context.logcompress import compress_log
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore

KEY_LINES = ["MIIEowIBAAKCAQEAvQmZ3kP8sWqL2nR7tY4uE6iO9pA1sD3fG5hJ7kL9zX2cV4bN",
             "6mQ8wE0rT2yU4iO6pA8sD0fG2hJ4kL6zX8cV0bN2mQ4wE6rT8yU0iO2pA4sD6fG",
             "Hq7Wd2Lx9Mz4Nc6Bv8Kj1Fg3Sa5Pz7Ry9Tu2Io4Ue6Yw8Qt0Er3Dg5Fh7Jk9Lm",
             "Zq8m3xTp0vLw2b9dKc4N7hYf1Gr5sJ6eUa8iOp3Lk0mNb2Vc7Xz9Qw1Er4Ty6Ui8"]
POLICY = SpillPolicy(tools={"pytest": ToolPolicy(threshold=50 * 1024, log_compress=True)})


def _log(secret_at_fold: bool) -> str:
    """Noise, a key block whose BEGIN line is folded away while its last lines are kept
    as the context of the error after it, noise, a summary."""
    words = ["ghost", "jolly", "knoll", "lumpy", "mossy", "nutty", "plush", "quirk", "rusty", "sworn"]
    noise = [f"  compiling src/{a}/{b}.c ok" for a in words for b in words][:80]  # no two alike
    block = ["-----BEGIN RSA PRIVATE KEY-----", *KEY_LINES, "-----END RSA PRIVATE KEY-----"]
    tail = ["ERROR: the deploy key above was rejected", *noise[:60], "=== 1 failed, 140 passed in 3.2s ==="]
    return "\n".join(noise + (block if secret_at_fold else []) + tail) + "\n"


def _pieces(text: str) -> list[str]:
    """Every 4-character piece of a key line that ``text`` shows."""
    return [line[i:i + 4] for line in KEY_LINES for i in range(len(line) - 3) if line[i:i + 4] in text]


@pytest.mark.parametrize("mode", ["preview", "at_rest"])
def test_a_key_block_cut_by_a_fold_shows_no_piece_and_the_notice_says_so(tmp_path: Path, mode: str) -> None:
    """The fold hides BEGIN; the key lines kept before the error are masked all the same."""
    policy = POLICY.model_copy(update={"secrets": mode})
    text = _log(secret_at_fold=True)
    view = compress_log(text)
    assert view.changed and KEY_LINES[-1] in view.text and "BEGIN RSA" not in view.text  # the cut
    with Spiller(LocalStore(str(tmp_path)), "fold", policy, journal=None) as sp:
        result = sp.externalize(text, "pytest", exit_code=1)
    assert result.artifact is not None and "lines omitted" in result.context_text
    assert _pieces(result.context_text) == []
    assert "Secrets were masked" in result.context_text and "private-key" in result.context_text


def test_a_folded_secret_the_view_does_not_show_is_not_counted(tmp_path: Path) -> None:
    """A secret only in folded lines: nothing shown was masked, so no masking note."""
    text = _log(secret_at_fold=False).replace("knoll.c ok", "knoll.c ok token=ghp_"
                                              "abcdefghijklmnopqrstuvwxyz0123456789", 1)
    assert "ghp_" in text and "ghp_" not in compress_log(text).text  # folded away
    with Spiller(LocalStore(str(tmp_path)), "fold2", POLICY, journal=None) as sp:
        result = sp.externalize(text, "pytest", exit_code=1)
    assert "ghp_abcd" not in result.context_text
    assert "Secrets were masked" not in result.context_text


def test_display_lines_must_match_the_text() -> None:
    """A display that is not line for line the text is refused, not shown misaligned."""
    with pytest.raises(ValueError):
        compress_log("a\n" * 50, display="a\n")
