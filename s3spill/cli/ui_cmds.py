"""``ui``: the read-only web view of a store (see :mod:`s3spill.ui`)."""

from __future__ import annotations

import argparse
import ipaddress
import os

from s3spill.cli.argtypes import store_from_args, utf8
from s3spill.errors import ConfigError

TOKEN_ENV = "S3SPILL_UI_TOKEN"  # noqa: S105 - the variable's name, not a token


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ui", help="a read-only web view: sessions, what each model was shown, GC plans, purges",
        description="Serve a read-only web view of the store: sessions with their usage and quota, "
        "each session's timeline (what the model was shown beside the full output, paged by the "
        "same verified reads), search, jump to line, live outputs tailing, GC plans and purge audit "
        "records. Binds 127.0.0.1; any other address needs a bearer token "
        f"(${TOKEN_ENV}), sent as 'Authorization: Bearer <token>'.")
    p.add_argument("--bind", dest="ui_bind", type=utf8, default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", dest="ui_port", type=int, default=8765, help="port (default 8765)")
    p.set_defaults(func=cmd_ui)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_ui(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from s3spill.ui.app import build_app
        from s3spill.ui.metrics import ui_metrics
    except ImportError as exc:
        raise ConfigError(f"s3spill ui needs Starlette, uvicorn and Jinja2: pip install 's3spill[ui]' ({exc})"
                          ) from None
    token = os.environ.get(TOKEN_ENV) or None
    if not _loopback(args.ui_bind) and not token:
        raise ConfigError(f"refusing to serve {args.ui_bind} without a token",
                          hint=f"set ${TOKEN_ENV}, or bind 127.0.0.1")
    store = store_from_args(args, create=False)  # a view: a mistyped path is not made
    app = build_app(store, token=token, metrics=ui_metrics())
    uvicorn.run(app, host=args.ui_bind, port=args.ui_port, log_level="warning")
    return 0
