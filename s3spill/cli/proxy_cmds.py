"""``s3spill mcp-proxy -- CMD ARGS...``: any MCP server, with its oversized results spilled.

The upstream is started over stdio and everything it says passes through unchanged,
except ``tools/call`` results over budget (a preview plus a pointer), and three tools of
ours added to its list. The store and the session come from ``--store`` and ``--session``
/ ``$S3SPILL_SESSION`` (else the harness's or the working directory's, as for every command).
``--upstream-url`` reaches a streamable-HTTP upstream instead; ``--http`` serves clients over
streamable HTTP (one upstream per MCP session; ``--tokens`` binds requests to sessions).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from s3spill.cli.argtypes import count, positive, session_from_args, store_from_args, utf8
from s3spill.cli.policy_args import policy_from_args
from s3spill.cli.voice import MCP_EXTRA
from s3spill.errors import ConfigError
from s3spill.failpoints import declare, failpoint

if TYPE_CHECKING:
    import subprocess

    from s3spill.proxy.relay import Relay
    from s3spill.proxy.settings import ProxySettings

FP_CLOSING = declare("proxy.closing", "the relay ended; the spiller and the store not closed yet")

TOOLS_HELP = """\
tools added to the upstream's (names with --tool-prefix, default s3spill_):
  s3spill_read_artifact   read one page of a stored result (offset/limit/char_offset)
  s3spill_grep_artifact   search a stored result with an RE2 pattern, line by line
  s3spill_list_artifacts  list this session's stored results, newest first

example (Claude Code):
  claude mcp add fs -- s3spill --store s3://bucket/spill mcp-proxy -- \\
      npx -y @modelcontextprotocol/server-filesystem /srv/data
"""


def _threshold(value: str) -> tuple[str, int]:
    name, sep, limit = value.rpartition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected TOOL=BYTES, got {value!r}")
    return utf8(name), count(limit)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mcp-proxy", help="run an MCP server behind s3spill: its oversized tool results become pointers",
        description="Start the MCP server CMD over stdio and serve it on our stdin/stdout, unchanged "
        "except that every tool result over budget is stored (text, images, audio, resources, "
        "structuredContent) and replaced by a bounded preview plus a pointer, and three retrieval "
        "tools bound to this session are added.",
        epilog=TOOLS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", metavar="FILE", help="the fleet policy (TOML, as for every command: "
                   "[proxy], [tools], [harness.mcp-proxy]); a .json FILE is the proxy's older settings "
                   "file (tool_prefix, max_inline_tokens, hard_cap_chars, max_image_bytes, thresholds, "
                   "never_spill, call_timeout), under the policy; flags win over both")
    p.add_argument("--tool-prefix", metavar="PREFIX", help="prefix of our tool names (default s3spill_)")
    p.add_argument("--threshold", metavar="TOOL=BYTES", action="append", type=_threshold,
                   help="spill TOOL's text results above BYTES (repeatable)")
    p.add_argument("--never-spill", metavar="TOOL", action="append", type=utf8,
                   help="pass TOOL's results through whatever their size (repeatable)")
    p.add_argument("--max-tokens", type=positive, metavar="N",
                   help="token budget of one result (default 25000, Claude Code's MCP limit)")
    p.add_argument("--hard-cap", type=positive, metavar="CHARS",
                   help="characters one result may never exceed (default 100000)")
    p.add_argument("--call-timeout", type=positive, metavar="SECONDS",
                   help="a tools/call the upstream has not answered after SECONDS gets a timeout error "
                   "and is cancelled upstream (default 1800)")
    p.add_argument("--upstream-url", metavar="URL", help="the upstream is a streamable-HTTP MCP server "
                   "at URL (e.g. http://127.0.0.1:3001/mcp) instead of a command")
    p.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp "
                   "instead of stdio, one upstream per MCP session (host defaults to 127.0.0.1)")
    p.add_argument("--tokens", metavar="FILE", help="with --http: bind each request to the session of "
                   "its bearer token (issued with `s3spill mcp --tokens FILE --issue-token`)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback --http address (use it with --tokens; put TLS in front)")
    p.add_argument("upstream", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...",
                   help="the upstream MCP server's command line")
    p.set_defaults(func=cmd_mcp_proxy)


def upstream_of(args: argparse.Namespace) -> list[str]:
    """The upstream's command line as parsed (empty: none given)."""
    command = list(args.upstream)
    return command[1:] if command and command[0] == "--" else command


def cmd_mcp_proxy(args: argparse.Namespace) -> int:
    command = upstream_of(args)
    if bool(command) == bool(args.upstream_url):
        raise ConfigError("mcp-proxy needs one upstream: its command (s3spill mcp-proxy -- CMD ARGS...) "
                          "or --upstream-url URL")
    if args.tokens and not args.http:
        raise ConfigError("--tokens binds HTTP requests to sessions: add --http HOST:PORT")
    if not command or args.http:
        return _proxy(args, command, None)
    from s3spill.proxy.spawn import discard, spawn

    started = spawn(command)  # its boot overlaps ours (s3spill.proxy.spawn)
    try:
        return _proxy(args, command, started)
    finally:
        discard(started)


