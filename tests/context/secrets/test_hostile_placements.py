"""Secrets placed where views cut text: every path the model reads, both masking modes, 0 leaks.

Each case runs twice, with the secret and with a same-shaped stand-in, so a 4-character
piece counts as a leak only when the view shows it because the secret was there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from s3spill.agent.tools import AgentTools
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import LiveConfig
from s3spill.context.policy import SpillPolicy
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from tests.cli.in_process import cli_call, local_cli_env
from tests.context.secrets.conftest import KINDS, Kind, leaks, placeholder

MODES = ["preview", "at_rest"]
NON_ASCII = "デプロイ失敗（認証エラー）→ ✅ "
FILLER = "".join(f"row {i:05d} compiled module_{i % 97} ok\n" for i in range(4000))


def _spill(store: ObjectStore, session: str, text: str, mode: str) -> tuple[str, AgentTools, str | None]:
    policy = SpillPolicy(secrets=mode)  # type: ignore[arg-type]
    with Spiller(store, session, policy, journal=None) as sp:
        result = sp.externalize(text, "bash")
    sid = result.artifact.source_id if result.artifact is not None else None
    return result.context_text, AgentTools(store, session, policy=policy), sid


def _stored(store: ObjectStore, session: str, text: str, mode: str) -> tuple[AgentTools, str]:
    """:func:`_spill` of an output that must be stored: the tools and its source id."""
    _, tools, sid = _spill(store, session, text, mode)
    assert sid is not None
    return tools, sid


def _check(kind: Kind, build: Callable[[str], str], views: Callable[[str, str], list[str]],
           store: ObjectStore) -> None:
    """``build(secret) -> output``; ``views(output, tag) -> texts the model sees``."""
    shown = "\n".join(views(build(kind.secret), "s"))
    clean = "\n".join(views(build(placeholder(kind.secret)), "c"))
    found = leaks(shown, clean, kind.secret)
    assert not found, f"{kind.name}: {found[:6]}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_non_ascii_earlier_on_the_line_does_not_shift_the_mask(local: ObjectStore, kind: Kind,
                                                               mode: str) -> None:
    """Multi-byte characters before a secret: preview, read and grep mask all of it."""
    def views(text: str, tag: str) -> list[str]:
        preview, tools, sid = _spill(local, f"na-{tag}-{mode}", text, mode)
        assert sid is not None
        return [preview, tools.read_artifact(sid, offset=3990, limit=30),
                tools.grep_artifact(sid, "aws|BEGIN|token|https|SESSION|MII|Hq7", context=2)]

    _check(kind, lambda s: FILLER + NON_ASCII + kind.line(s) + "\n" + FILLER[:9000], views, local)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_a_secret_cut_by_the_preview_seams_shows_no_piece(local: ObjectStore, kind: Kind, mode: str) -> None:
    """The head's end and the tail's start fall inside the secret, at every offset."""
    head, tail = SpillPolicy().for_tool("bash").preview(None)
    body = "".join(f"step {i:05d} done\n" for i in range(6000))
    secret_len = len(kind.line())

    def views(text: str, tag: str) -> list[str]:
        return [_spill(local, f"seam-{tag}-{mode}", text, mode)[0]]

    for shift in range(0, secret_len, max(1, secret_len // 5)):
        lead = "x" * (head - shift - 1) + "\n"
        _check(kind, lambda s, lead=lead: lead + kind.line(s) + "\n" + body, views, local)
        tail_lead = body + "y" * 50 + "\n"

        def at_tail(s: str, shift: int = shift, tail_lead: str = tail_lead) -> str:
            line = kind.line(s) + "\n"
            rest = "z" * max(0, tail - (len(line.encode()) - shift)) + "\n"
            return tail_lead + line + rest

        _check(kind, at_tail, views, local)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_pages_starting_inside_a_secret_show_no_piece(local: ObjectStore, kind: Kind, mode: str) -> None:
    """``char_offset`` anywhere inside the secret's line, and a page of every line around it."""
    def views(text: str, tag: str) -> list[str]:
        tools, sid = _stored(local, f"co-{tag}-{mode}", text, mode)
        out = []
        for n, line in enumerate(kind.line().split("\n")):
            for c in range(0, len(line), 3):
                out.append(tools.read_artifact(sid, offset=4000 + n, limit=1, char_offset=c))
        out.append(tools.read_artifact(sid, offset=3999, limit=8))
        return out

    _check(kind, lambda s: FILLER + kind.line(s) + "\n" + FILLER, views, local)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_plain_paging_of_a_long_line_splits_no_secret_into_readable_halves(local: ObjectStore, kind: Kind,
                                                                         mode: str) -> None:
    """A line longer than a page is paged in pieces; wherever a piece ends, no half shows."""
    def views(text: str, tag: str) -> list[str]:
        tools, sid = _stored(local, f"long-{tag}-{mode}", text, mode)
        out, offset, char = [], 0, 0
        for _ in range(400):
            got = tools.read_outcome(sid, offset=offset, char_offset=char)
            out.append(got.text)
            data = got.structured
            if data["eof"] or data["next_offset"] is None:
                break
            offset, char = data["next_offset"], data["next_char_offset"] or 0
        return out

    for pad in (0, 7, 19):
        def build(s: str, pad: int = pad) -> str:
            return "w" * (4000 * 3 + pad) + " " + kind.line(s).replace("\n", " ") + " " + "v" * 90_000 + "\n"
        tools_page = SpillPolicy().hard_cap_chars
        assert tools_page > 0
        _check(kind, build, views, local)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_grep_excerpts_and_context_lines_show_no_piece(local: ObjectStore, kind: Kind, mode: str) -> None:
    """An excerpt of a long line that starts or ends inside the secret; context lines around it."""
    def views(text: str, tag: str) -> list[str]:
        tools, sid = _stored(local, f"grep-{tag}-{mode}", text, mode)
        return [tools.grep_artifact(sid, "NEEDLE", context=2),
                tools.grep_artifact(sid, "HAYSTACK", context=3)]

    for gap in (0, 25, 40, 52, 170):  # the excerpt starts 60 characters before NEEDLE: in the secret, or not
        def build(s: str, gap: int = gap) -> str:
            flat = kind.line(s).replace("\n", " ")
            line = "q" * 3000 + " " + flat + " " + "p" * gap + " NEEDLE " + "r" * 3000
            return FILLER[:20000] + "HAYSTACK\n" + kind.line(s) + "\n" + line + "\n" + FILLER[:20000]
        _check(kind, build, views, local)


