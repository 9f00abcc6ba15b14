"""The retrieval tools: session-bound, every result within the policy, every failure one line."""

from __future__ import annotations

import re
from typing import Any

import anyio
from mcp import Client

from s3spill.agent.mcp.server import build_server
from s3spill.agent.tools import AgentTools, ToolOutcome
from s3spill.artifacts.paging import unrender
from s3spill.artifacts.store import ArtifactStore
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.store import ObjectStore
from s3spill.testing import Fault, FaultyStore
from tests.conftest import TEST_CONFIG

SESSION = "tools-session"
DATA = "".join(
    f"{i:05d} {'FAIL test_' + str(i) if i % 25 == 7 else 'passed ✓ ünïcödé ' * 3}\n" for i in range(1_500)
).encode()
_NEXT = re.compile(r"continue with offset=(\d+), char_offset=(\d+)\]")


def _tight_policy(limit: int = 4_000) -> SpillPolicy:
    """A policy under which the default 40,000-character page would be spilled again."""
    return SpillPolicy(read_tool="read_artifact", grep_tool="grep_artifact",
                       default=ToolPolicy(threshold=limit, threshold_unit="bytes"))


def _write(store: ObjectStore, data: bytes = DATA, session: str = SESSION) -> str:
    return ArtifactStore(store, TEST_CONFIG, session_id=session).write(session, data, "pytest").source_id


def test_pages_fit_the_policy_and_footers_reconstruct_the_output(store: ObjectStore) -> None:
    """With a 4,000-byte budget each page stays under it (multi-byte text included) and
    following the footers from the first page yields every byte exactly once."""
    sid = _write(store)
    tools = AgentTools(store, SESSION, policy=_tight_policy())
    out, offset, char_offset, pages = b"", 0, 0, 0
    while True:
        text = tools.read_artifact(sid, offset=offset, char_offset=char_offset, limit=2_000)
        assert len(text.encode()) <= 4_000 and not tools.policy.should_externalize(text, "read_artifact")
        out += unrender(text)
        pages += 1
        m = _NEXT.search(text)
        if m is None:
            assert "[EOF: line 1500 is the last line]" in text
            break
        offset, char_offset = int(m.group(1)), int(m.group(2))
    assert out == DATA and pages > len(DATA) // 4_000


def test_grep_is_cut_to_the_budget_and_counts_what_it_dropped(store: ObjectStore) -> None:
    """Sixty matches with context do not fit 4,000 bytes: fewer are shown and the footer
    still adds up to the true total."""
    sid = _write(store)
    tools = AgentTools(store, SESSION, policy=_tight_policy())
    text = tools.grep_artifact(sid, r"FAIL test_\d+", context=2, max_matches=60)
    assert len(text.encode()) <= 4_000
    m = re.search(r"\[(\d+) of 60 matching lines shown; (\d+) more omitted", text)
    assert m is not None, text[-200:]
    shown, omitted = int(m.group(1)), int(m.group(2))
    assert 0 < shown < 60 and shown + omitted == 60 and text.count(":\t") == shown
    assert "    8:\t00007 FAIL test_7" in text


def test_default_policy_keeps_default_pages(store: ObjectStore) -> None:
    """Under the default policy a page is the artifact store's own page: no shrinking."""
    sid = _write(store)
    tools = AgentTools(store, SESSION)
    direct = ArtifactStore(store, TEST_CONFIG, session_id=SESSION).read_page(sid, limit=200)
    assert tools.read_artifact(sid, limit=200) == direct.render()


def test_pointer_names_the_tools_the_model_has(store: ObjectStore) -> None:
    """With default settings the pointer tells the model to call exactly the tools it is given."""
    from s3spill.spill.spiller import Spiller

    tools = AgentTools(store, SESSION)
    with Spiller(store, SESSION, journal=None) as spiller:
        text = spiller.externalize(DATA * 2, "bash", "c1", 0).context_text
    declared = [spec["function"]["name"] for spec in tools.specs("openai")]
    called = re.findall(r"(\w+)\(source_id", text)
    assert called == ["read_artifact", "grep_artifact"] and set(called) <= set(declared)


