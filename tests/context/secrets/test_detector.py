"""Secrets kept out of the model's context: detection, masking, and the spill path end to end."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.agent.tools import AgentTools
from s3spill.context.policy import SpillPolicy
from s3spill.context.secrets import StreamRedactor, default_detector, marker, redact_bytes, redact_text
from s3spill.context.secrets.masking import MAX_LINE_BYTES
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from tests.context.secrets.clean_build_logs import build_log

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # noqa: S105 - AWS's documented example
KEY_BODY = ["MIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH",
            "lWu2/a1gB9JW5TBQ+AVpum9Okx7KfqkfBKL9mcHgSVHdlvOU7SGF7fSwJQH3kF5Q",
            "Zq8m3xTp0vLw2b9dKc4N7hYf1Gr5sJ6eUa8iOp3Lk0mNb2Vc7Xz9Qw1Er4Ty6Ui8"]
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(KEY_BODY) + "\n-----END RSA PRIVATE KEY-----\n"
#: What must never reach the model: the key id, the secret key, any line of the key body.
LEAKS = [AWS_KEY, AWS_SECRET, *(line[:24] for line in KEY_BODY)]

#: One line per rule, each a secret of that kind (the rule must find it, its trigger must fire).
SAMPLES = {
    "aws-key": f"export AWS_ACCESS_KEY_ID={AWS_KEY}",
    "aws-secret": f'aws_secret_access_key = "{AWS_SECRET}"',
    "artifactory-credentials": "ARTIFACTORY=AKCp5budTFpbypBqQbGJPz3pGCi28pPivfWczqjfYb9drAmd",
    "azure-key": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + "Zm9vYmFy" * 11 + ";",
    "url-password": "git clone https://bob:hunter2x@example.com/repo.git",
    "cloudant-credentials": "cloudant_password='aaaab1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2"
                            "f3a4b5c6d7e8f9a0b1c2'",
    "discord-bot-token": "DISCORD=MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
    "github-token": 'token: "ghp_abcdefghijklmnopqrstuvwxyz0123456789"',
    "gitlab-token": "GITLAB=glpat-abcdefghij0123456789ABCD",
    "ibm-cos-hmac-credentials": "secret_access_key = '" + "0123456789abcdef" * 3 + "'",
    "ibm-cloud-iam-key": "ibm_cloud_iam_key = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQR'",
    "jwt": "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
           ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "mailchimp-access-key": "MAILCHIMP=" + "0123456789abcdef" * 2 + "-us12",
    "npm-token": "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "openai-token": "OPENAI_API_KEY=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",
    "pypi-token": "password = pypi-AgEIcHlwaS5vcmc" + "A" * 70,
    "sendgrid-api-key": "SENDGRID=SG." + "a" * 22 + "." + "b" * 43,
    "slack-token": "SLACK=xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
    "softlayer-credentials": "softlayer_api_key = '" + "0123456789abcdef" * 4 + "'",
    "square-secret": "SQUARE=sq0csp-" + "A" * 43,
    "stripe-access-key": "STRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "telegram-bot-token": "TELEGRAM=110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawq",
    "twilio-api-key": "TWILIO=AC" + "0123456789abcdef" * 2,
    "password": "password=SuperS3cret!",
    "high-entropy": "AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD8kK3xv",
}


def _leaks(text: str) -> list[str]:
    return [s for s in LEAKS if s in text]


def _log_with_secrets(lines: int = 6000) -> str:
    rows = [f"step {i}: compiling module_{i % 97}.c -O2\n" for i in range(lines)]
    rows[2] = f"export AWS_ACCESS_KEY_ID={AWS_KEY}\n"
    rows[3] = f'aws_secret_access_key = "{AWS_SECRET}"\n'
    rows[lines // 2] = PRIVATE_KEY  # in the omitted middle
    rows[lines - 8] = PRIVATE_KEY  # in the tail
    return "".join(rows)


# -- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_each_rule_finds_its_sample_through_the_prefilter(kind: str) -> None:
    """Every rule finds its own kind of secret, and its trigger makes the line a candidate."""
    line = SAMPLES[kind].encode()
    detector = default_detector()
    assert detector.next_candidate(line) >= 0
    assert kind in {f.kind for f in detector.scan_line(line)}
    masked, counts = redact_text(SAMPLES[kind])
    assert counts[kind] == 1 and len(masked) == len(SAMPLES[kind]) and masked != SAMPLES[kind]


def test_every_rule_has_a_sample_and_a_trigger_of_its_own() -> None:
    """A detect-secrets upgrade that adds a plugin shows up here, not as a slow prefilter."""
    detector = default_detector()
    assert detector.untriggered == []
    assert {r.kind for r in detector.rules} - {"private-key"} == set(SAMPLES)


_FRAGMENTS = st.sampled_from([*SAMPLES.values(), "key", "pass", "=", ": ", '"', "'", "://", "@", " ",
                              "AKIA", "eyJ", "ghp_", "token", "sha512-", "h1:", "ABCDEF0123456789"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, st.text(alphabet="aZ09+/=_-.:@ ", max_size=30)), max_size=6))
def test_the_prefilter_skips_no_line_a_rule_would_flag(parts: list[str]) -> None:
    """Running only the triggered rules finds exactly what running every rule finds."""
    line = "".join(parts).encode()
    detector = default_detector()
    every = detector.scan_line(line, every_rule=True)
    assert detector.scan_line(line) == every
    if every:
        assert detector.next_candidate(line) >= 0


def test_ordinary_build_logs_have_no_false_positive() -> None:
    """Four MiB of CI output (digests, commit ids, UUIDs, env) masks nothing."""
    log = build_log(4 << 20)
    assert redact_bytes(log).counts == {}


def test_markers_keep_byte_lengths_and_name_the_kind() -> None:
    """A mask is as long as the secret; it names the kind when that fits."""
    assert marker("aws-key", 20) == "[redacted:aws-key]**"
    assert marker("url-password", 7) == "*******"
    masked, counts = redact_text(f"id={AWS_KEY} password=é{AWS_SECRET}")
    assert len(masked.encode()) == len(f"id={AWS_KEY} password=é{AWS_SECRET}".encode())
    assert "[redacted:aws-key]" in masked and not _leaks(masked) and counts["aws-key"] == 1


def test_a_private_key_is_masked_whole_with_its_lines_kept() -> None:
    """BEGIN to END, newlines kept (line numbers stay exact); the JSON one-line form too."""
    text = "before\n" + PRIVATE_KEY + "after\n"
    masked, counts = redact_text(text)
    assert masked.count("\n") == text.count("\n") and masked.startswith("before\n")
    assert masked.endswith("after\n") and not _leaks(masked) and counts == {"private-key": 1}
    one_line = '{"private_key": "' + PRIVATE_KEY.replace("\n", "\\n") + '", "client_email": "a@b"}'
    masked, _ = redact_text(one_line)
    assert not _leaks(masked) and masked.endswith('"client_email": "a@b"}')


def test_a_text_starting_inside_a_key_block_is_masked_up_to_its_end() -> None:
    """A tail or a page that begins mid-key has no BEGIN line: everything before END goes."""
    text = "\n".join(KEY_BODY[1:]) + "\n-----END RSA PRIVATE KEY-----\nok\n"
    masked, _ = redact_text(text, headless=True)
    assert not _leaks(masked) and masked.endswith("\nok\n")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=40))
def test_streaming_masks_exactly_what_masking_the_whole_text_does(cuts: list[int]) -> None:
    """Chunk edges anywhere (inside a secret, inside a key block) change nothing."""
    data = _log_with_secrets(40).encode()
    redactor, out, pos = StreamRedactor(), [], 0
    for size in cuts * (len(data) // sum(cuts) + 1):
        out.append(redactor.push(data[pos:pos + size]))
        pos += size
        if pos >= len(data):
            break
    out.append(redactor.finish())
    assert b"".join(out) == redact_bytes(data).data


def test_a_line_longer_than_the_scan_window_is_still_masked() -> None:
    """A secret in a multi-MiB single line (minified JSON) is found wherever the pieces fall."""
    data = (b"x" * (MAX_LINE_BYTES + 5) + b" " + SAMPLES["aws-key"].encode() + b" " + b"y" * MAX_LINE_BYTES)
    redactor = StreamRedactor()
    out = b"".join(redactor.push(data[i:i + 65536]) for i in range(0, len(data), 65536))
    out += redactor.finish()
    assert len(out) == len(data) and AWS_KEY.encode() not in out and redactor.counts["aws-key"] == 1


# -- the spill path ------------------------------------------------------------------------


@pytest.fixture
def local(tmp_path: Path) -> ObjectStore:
    return LocalStore(tmp_path)


def test_an_inline_env_dump_is_shown_masked(local: ObjectStore) -> None:
    """``env`` output under the threshold is never stored, but still never shows a secret."""
    env = f"HOME=/home/dev\nAWS_ACCESS_KEY_ID={AWS_KEY}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\nPWD=/srv\n"
    with Spiller(local, "s", journal=None) as sp:
        result = sp.externalize(env, "bash")
    assert result.mode == "inline" and not _leaks(result.context_text)
    assert "HOME=/home/dev" in result.context_text and "PWD=/srv" in result.context_text
    assert result.masked == {"aws-key": 1, "high-entropy": 1} and result.total_bytes == len(env)


def test_preview_read_and_grep_never_show_a_secret_with_redaction_at_rest(local: ObjectStore) -> None:
    """The issue's case: an AWS key and a private key; preview, read and grep stay clean,
    and the stored copy, its SHA-256 and the pointer describe the masked text."""
    text = _log_with_secrets()
    policy = SpillPolicy(secrets="at_rest")
    with Spiller(local, "sess", policy, journal=None) as sp:
        result = sp.externalize(text, "bash")
    assert result.spilled and result.artifact is not None and not _leaks(result.context_text)
    assert result.masked_at_rest and result.masked == {"aws-key": 1, "aws-secret": 1, "private-key": 2}
    note = "Secrets were masked before storing (1 aws-key, 1 aws-secret, 2 private-key)"
    assert note in result.context_text
    masked = redact_text(text)[0].encode()
    assert result.artifact.sha256 == hashlib.sha256(masked).hexdigest()
    assert result.artifact.size_bytes == len(text.encode())  # masking keeps byte lengths
    tools = AgentTools(local, "sess", policy=policy)
    sid = result.artifact.source_id
    for offset in (0, 2995, 5985):
        assert not _leaks(tools.read_artifact(sid, offset=offset, limit=40))
    for pattern in ("AKIA", "MII", "aws_secret", "[A-Za-z0-9+/]{40}", "PRIVATE"):
        assert not _leaks(tools.grep_artifact(sid, pattern, context=3))
    stored = b"".join(tools.artifacts.iter_verified(sid, "sess"))
    assert stored == masked and not _leaks(stored.decode())


def test_preview_mode_masks_what_the_model_sees_and_stores_the_output_as_is(local: ObjectStore) -> None:
    """The default: the stored copy is the tool's output; preview, pages and matches are masked."""
    text = _log_with_secrets()
    with Spiller(local, "sess", journal=None) as sp:
        result = sp.externalize(text, "bash")
    assert result.artifact is not None and not result.masked_at_rest and not _leaks(result.context_text)
    assert "Secrets were masked in this preview" in result.context_text
    assert result.artifact.sha256 == hashlib.sha256(text.encode()).hexdigest()
    tools = AgentTools(local, "sess")
    sid = result.artifact.source_id
    assert not _leaks(tools.read_artifact(sid, offset=3000, limit=10))  # starts inside the key
    assert not _leaks(tools.read_artifact(sid, offset=0, limit=20))
    assert not _leaks(tools.grep_artifact(sid, "AKIA|MII|lWu2|Zq8m|wJalr"))


