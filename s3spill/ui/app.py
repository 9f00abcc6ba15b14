"""The Starlette application of ``s3spill ui``: routes, the bearer-token gate, templates.

Why a token gate in the app and not only a loopback bind: the view shows what models were
shown of every session, so anything reachable beyond this host must prove it is allowed —
no token is 401 (with ``WWW-Authenticate: Bearer``), a wrong one 403, compared in
constant time. On a loopback bind no token is needed unless one is set.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from s3spill import keys
from s3spill.agent.tools import AgentTools, ToolOutcome
from s3spill.context.policy import SpillPolicy
from s3spill.errors import S3SpillError
from s3spill.gc.planfile import load_plan_from_store
from s3spill.store.base import ObjectStore
from s3spill.ui import data
from s3spill.ui.chart import bar_chart

__all__ = ["build_app"]

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
#: Most plan entries one GC page lists.
MAX_PLAN_ROWS = 1000
#: Lines a tailing live page shows, and its refresh interval in seconds.
TAIL_LINES, TAIL_REFRESH = 200, 2


class _Tools:
    """One set of read tools per listed session, bound by hash, created on first use."""

    def __init__(self, store: ObjectStore, policy: SpillPolicy) -> None:
        self.store, self.policy = store, policy
        self._made: dict[str, AgentTools] = {}
        self._lock = threading.Lock()

    def of(self, shash: str) -> AgentTools:
        with self._lock:
            found = self._made.get(shash)
            if found is None:
                found = self._made[shash] = AgentTools(self.store, keys.HashedSession(shash),
                                                       policy=self.policy)
            return found


class _TokenGate(BaseHTTPMiddleware):
    def __init__(self, app: Any, token: str | None) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
                       ) -> Response:
        if self.token is None:
            return await call_next(request)
        header = request.headers.get("authorization", "")
        if not header.lower().startswith("bearer "):
            return PlainTextResponse("a bearer token is required", status_code=401,
                                     headers={"WWW-Authenticate": 'Bearer realm="s3spill ui"'})
        if not hmac.compare_digest(header[7:].strip().encode(), self.token.encode()):
            return PlainTextResponse("wrong token", status_code=403)
        return await call_next(request)


def _int(request: Request, name: str) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    try:
        return max(0, int(value))
    except ValueError:
        return None


class _View:
    """The route handlers; each store call runs on a worker thread (boto3 blocks)."""

    def __init__(self, store: ObjectStore, policy: SpillPolicy,
                 metrics: Callable[[], tuple[bytes, str]] | None) -> None:
        self.store, self.tools, self.metrics = store, _Tools(store, policy), metrics

    @staticmethod
    def page(request: Request, name: str, **context: Any) -> Response:
        return TEMPLATES.TemplateResponse(request, name, context)

    async def index(self, request: Request) -> Response:
        since = (datetime.now(UTC) - timedelta(days=14)).date().isoformat()
        listed, per_tool = await run_in_threadpool(
            lambda: (data.sessions(self.store), data.bytes_per_tool_day(self.store, since)))
        return self.page(request, "index.html", sessions=listed, chart=bar_chart(per_tool),
                         store_url=self.store.url)

    async def session(self, request: Request) -> Response:
        shash = keys.check_session_hash(request.path_params["shash"])
        events = await run_in_threadpool(data.session_events, self.store, shash)
        return self.page(request, "session.html", shash=shash, events=events)

    def _read(self, shash: str, sid: str, request: Request) -> ToolOutcome:
        t = self.tools.of(shash)
        q = request.query_params.get("q")
        if q:
            return t.grep_outcome(sid, q, context=min(_int(request, "context") or 0, 5),
                                  max_matches=min(_int(request, "max") or 50, 200))
        line = _int(request, "line")
        offset = max(line - 1, 0) if line else _int(request, "offset") or 0
        if request.query_params.get("tail") == "1":  # the last lines committed so far
            total = t.read_outcome(sid, offset=0, limit=1).structured or {}
            offset = max(int(total.get("total_lines") or 0) - TAIL_LINES, 0)
        return t.read_outcome(sid, offset=offset, char_offset=_int(request, "char_offset") or 0,
                              byte_offset=_int(request, "byte_offset"),
                              path=request.query_params.get("path"),
                              record_offset=_int(request, "record_offset"))

    async def artifact(self, request: Request) -> Response:
        sid = request.path_params["sid"]
        live = keys.is_live_id(sid)
        parsed = keys.LiveId.parse(sid) if live else keys.SourceId.parse(sid)
        outcome, error = None, None
        try:
            outcome = await run_in_threadpool(self._read, parsed.session_hash, sid, request)
        except (S3SpillError, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        events = await run_in_threadpool(data.session_events, self.store, parsed.session_hash)
        tail = live and request.query_params.get("tail") == "1"
        return self.page(request, "artifact.html", sid=sid, shash=parsed.session_hash, outcome=outcome,
                         error=error, facts=(outcome.structured or {}) if outcome else {},
                         shown=[e for e in events if e.get("artifact") == parsed.name], live=live,
                         q=request.query_params.get("q") or "", refresh=TAIL_REFRESH if tail else None)

    def _plan(self, chosen: str) -> tuple[Any, list[Any]]:
        loaded = load_plan_from_store(self.store, chosen)
        entries = []
        for e in loaded.entries():
            entries.append(e)
            if len(entries) >= MAX_PLAN_ROWS:
                break
        return loaded, entries

    async def gc(self, request: Request) -> Response:
        ids = await run_in_threadpool(data.gc_plans, self.store)
        chosen = request.query_params.get("plan") or (ids[0] if ids else None)
        plan, entries, error = None, None, None
        if chosen:
            try:
                plan, entries = await run_in_threadpool(self._plan, chosen)
            except (S3SpillError, ValueError) as exc:
                error = f"{type(exc).__name__}: {exc}"
        return self.page(request, "gc.html", ids=ids, chosen=chosen, plan=plan, entries=entries,
                         error=error)

    async def purges(self, request: Request) -> Response:
        records = await run_in_threadpool(data.erasure_records, self.store)
        return self.page(request, "purges.html", records=records)

    async def metrics_route(self, request: Request) -> Response:
        if self.metrics is None:
            return PlainTextResponse("metrics need prometheus-client", status_code=404)
        body, content_type = self.metrics()
        return Response(body, media_type=content_type)


def build_app(store: ObjectStore, *, token: str | None = None, policy: SpillPolicy | None = None,
              metrics: Callable[[], tuple[bytes, str]] | None = None) -> Starlette:
    """The read-only view of ``store``; ``token``: required as ``Authorization: Bearer``."""
    view = _View(store, policy or SpillPolicy(), metrics)
    routes = [Route("/", view.index), Route("/s/{shash}", view.session), Route("/a/{sid}", view.artifact),
              Route("/gc", view.gc), Route("/purges", view.purges), Route("/metrics", view.metrics_route)]
    return Starlette(routes=routes, middleware=[Middleware(_TokenGate, token=token)])