def test_tools_take_the_same_defaults_as_the_cli(local_store: ObjectStore) -> None:
    """A model paging with the tools and a person paging with the CLI get the same page and match
    counts by default, in the signatures and in the declared JSON schemas."""
    import inspect

    from s3spill.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command" or a.choices)
    assert isinstance(sub.choices, dict)
    cli_limit = sub.choices["read"].get_default("limit")
    cli_matches = sub.choices["grep"].get_default("max_matches")
    read_sig = inspect.signature(AgentTools.read_artifact).parameters
    grep_sig = inspect.signature(AgentTools.grep_artifact).parameters
    assert read_sig["limit"].default == cli_limit == 2000
    assert grep_sig["max_matches"].default == cli_matches == 100
    schemas = {s["name"]: s["input_schema"]["properties"]
               for s in AgentTools(local_store, SESSION).specs("anthropic")}
    assert schemas["read_artifact"]["limit"]["default"] == cli_limit
    assert schemas["grep_artifact"]["max_matches"]["default"] == cli_matches


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("read_artifact", {"source_id": "artifact:x"}, "SourceIdError: malformed source id"),
    ("read_artifact", {}, "InvalidRequest: missing argument(s): source_id"),
    ("grep_artifact", {"source_id": "S"}, "InvalidRequest: missing argument(s): pattern"),
    ("read_artifact", {"source_id": "S", "file": "/etc"}, "InvalidRequest: unknown argument(s): file"),
    ("read_artifact", {"source_id": "S", "path": "/etc"}, "InvalidRequest: artifact:"),
    ("read_artifact", {"source_id": "S", "limit": True}, "InvalidRequest: limit must be an integer"),
    ("read_artifact", {"source_id": "S", "offset": 10**9}, "InvalidRequest: offset 1000000000 is beyond"),
    ("grep_artifact", {"source_id": "S", "pattern": "("}, "InvalidRequest: invalid regular expression"),
    ("grep_artifact", {"source_id": "S", "pattern": "x", "max_matches": 0}, "InvalidRequest: max_matches"),
    ("shell", {"cmd": "rm -rf /"}, "InvalidRequest: unknown tool 'shell'"),
]


def test_bad_calls_are_one_line_errors(store: ObjectStore) -> None:
    """Malformed ids, missing, unknown or mistyped arguments, bad offsets and regexes, and
    unknown tools all come back as a one-line error naming the problem."""
    sid = _write(store)
    tools = AgentTools(store, SESSION)
    for name, args, expected in BAD_CALLS:
        outcome = tools.call(name, {k: (sid if v == "S" else v) for k, v in args.items()})
        assert outcome.is_error and outcome.text.startswith(expected), (name, args, outcome)
        assert "\n" not in outcome.text


def test_other_sessions_ids_are_refused(store: ObjectStore) -> None:
    """The session is the harness's: an id of another session is refused, both ways round."""
    mine, theirs = _write(store), _write(store, b"secret\n", "other")
    tools = AgentTools(store, SESSION)
    refused = tools.call("read_artifact", {"source_id": theirs})
    assert refused == ToolOutcome(f"SourceIdError: source id {theirs} does not belong to this session",
                                  is_error=True)
    assert AgentTools(store, "other").call("grep_artifact", {"source_id": mine, "pattern": "."}).is_error
    assert not tools.call("read_artifact", {"source_id": mine}).is_error


def test_mcp_store_unavailable_and_crash_are_tool_errors(store: ObjectStore) -> None:
    """Through the in-process MCP server, a store that is down and a tool that crashes are
    tool errors of one line, and the next call is served normally."""
    sid = _write(store)
    faulty = FaultyStore(store)

    class Crashing(AgentTools):
        def grep_outcome(self, *args: Any, **kwargs: Any) -> ToolOutcome:
            raise RuntimeError("boom\nwith a second line")

    server = build_server(Crashing(faulty, SESSION))

    async def run() -> None:
        async with Client(server) as client:
            faulty.add(Fault("*", "unavailable", times=1))
            down = await client.call_tool("read_artifact", {"source_id": sid})
            assert down.is_error and down.content[0].text.startswith("StoreUnavailable: injected")
            crash = await client.call_tool("grep_artifact", {"source_id": sid, "pattern": "x"})
            assert crash.is_error
            assert crash.content[0].text == (
                "internal error in grep_artifact: RuntimeError: boom with a second line")
            fine = await client.call_tool("read_artifact", {"source_id": sid, "limit": 1})
            assert not fine.is_error and "00000 passed" in fine.content[0].text

    anyio.run(run)


def test_specs_match_the_common_chat_api_shapes(store: ObjectStore) -> None:
    """Declarations come in the OpenAI function shape and the Anthropic tool shape, under the
    names the policy's pointer tells the model to use."""
    tools = AgentTools(store, SESSION)
    openai = tools.specs("openai")
    anthropic = tools.specs("anthropic")
    assert [s["function"]["name"] for s in openai] == ["read_artifact", "grep_artifact", "list_artifacts"]
    assert all(s["type"] == "function" and s["function"]["parameters"]["type"] == "object" for s in openai)
    assert [s["name"] for s in anthropic] == ["read_artifact", "grep_artifact", "list_artifacts"]
    assert anthropic[1]["input_schema"]["required"] == ["source_id", "pattern"]
    assert (tools.policy.read_tool, tools.policy.grep_tool) == ("read_artifact", "grep_artifact")
