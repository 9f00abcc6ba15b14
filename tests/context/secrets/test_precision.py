"""Precision: our own ids, keys and URIs are never masked, and a notice speaks of masking only
when something it shows was masked."""

from __future__ import annotations

import hashlib
import random
import string
from datetime import UTC, datetime, timedelta

from s3spill import keys
from s3spill.context.policy import SpillPolicy
from s3spill.context.secrets import redact_text
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from tests.examples import examples


def _our_text(session: str, rng: random.Random) -> str:
    shash = keys.session_hash(session)
    when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(10**8))
    tool = rng.choice(["bash", "mcp__github__search_code", "read_file", "pytest", "kubectl_get"])
    name = keys.new_artifact_name(tool, when)
    sha = hashlib.sha256(session.encode()).hexdigest()
    sid = str(keys.SourceId(shash, name, sha[:16]))
    live = f"live:{shash}:{name}"
    return "\n".join([
        f'[s3spill] stored as source_id="{sid}"', f'read_artifact(source_id="{sid}", offset=0)',
        f"{sid} | 2026-01-01T00:00:00Z | {tool} | 12 bytes, 1 lines | x", f"[{live}: running | since=0]",
        keys.artifact_key(shash, name), keys.index_key(shash, name), keys.manifest_key(shash),
        keys.live_segment_key(shash, name, 7, sha),
        f"s3://agent-bucket/prefix/{keys.artifact_key(shash, name)}",
    ])


def test_no_id_key_or_uri_of_ours_is_masked_for_random_session_names() -> None:
    """Over 2,000 random session names (10,000 thorough): about 2 % of session hashes end in 8
    digits, which made ids look like Telegram tokens."""
    rng = random.Random(31)
    masked = []
    for _ in range(examples(suite=2000, thorough=10_000)):
        session = "".join(rng.choices(string.ascii_letters + string.digits + "-_.:/@", k=rng.randint(4, 40)))
        text = _our_text(session, rng)
        _, counts = redact_text(text)
        if counts:
            masked.append((session, dict(counts)))
    assert masked == []


def test_a_secret_next_to_one_of_our_ids_is_still_masked() -> None:
    """Protecting our ids does not open a hole beside them."""
    sid = _our_text("s", random.Random(1)).split('"')[1]
    out, counts = redact_text(f"{sid} token=ghp_Zk8Qw3Rt6Yu9Io2Pa5Sd7Fg0Hj4Kl1Zx3Cv6B")
    assert sid in out and "ghp_Zk8Q" not in out and counts


def test_no_masking_note_when_nothing_shown_was_masked(local: ObjectStore) -> None:
    """Digits only (short lines, and one long line a seam cuts), base64 lines in the retained
    tail a successful call never shows, a key block in the omitted middle: no note, no mask."""
    short = "".join(f"{i}\n" for i in range(300_000))
    long_line = "0123456789" * 100_000 + "\n"
    b64_line = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2\n"
    b64 = "".join(f"row {i}\n" for i in range(20000)) + b64_line * 30
    body = "MIIEowIBAAKCAQEAvQmZ3kP8sWqL2nR7tY4uE6iO9pA1sD3fG5hJ7kL9zX2cV4bN\n"
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + body * 20 + "-----END RSA PRIVATE KEY-----\n"
    hidden = "".join(f"step {i}\n" for i in range(3000)) + key + "".join(f"done {i}\n" for i in range(9000))
    for text, tool in ((short, "bash"), (long_line, "bash"), (b64, "fetch"), (hidden, "bash")):
        with Spiller(local, "notes", SpillPolicy(), journal=None) as sp:
            result = sp.externalize(text, tool, exit_code=0)
        assert result.spilled and "masked" not in result.context_text, result.context_text[-600:]
        assert "[redacted" not in result.context_text


def test_the_note_names_what_the_preview_shows_masked(local: ObjectStore) -> None:
    """A token in the head: the note counts it, and only it."""
    text = "token ghp_Zk8Qw3Rt6Yu9Io2Pa5Sd7Fg0Hj4Kl1Zx3Cv6B\n" + "".join(f"row {i}\n" for i in range(20000))
    with Spiller(local, "notes2", SpillPolicy(), journal=None) as sp:
        result = sp.externalize(text, "bash")
    assert "Secrets were masked in this preview (1 github-token)" in result.context_text
