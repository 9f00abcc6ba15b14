"""A masked page read answered on the fast path shows what the full path's masked view shows (issue 35).

The fast read searches only the page's lines (and the next one) for a trigger, and the whole
window for a private-key marker; secrets elsewhere in the same chunk leave it answering.
"""

from __future__ import annotations

import random

import pytest

from s3spill.artifacts.store import ArtifactStore
from s3spill.cli import fast_artifact, read_fast
from s3spill.config import TransferConfig
from s3spill.store.local import LocalStore
from tests.cli.conftest import CliCall, full_path
from tests.context.secrets.conftest import KINDS

SESSION = "s"
FILLER = ["{i:05d} INFO request handled path=/api/v1/items/{i:08d} status=200 took_ms={i}",
          "{i:05d} caf\u00e9 \u00fcber \u4e2d\u6587 \U0001f600 step={i} ok",
          "{i:05d} plain words, no assignment",
          "{i:05d} " + "x" * 300 + " long=line"]


def _text(rng: random.Random, lines: int, *, key_block: bool) -> tuple[bytes, list[int]]:
    """``lines`` lines of filler with a few secrets planted (a private key block among them
    only if ``key_block``); the line numbers (0-based) where a secret's lines start."""
    out: list[str] = []
    planted: list[int] = []
    kinds = [k for k in KINDS if key_block or k.name != "private-key"]
    while len(out) < lines:
        if rng.random() < 0.01:
            planted.append(len(out))
            out += rng.choice(kinds).line().split("\n")
        else:
            out.append(rng.choice(FILLER).format(i=len(out)))
    return ("\n".join(out) + ("\n" if rng.random() < 0.8 else "")).encode(), planted


def _store(local: LocalStore, data: bytes, chunk: int) -> str:
    arts = ArtifactStore(local, TransferConfig(index_chunk_size=chunk), session_id=SESSION)
    return arts.write(SESSION, [data], "bench").source_id


def test_every_answered_masked_page_is_the_full_paths(local: LocalStore, cli: CliCall,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Random logs with secrets of every kind (a private key block too), random pages and chunk
    sizes: a page the fast read answers is the full path's byte for byte, pages near a secret
    are left to it, and pages of a chunk that holds a secret elsewhere are answered."""
    rng = random.Random(35)
    answered = beside = 0
    for case in range(30):
        data, planted = _text(rng, rng.choice([300, 900]), key_block=case % 3 == 2)
        sid = _store(local, data, rng.choice([4096, 16384, 1 << 20]))
        total = data.count(b"\n") + (not data.endswith(b"\n"))
        for _ in range(6):
            offset = rng.randrange(total)
            if planted and rng.random() < 0.6:  # on, just before or just after a secret's lines
                offset = max(0, min(total - 1, rng.choice(planted) + rng.randint(-6, 3)))
            argv = ["read", sid, "--offset", str(offset), "--limit", str(rng.choice([1, 2, 5, 40]))]
            if rng.random() < 0.4:
                argv += ["--max-chars", str(rng.choice([700, 1000, 1500]))]
            code = read_fast.fast_read(argv)
            fast = capsys.readouterr().out
            full = full_path(cli, monkeypatch, *argv)
            assert full[0] == 0 and all(k.secret.split("\n")[0] not in full[1] for k in KINDS), (case, argv)
            if code is None:
                continue
            answered += 1
            assert (code, fast) == full[:2], (case, argv)
            if planted and "[redacted" not in full[1]:
                beside += 1
    assert answered > 30 and beside > 10, (answered, beside)


def _page(local: LocalStore, lines: list[str], offset: int, limit: int) -> int | None:
    sid = _store(local, ("\n".join(lines) + "\n").encode(), 1 << 20)
    return read_fast.fast_read(["read", sid, "--offset", str(offset), "--limit", str(limit)])


@pytest.mark.parametrize(("where", "answered"), [(0, True), (59, True), (60, False), (62, False), (63, False),
                                                 (64, True), (99, True)])
def test_a_secret_in_the_page_or_the_next_line_leaves_the_page_to_the_full_path(
        where: int, answered: bool, local: LocalStore, capsys: pytest.CaptureFixture[str]) -> None:
    """Page 60-62 and the line after it (63, which a page that ends on its budget reads to see
    whether it fits): a GitHub token there is the full path's to mask; one before or after,
    in the same chunk, is not on the page."""
    lines = [f"{i:05d} INFO status=200 took_ms={i}" for i in range(100)]
    lines[where] = "remote: token ghp_Zk8Qw3Rt6Yu9Io2Pa5Sd7Fg0Hj4Kl1Zx3Cv6B accepted"
    code = _page(local, lines, 60, 3)
    capsys.readouterr()
    assert (code is not None) is answered, where


@pytest.mark.parametrize("marker", ["-----BEGIN RSA PRIVATE KEY-----", "-----END OPENSSH PRIVATE KEY-----",
                                    "PuTTY-User-Key-File-3: ssh-rsa", "Private-MAC: 0a1b2c"])
def test_a_key_block_marker_anywhere_in_the_window_leaves_the_page_to_the_full_path(
        marker: str, local: LocalStore, capsys: pytest.CaptureFixture[str]) -> None:
    """A key block spans lines (BEGIN to END, or a window that starts inside one), so a marker
    far from the page still sends it to the full path."""
    lines = [f"{i:05d} INFO status=200 took_ms={i}" for i in range(400)]
    assert _page(local, lines, 300, 5) is not None
    lines[3] = marker
    assert _page(local, lines, 300, 5) is None
    capsys.readouterr()


def test_the_key_block_markers_are_the_private_key_trigger() -> None:
    """The marker search is the private-key rule's trigger, which every BEGIN and END line holds."""
    from s3spill.context.secrets import masking
    from s3spill.context.secrets.triggers import TRIGGERS

    markers = TRIGGERS["private-key"].split("|")
    for pattern in (masking._BEGIN, masking._END):
        assert all(any(m in alt for m in markers) for alt in pattern.pattern.decode().split("|"))
    assert fast_artifact.Unsure is read_fast.Unsure


def test_the_key_block_trigger_is_plain_literals_as_the_fast_read_looks_for_them() -> None:
    """The fast read looks for the key-block trigger's alternatives as literals: each must be one."""
    from s3spill.context.secrets.triggers import TRIGGERS

    markers = TRIGGERS["private-key"].split("|")
    assert markers and all(m and not set(m) & set(r"\.^$*+?{}[]()") for m in markers)
