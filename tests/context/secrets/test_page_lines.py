"""A masked page read from its own lines is the page masked from whole chunk windows (issue 35).

``ArtifactReader.read_page`` through ``mask_view`` fills a page from the stored chunks and keeps
it when :func:`~s3spill.context.secrets.triggers.lines_kept` says masking leaves its lines (and
the next one) as stored; a view without ``keeps_lines`` masks whole chunk windows, as every read
did before. Both must show the same page, byte for byte, wherever the secrets are.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3spill.artifacts import views
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.context.secrets.masking import mask_view
from s3spill.context.secrets.triggers import lines_kept
from s3spill.store.local import LocalStore
from tests.context.secrets.conftest import KINDS, leaks, placeholder
from tests.examples import examples

SESSION = "s"
FILLER = ["{i:05d} INFO request handled path=/api/v1/items/{i:08d} status=200 took_ms={i}",
          "{i:05d} caf\u00e9 \u00fcber \u4e2d\u6587 \U0001f600 step={i} ok",
          "{i:05d} plain words, no assignment",
          "{i:05d} " + "x" * 300 + " long=line",
          "{i:05d} see artifact:0123456789abcdef0123456789abcdef:20261203T061500Z-0123456789ab-bench"]


def whole_chunks(data: bytes, before: bytes = b"", after: bytes = b"", *, headless: bool = False,
                 cut_end: bool = False) -> bytes:
    """``mask_view`` without ``keeps_lines``: the reader masks whole chunk windows (the path before)."""
    return mask_view(data, before, after, headless=headless, cut_end=cut_end)


#: A log: each line filler (its number) or a planted secret kind (its index in KINDS).
LINES = st.lists(st.one_of(st.integers(0, len(FILLER) - 1).map(lambda f: ("filler", f)),
                           st.integers(0, len(KINDS) - 1).map(lambda k: ("secret", k))),
                 min_size=1, max_size=400).filter(lambda ls: sum(k == "secret" for k, _ in ls) <= 12)


def _text(plan: list[tuple[str, int]], newline_at_end: bool, *, clean: bool = False) -> bytes:
    """The log of ``plan``; ``clean``: each secret replaced by a stand-in of its shape."""
    out: list[str] = []
    for kind, which in plan:
        if kind == "secret":
            secret = KINDS[which].secret
            out += KINDS[which].line(placeholder(secret) if clean else None).split("\n")
        else:
            out.append(FILLER[which].format(i=len(out)))
    return ("\n".join(out) + ("\n" if newline_at_end else "")).encode()


@settings(max_examples=examples(suite=60, thorough=300), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(plan=LINES, newline_at_end=st.booleans(), chunk=st.sampled_from([4096, 16384, 1 << 20]),
       where=st.floats(0, 1), limit=st.sampled_from([1, 2, 5, 40, 2000]),
       max_chars=st.sampled_from([700, 1500, 20_000, 100_000]))
def test_a_page_from_its_own_lines_is_the_page_from_whole_chunk_windows(
        plan: list[tuple[str, int]], newline_at_end: bool, chunk: int, where: float, limit: int,
        max_chars: int) -> None:
    """Random logs with planted secrets of every kind, any chunk size and page: the reader through
    ``mask_view`` returns the page (and its rendering) that whole-chunk masking returns, and it
    shows no 4-character piece of a planted secret that the same page of the log with stand-ins
    does not show too."""
    data = _text(plan, newline_at_end)
    total = data.count(b"\n") + (not data.endswith(b"\n"))
    offset = min(total - 1, int(where * total))
    with tempfile.TemporaryDirectory() as tmp:
        local = LocalStore(Path(tmp))
        sid = ArtifactStore(local, TransferConfig(index_chunk_size=chunk), session_id=SESSION).write(
            SESSION, [data], "bench").source_id
        lines = ArtifactStore(local, session_id=SESSION, view=mask_view).read_page(
            sid, offset=offset, limit=limit, max_chars=max_chars)
        whole = ArtifactStore(local, session_id=SESSION, view=whole_chunks).read_page(
            sid, offset=offset, limit=limit, max_chars=max_chars)
        stand_in = ArtifactStore(local, TransferConfig(index_chunk_size=chunk), session_id=SESSION).write(
            SESSION, [_text(plan, newline_at_end, clean=True)], "bench").source_id
        clean = ArtifactStore(local, session_id=SESSION, view=mask_view).read_page(
            stand_in, offset=offset, limit=limit, max_chars=max_chars).render("cli")
    assert lines == whole
    shown = lines.render("cli")
    assert shown == whole.render("cli")
    for kind in KINDS:
        assert not leaks(shown, clean, kind.secret), kind.name


def test_the_mask_view_says_which_lines_it_keeps() -> None:
    """The reader finds the mask's line question on the view itself, and none on a plain view."""
    assert views.lines_kept_by(mask_view) is lines_kept
    assert views.lines_kept_by(whole_chunks) is None


def test_a_page_near_a_secret_is_masked_from_whole_chunk_windows(tmp_path: Path) -> None:
    """A token on the page's next line, or a key marker anywhere in the window, sends the page to
    whole-chunk masking; a token far from the page in the same chunk does not, and both answers
    mask what the page shows."""
    calls: list[int] = []

    def counting(data: bytes, before: bytes = b"", after: bytes = b"", *, headless: bool = False,
                 cut_end: bool = False) -> bytes:
        calls.append(len(data))
        return mask_view(data, before, after, headless=headless, cut_end=cut_end)

    counting.keeps_lines = lines_kept  # type: ignore[attr-defined]
    token = KINDS[2].line()
    local = LocalStore(tmp_path)
    for where, masked_whole in ((10, False), (63, True), (61, True), (99, False)):
        lines = [f"{i:05d} INFO status=200 took_ms={i}" for i in range(100)]
        lines[where] = token
        sid = ArtifactStore(local, session_id=SESSION).write(SESSION, [("\n".join(lines) + "\n").encode()],
                                                             "t").source_id
        calls.clear()
        page = ArtifactStore(local, session_id=SESSION, view=counting).read_page(sid, offset=60, limit=3)
        assert bool(calls) is masked_whole, where
        assert KINDS[2].secret not in page.render("cli")
    lines = [f"{i:05d} INFO status=200 took_ms={i}" for i in range(400)]
    lines[3] = "-----END OPENSSH PRIVATE KEY-----"
    sid = ArtifactStore(local, session_id=SESSION).write(SESSION, [("\n".join(lines) + "\n").encode()],
                                                         "t").source_id
    calls.clear()
    ArtifactStore(local, session_id=SESSION, view=counting).read_page(sid, offset=300, limit=5)
    assert calls


def test_the_key_marker_byte_is_in_every_key_marker() -> None:
    """The byte looked for before the key-block markers is in each of them (``P``), so a window
    without it holds no marker, and one with it is searched for all three."""
    from s3spill.context.secrets import triggers

    assert triggers._KEY_MARKER_BYTE == b"P"
    assert all(triggers._KEY_MARKER_BYTE in m for m in triggers._KEY_MARKERS)
    page = b"00001 INFO status=200\n"
    for marker in triggers._KEY_MARKERS:
        window = b"x" * 5000 + marker + b"\n" + page
        assert not lines_kept(window, len(window) - len(page), len(window))
    assert lines_kept(b"00000 INFO\n" + page, 11, 11 + len(page))