@pytest.mark.parametrize("mode", MODES)
def test_grep_counts_run_over_what_the_model_can_read(local: ObjectStore, mode: str) -> None:
    """With masking on, a pattern that matches only the secret finds nothing to count."""
    secret = KINDS[2].secret
    tools, sid = _stored(local, f"count-{mode}", FILLER + KINDS[2].line() + "\n" + FILLER, mode)
    for prefix in (secret[:6], secret[:12], secret[4:20]):
        got = tools.grep_outcome(sid, prefix)
        assert got.structured["total_matches"] == 0, prefix


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_live_reads_and_greps_of_a_running_output_show_no_piece(local: ObjectStore, kind: Kind) -> None:
    """A live output read and searched while it runs, the secret cut by a segment boundary."""
    from s3spill.live.writer import LiveWriter

    config = LiveConfig(segment_bytes=64, segment_interval=0.05, heartbeat_interval=0.2, lost_after=5.0)

    def views(text: str, tag: str) -> list[str]:
        session = f"live-{tag}"
        w = LiveWriter(local, session, "bash", command="deploy", config=config)
        w.open()
        w.feed(text.encode())
        time.sleep(0.06)
        w.tick()
        tools = AgentTools(local, session)
        sid = str(w.live_id)
        out = [tools.read_artifact(sid, offset=0), tools.grep_artifact(sid, "token|aws|https|SESSION|MII|6mQ",
                                                                       context=1)]
        for n, line in enumerate(kind.line().split("\n")):
            out += [tools.read_artifact(sid, offset=1 + n, limit=1, char_offset=c)
                    for c in range(0, len(line), 4)]
        return out

    _check(kind, lambda s: "starting\n" + kind.line(s) + "\nnext\n", views, local)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_at_rest_masks_background_runs(local: ObjectStore, kind: Kind) -> None:
    """``Spiller.start`` with ``secrets="at_rest"``: the stored copy of a command's output is masked."""
    with Spiller(local, "bg", SpillPolicy(secrets="at_rest"), journal=None) as sp:
        handle = sp.start(["sh", "-c", 'printf "%s\\n" "$SECRET_LINE"'], env={"SECRET_LINE": kind.line(),
                                                                           "PATH": "/usr/bin:/bin"})
        final = handle.wait(20)
    assert final is not None and final.final_source_id is not None
    stored = b"".join(ArtifactStore(local, session_id="bg").iter_verified(str(final.final_source_id)))
    assert not leaks(stored.decode(), "", kind.secret), stored[:200]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_at_rest_masks_a_secret_across_input_chunks_of_a_line_longer_than_a_mib(local: ObjectStore,
                                                                               kind: Kind) -> None:
    """A > 1 MiB line whose 1 MiB input chunks cut the secret: the stored copy holds no piece."""
    line = kind.line().replace("\n", " ")
    for cut in (len(line) // 2, len(line) - 15, len(line) - 8):
        head = "a" * (1024 * 1024 * 2 - cut - 1) + " "
        data = (head + line + " " + "b" * (1024 * 1024) + "\n").encode()
        chunks = [data[i:i + 1024 * 1024] for i in range(0, len(data), 1024 * 1024)]
        with Spiller(local, "big", SpillPolicy(secrets="at_rest"), journal=None) as sp:
            result = sp.externalize(iter(chunks), "bash")
        assert result.artifact is not None
        stored = b"".join(ArtifactStore(local, session_id="big").iter_verified(result.artifact.source_id))
        assert not leaks(stored.decode(), "", kind.secret), (cut, kind.name)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_the_cli_read_and_grep_a_pointer_names_are_masked_unless_the_operator_asks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        kind: Kind) -> None:
    """``s3spill read``/``grep`` (what ``s3spill run``'s pointer tells the model to run) mask by
    default in ``preview`` mode; ``--show-secrets`` prints the stored bytes."""
    store = local_cli_env(tmp_path, monkeypatch, "cli-s")
    monkeypatch.setenv("S3SPILL_SHOW_SECRETS", "1")  # a variable in the model's shell unmasks nothing

    def views(text: str, tag: str) -> list[str]:
        monkeypatch.setenv("S3SPILL_SESSION", f"cli-{tag}")
        with Spiller(store, f"cli-{tag}", journal=None) as sp:
            sid = sp.externalize(FILLER + text + "\n" + FILLER, "bash").artifact.source_id  # type: ignore[union-attr]
        out = [cli_call(["read", sid, "--offset", "3999", "--limit", "8"], capsys)[1],
               cli_call(["read", sid, "--offset", "4001", "--limit", "1", "--char-offset", "9"], capsys)[1],
               cli_call(["grep", sid, "token|aws|https|SESSION|MII|6mQ", "--context", "1"], capsys)[1],
               cli_call(["grep", sid, "token|aws", "--json"], capsys)[1]]
        operator = cli_call(["read", sid, "--offset", "3999", "--limit", "8", "--show-secrets"], capsys)[1]
        assert tag == "c" or kind.secret.split("\n")[0] in operator
        return out

    _check(kind, lambda s: kind.line(s), views, store)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_summaries_in_listings_and_references_show_no_piece(local: ObjectStore, kind: Kind,
                                                             mode: str) -> None:
    """The first line (cut at 200 characters, maybe inside the secret) as the listing, its
    structured data and the reference handed to the harness quote it."""
    import json

    def views(text: str, tag: str) -> list[str]:
        policy = SpillPolicy(secrets=mode)  # type: ignore[arg-type]
        with Spiller(local, f"sum-{tag}-{mode}", policy, journal=None) as sp:
            result = sp.externalize(text, "bash")
        assert result.artifact is not None
        got = AgentTools(local, f"sum-{tag}-{mode}", policy=policy).list_outcome()
        return [got.text, json.dumps(got.structured), result.artifact.summary]

    for lead in (170, 185, 195):
        def build(s: str, lead: int = lead) -> str:
            return "w" * lead + " " + kind.line(s).replace("\n", " ") + "\n" + FILLER
        _check(kind, build, views, local)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_the_hooks_and_the_proxy_mask_results_they_keep_inline(local: ObjectStore, kind: Kind) -> None:
    """Under every threshold the hooks (Claude Code, Gemini CLI) and the proxy used to hand the
    tool's own text on; a secret in it is masked there too, and a clean result is untouched."""
    import json

    from s3spill.adapters.harness_hooks import answer
    from s3spill.proxy.results import ResultSpiller
    from s3spill.proxy.settings import ProxySettings

    def views(text: str, tag: str) -> list[str]:
        claude = {"hook_event_name": "PostToolUse", "session_id": f"hook-{tag}", "tool_name": "Bash",
                  "tool_use_id": "t1", "tool_response": {"stdout": text, "stderr": ""}}
        gemini = {"hook_event_name": "AfterTool", "session_id": f"hook-{tag}",
                  "tool_name": "run_shell_command",
                  "tool_response": {"llmContent": text}}
        out = []
        for harness, payload in (("claude-code", claude), ("gemini-cli", gemini)):
            got = answer(harness, json.dumps(payload).encode(), lambda: local)  # type: ignore[arg-type]
            out.append(got.decode() if got else json.dumps(payload))  # b"": the harness keeps its own
        with Spiller(local, f"proxy-{tag}", journal=None) as sp:
            result = {"content": [{"type": "text", "text": text}]}
            changed = ResultSpiller(sp, ProxySettings()).spill(result, "search", None)
            out.append(json.dumps(changed if changed is not None else result))
        return out

    _check(kind, lambda s: "deploy log\n" + kind.line(s) + "\ndone\n", views, local)


def test_the_cli_listing_masks_summaries_unless_the_operator_asks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``s3spill ls --json`` carries each output's first line: masked as reads are."""
    store = local_cli_env(tmp_path, monkeypatch, "ls-s")
    kind = KINDS[2]
    with Spiller(store, "ls-s", journal=None) as sp:
        sp.externalize(kind.line() + "\n" + FILLER, "bash")
    shown = cli_call(["ls", "--json"], capsys)[1]
    assert kind.secret[:12] not in shown and "[redacted:github-token]" in shown
    assert kind.secret in cli_call(["ls", "--json", "--show-secrets"], capsys)[1]
