"""``s3spill mcp``: serve read_artifact / grep_artifact (and externalize) over MCP.

The store and the session come from ``--store`` and ``--session`` / ``$S3SPILL_SESSION``
— the harness's configuration — so the model can only ever reach its own session. With
``--http --tokens FILE`` one server serves many sessions, each request bound to the session
of the bearer token it carries (tokens issued by the operator with ``--issue-token``).
"""

from __future__ import annotations

import argparse
import sys

from s3spill.agent.mcp.config import check_bind, parse_http_address
from s3spill.cli.argtypes import session_from_args, store_from_args
from s3spill.cli.voice import MCP_EXTRA
from s3spill.errors import ConfigError
from s3spill.store import ObjectStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from s3spill.agent.tools import AgentTools
    from s3spill.spill.spiller import Spiller

TOOLS_HELP = """\
tools it serves:
  read_artifact   read one page of a stored output (offset/limit/char_offset)
  grep_artifact   search a stored output with an RE2 pattern, line by line
  list_artifacts  list this session's stored outputs, newest first
  externalize     for the harness: store a complete output, get the model-facing text
                  (not served with --no-externalize)

example (Claude Code, bound to the project's session, as `s3spill hook claude-code` is):
  claude mcp add s3spill -- sh -c 'exec s3spill --session "claude-code:$CLAUDE_PROJECT_DIR" mcp'
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mcp", help="serve the artifact tools to an agent over the Model Context Protocol",
        description="Serve read_artifact and grep_artifact (and the harness-facing externalize) "
        "over MCP, bound to the configured store and session. stdio by default; --http serves "
        "the streamable HTTP transport at http://HOST:PORT/mcp.",
        epilog=TOOLS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--http", metavar="HOST:PORT",
                   help="serve streamable HTTP instead of stdio (host defaults to 127.0.0.1)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback --http address (use it with --tokens: without it the "
                   "endpoint authenticates no one; put TLS in front)")
    p.add_argument("--no-externalize", action="store_true",
                   help="do not offer the harness-facing externalize tool (model-facing tools only)")
    p.add_argument("--tokens", metavar="FILE",
                   help="with --http: serve every session that has a bearer token in FILE (token "
                   "SHA-256 -> session); each request is bound to its token's session")
    p.add_argument("--issue-token", action="store_true",
                   help="add a token for --session to the --tokens FILE, print it once, and exit")
    p.add_argument("--label", help="with --issue-token: a note kept next to the token's hash")
    p.set_defaults(func=cmd_mcp)


def _store(args: argparse.Namespace) -> ObjectStore:
    """The store served. With ``externalize`` the server is a writer, as ``run`` and the hooks
    are, and makes a missing local store: a harness starts its MCP servers before the first
    tool call, so on a fresh machine the store is not there yet. ``--no-externalize`` serves
    reads only, and a read never makes a store: a mistyped path is ``StoreNotFound``."""
    return store_from_args(args, create=not args.no_externalize)


def _cmd_mcp_tokens(args: argparse.Namespace) -> int:
    """``--issue-token`` and the multi-session ``--http --tokens`` server."""
    from s3spill.agent.mcp.tokens import TokenRegistry, issue_token

    if not args.tokens:
        raise ConfigError("--issue-token needs --tokens FILE")
    if args.issue_token:
        token = issue_token(args.tokens, session_from_args(args, default=False), args.label)
        sys.stdout.write(token + "\n")
        return 0
    if not args.http:
        raise ConfigError("--tokens serves many sessions over HTTP: add --http HOST:PORT "
                          "(stdio serves the one --session)")
    address = parse_http_address(args.http)
    check_bind(address[0], allow_remote=args.allow_remote)
    tokens = TokenRegistry(args.tokens)
    try:
        from s3spill.agent.mcp import sessions as mcp_sessions
    except ImportError as exc:  # the optional extra is missing
        raise ConfigError(f"s3spill mcp needs the MCP SDK: module {exc.name!r} is not installed",
                          hint=MCP_EXTRA) from None
    store = _store(args)
    pool = mcp_sessions.SessionPool(store, externalize=not args.no_externalize)
    try:
        server = mcp_sessions.build_token_server(pool, tokens)
        mcp_sessions.serve_http_tokens(server, tokens, *address, allow_remote=args.allow_remote)
    finally:
        pool.close()
        store.close()
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    if args.tokens or args.issue_token:
        return _cmd_mcp_tokens(args)
    # Configuration first: the SDK takes seconds to import, a refusal should not.
    session = session_from_args(args, default=False)
    address = parse_http_address(args.http) if args.http else None
    if address is not None:
        check_bind(address[0], allow_remote=args.allow_remote)
    try:
        from s3spill.agent.mcp import server as mcp_server
    except ImportError as exc:  # the optional extra is missing
        raise ConfigError(f"s3spill mcp needs the MCP SDK: module {exc.name!r} is not installed",
                          hint=MCP_EXTRA) from None
    from s3spill.cli.policy_args import policy_from_args

    loaded = policy_from_args(args)
    store = _store(args)
    spillers: list[Spiller] = []

    def make() -> tuple[AgentTools, mcp_server.Externalizer | None]:
        """The tools and the Spiller: built while the SDK answers ``initialize`` (stdio)."""
        from s3spill.agent.tools import AgentTools
        from s3spill.spill.spiller import Spiller
        from s3spill.telemetry import serve_metrics_from_env
        from s3spill.usage.recorder import usage_recorder

        usage = usage_recorder(store)
        serve_metrics_from_env()
        tools = AgentTools(store, session, policy=loaded.spill_policy(harness="mcp"), usage=usage)
        if args.no_externalize:
            return tools, None
        spillers.append(Spiller(store, session, tools.policy, quota=loaded.quota(), usage=usage))
        return tools, mcp_server.spiller_externalizer(spillers[0])

    try:
        if address is None:
            server, built = mcp_server.build_deferred(make)
            mcp_server.serve_stdio(server)
            built()  # the build's failure, if it failed, is the command's (after the session ends)
        else:
            server = mcp_server.build_server(*make())
            mcp_server.serve_http(server, *address, allow_remote=args.allow_remote)
    finally:
        for spiller in spillers:
            spiller.close()
        store.close()
    return 0