def _settings(args: argparse.Namespace) -> ProxySettings:
    from s3spill.proxy.settings import ProxySettings

    # --config is the fleet policy (TOML); a .json file is the proxy's older settings file.
    legacy = args.config if args.config and str(args.config).endswith(".json") else None
    if legacy:
        args.config = None
    loaded = policy_from_args(args)
    return ProxySettings.from_policy(loaded, legacy, tool_prefix=args.tool_prefix,
                                     thresholds=dict(args.threshold) if args.threshold else None,
                                     never_spill=args.never_spill, max_inline_tokens=args.max_tokens,
                                     hard_cap_chars=args.hard_cap, call_timeout=args.call_timeout)


def stdio_relay(args: argparse.Namespace,
                settings: ProxySettings | None = None) -> tuple[Relay, Callable[[], None]]:
    """The relay of one stdio session (the store, the Spiller, our tools), and what closes them."""
    if args.tokens and not args.http:
        raise ConfigError("--tokens binds HTTP requests to sessions: add --http HOST:PORT")
    settings = settings or _settings(args)
    session = session_from_args(args)
    from s3spill.agent.tools import AgentTools
    from s3spill.log import get_logger
    from s3spill.proxy.relay import Relay
    from s3spill.proxy.results import ResultSpiller
    from s3spill.spill.spiller import Spiller

    get_logger("s3spill.proxy").info("proxy.session", session=session)
    store = store_from_args(args)
    policy = settings.fleet_policy(policy_from_args(args))
    from s3spill.telemetry import serve_metrics_from_env
    from s3spill.usage.recorder import usage_recorder

    usage = usage_recorder(store)
    serve_metrics_from_env()
    spiller = Spiller(store, session, policy, quota=policy_from_args(args).quota(), usage=usage)

    def close() -> None:
        spiller.close()
        store.close()

    try:
        tools = AgentTools(store, session, policy=policy, usage=usage)
        return Relay(ResultSpiller(spiller, settings), tools, settings), close
    except BaseException:
        close()
        raise


def _proxy(args: argparse.Namespace, command: list[str], started: subprocess.Popen[bytes] | None) -> int:
    """The proxy, once its upstream is started (``started``; None: over HTTP, or per session)."""
    settings = _settings(args)
    if args.http:
        return _serve_http(args, settings, command)
    relay, close = stdio_relay(args, settings)
    try:
        if args.upstream_url:
            import asyncio

            try:
                from s3spill.proxy.http_upstream import relay_http
            except ImportError as exc:  # the optional extra is missing
                raise ConfigError(f"--upstream-url needs the MCP SDK: module "
                                  f"{exc.name!r} is not installed", hint=MCP_EXTRA) from None

            return asyncio.run(relay_http(relay, args.upstream_url))
        from s3spill.proxy.stdio import run_stdio

        return run_stdio(relay, started if started is not None else command)
    finally:
        from s3spill.proxy.quick_start import ignore_signals

        ignore_signals()
        closing(close)


def closing(close: Callable[[], None]) -> None:
    """``close()`` (the spiller and the store), once the relay ended and the signals were
    set to end us normally (:func:`~s3spill.proxy.quick_start.ignore_signals`)."""
    failpoint(FP_CLOSING)
    close()


def _serve_http(args: argparse.Namespace, settings: ProxySettings, command: list[str]) -> int:
    """``--http``: one HTTP server, an upstream per MCP session, sessions fixed or by token."""
    from s3spill.agent.mcp.config import check_bind, parse_http_address

    host, port = parse_http_address(args.http)
    check_bind(host, allow_remote=args.allow_remote)
    session_for: Callable[[str | None], str | None]
    if args.tokens:
        from s3spill.agent.mcp.tokens import TokenRegistry

        session_for = TokenRegistry(args.tokens).session_from_header
    else:
        fixed = session_from_args(args, default=False)  # a server binds to a named session only
        session_for = lambda _header: fixed  # noqa: E731 - one session, whatever the request
    try:
        from s3spill.agent.mcp.server import transport_security
        from s3spill.proxy import http_server
    except ImportError as exc:  # the optional extra is missing
        raise ConfigError(f"mcp-proxy --http needs the MCP SDK: module {exc.name!r} is not installed",
                          hint=MCP_EXTRA) from None
    upstream = (http_server.http_upstream(args.upstream_url) if args.upstream_url
                else http_server.stdio_upstream(command))
    store = store_from_args(args)
    loaded = policy_from_args(args)
    spillers = http_server.SessionSpillers(store, settings, settings.fleet_policy(loaded), loaded.quota())
    try:
        http_server.serve(http_server.ProxyHttpApp(spillers, upstream, session_for,
                                                   transport_security(host)), host, port)
    finally:
        spillers.close()
        store.close()
    return 0