def test_a_head_cut_inside_a_secret_shows_no_part_of_it(local: ObjectStore) -> None:
    """The preview's head ends in the middle of a secret key: the cut piece is masked too."""
    policy = SpillPolicy()
    head = policy.for_tool("bash").retention().head_bytes
    prefix = "a" * (head - 30) + f'\naws_secret_access_key = "{AWS_SECRET}"\n'
    with Spiller(local, "sess", policy, journal=None) as sp:
        result = sp.externalize(prefix + "filler line\n" * 20000, "bash")
    shown = result.context_text.split("[…")[0]
    assert AWS_SECRET[:12] not in shown and not re.search(r"wJalrXUtn", shown)


def test_secrets_off_shows_what_the_tool_printed(local: ObjectStore) -> None:
    """``secrets="off"`` is the escape hatch: nothing is masked or counted."""
    with Spiller(local, "sess", SpillPolicy(secrets="off"), journal=None) as sp:
        result = sp.externalize(f"AWS_ACCESS_KEY_ID={AWS_KEY}\n", "bash")
    assert AWS_KEY in result.context_text and result.masked == {}


def test_text_blocks_of_a_block_result_are_shown_masked(local: ObjectStore) -> None:
    """A tool result made of blocks (MCP content) gets the same masking as plain text."""
    from s3spill.context.block_plan import ImageBlock, TextBlock

    blocks = [TextBlock(f"token: {AWS_KEY}\n"), ImageBlock(b"\x89PNG" + b"0" * 100)]
    with Spiller(local, "s", journal=None) as sp:
        out = sp.externalize_blocks(blocks, "mcp_tool")
    assert not _leaks(out.text) and "[redacted:aws-key]" in out.text


def test_a_line_seen_again_gets_the_findings_of_its_own_rules() -> None:
    """The detector remembers short lines' findings by line and rule set: the same line
    asked with other rules, or again, answers as a fresh detector does; the memory is bounded."""
    import s3spill.context.secrets.detector as detector_module
    from s3spill.context.secrets.detector import SecretDetector

    line = SAMPLES["aws-key"].encode()
    detector = SecretDetector("re2")
    fresh = SecretDetector("re2").scan_line(line)
    assert detector.scan_line(line) == detector.scan_line(line) == fresh and fresh
    assert detector.scan_line(line, hits=frozenset()) == []
    other = frozenset({detector._kinds.index("github-token")})
    assert detector.scan_line(line, hits=other) == SecretDetector("re2").scan_line(line, hits=other) == []
    for n in range(detector_module._CACHED_LINES + 10):
        detector.scan_line(b"AKIA" + str(n).encode())
    assert len(detector._seen) <= detector_module._CACHED_LINES
