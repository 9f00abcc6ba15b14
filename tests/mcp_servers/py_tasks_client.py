"""The official Python SDK client with tasks, for the proxy tests: ``mcp`` 1.30.0, the last
release with an experimental tasks API (2.x, which ``s3spill mcp`` needs, dropped it), run in
a process of its own from tests/mcp_servers/python-sdk-1 (tests/mcp_servers/python-sdk-1.txt).

``python py_tasks_client.py PLAN.json`` (with that directory first on PYTHONPATH) is
ts_client.mjs's tasks mode with the Python SDK: it declares sampling, elicitation (form),
roots and client-side tasks for sampling and elicitation (``ExperimentalTaskHandlers`` over
the SDK's ``InMemoryTaskStore``: a request that asks for a task gets one, completed with the
answer, which the server reads by tasks/get and tasks/result); a call with ``task: true`` is
made by ``session.experimental.call_tool_as_task``, polled by ``poll_task`` (its statuses are
recorded) and fetched by ``get_task_result`` (at once on ``input_required``: the server's
queued requests come while that is pending); any other call is ``ClientSession.call_tool``,
which validates structuredContent against the tool's outputSchema. With PLAN.read_back, a
result that points to an artifact is paged back by s3spill_read_artifact. Prints one JSON
document: {"sdk", "tools", "calls", "requests"}. The server is started with PLAN.env (the
suite's environment, without this directory: the proxy imports the venv's mcp 2.x).
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from importlib.metadata import version
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.experimental.task_handlers import ExperimentalTaskHandlers
from mcp.client.stdio import stdio_client
from mcp.shared.experimental.tasks.in_memory_task_store import InMemoryTaskStore

#: Deprecated in 1.30, dropped in 2.0: that is why this client is pinned to it.
warnings.filterwarnings("ignore", "The experimental tasks API is deprecated", DeprecationWarning)
SOURCE_ID = re.compile(r'source_id="([^"]+)"')
with open(sys.argv[1]) as _plan:
    PLAN: dict[str, Any] = json.load(_plan)
ANSWERS: dict[str, Any] = PLAN["answers"]
STORE = InMemoryTaskStore()
REQUESTS: list[dict[str, Any]] = []


def _got(method: str, params: Any, task: types.TaskMetadata | None = None) -> None:
    dumped = params.model_dump(mode="json", by_alias=True, exclude_none=True)
    if task is not None:
        dumped["task"] = task.model_dump(mode="json", by_alias=True, exclude_none=True)
    REQUESTS.append({"method": method, "params": dumped})


def _sampled(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    content = params.messages[0].content
    prompt = content.text.split("context: ")[-1] if isinstance(content, types.TextContent) else ""
    return types.CreateMessageResult(role="assistant", model="s3spill-test", content=types.TextContent(
        type="text", text=ANSWERS["sampling"][prompt]))


def _elicited(params: types.ElicitRequestParams) -> types.ElicitResult:
    names = set((getattr(params, "requestedSchema", None) or {}).get("properties", {}))
    return types.ElicitResult(action="accept", content={
        k: v for k, v in ANSWERS["elicitation"].items() if k in names})


async def sampling(_: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    _got("sampling/createMessage", params)
    return _sampled(params)


async def elicitation(_: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    _got("elicitation/create", params)
    return _elicited(params)


async def roots(_: Any) -> types.ListRootsResult:
    REQUESTS.append({"method": "roots/list", "params": {}})
    return types.ListRootsResult.model_validate({"roots": ANSWERS["roots"]})


async def _as_task(task_metadata: types.TaskMetadata, result: types.Result) -> types.CreateTaskResult:
    task = await STORE.create_task(task_metadata)
    await STORE.store_result(task.taskId, result)
    return types.CreateTaskResult(task=await STORE.update_task(task.taskId, status="completed"))


async def task_sampling(_: Any, params: types.CreateMessageRequestParams,
                        task_metadata: types.TaskMetadata) -> types.CreateTaskResult:
    _got("sampling/createMessage", params, task_metadata)
    return await _as_task(task_metadata, _sampled(params))


async def task_elicitation(_: Any, params: types.ElicitRequestParams,
                           task_metadata: types.TaskMetadata) -> types.CreateTaskResult:
    _got("elicitation/create", params, task_metadata)
    return await _as_task(task_metadata, _elicited(params))


async def get_task(_: Any, params: types.GetTaskRequestParams) -> types.GetTaskResult | types.ErrorData:
    task = await STORE.get_task(params.taskId)
    if task is None:
        return types.ErrorData(code=types.INVALID_PARAMS, message=f"no task {params.taskId}")
    return types.GetTaskResult(**task.model_dump())


async def get_task_result(_: Any, params: types.GetTaskPayloadRequestParams,
                          ) -> types.GetTaskPayloadResult | types.ErrorData:
    result = await STORE.get_result(params.taskId)
    if result is None:
        return types.ErrorData(code=types.INVALID_PARAMS, message=f"no result for {params.taskId}")
    return types.GetTaskPayloadResult.model_validate(result.model_dump(by_alias=True, exclude_none=True))


async def _call(session: ClientSession, call: dict[str, Any]) -> dict[str, Any]:
    if not call.get("task"):
        return {"result": await session.call_tool(call["name"], call.get("arguments") or {})}
    tasks = session.experimental
    created = await tasks.call_tool_as_task(call["name"], call.get("arguments") or {}, ttl=300_000)
    statuses = [created.task.status]
    async for status in tasks.poll_task(created.task.taskId):
        statuses.append(status.status)
        if status.status == "input_required":
            break
    result = await tasks.get_task_result(created.task.taskId, types.CallToolResult)
    return {"result": result, "task": {"statuses": statuses}}


async def _read_back(session: ClientSession, result: types.CallToolResult) -> list[str] | None:
    text = "".join(getattr(block, "text", "") for block in result.content)
    found = SOURCE_ID.findall(text)
    if not found:
        return None
    pages: list[str] = []
    args: dict[str, Any] = {"source_id": found[-1], "offset": 0, "char_offset": 0}
    while True:
        page = await session.call_tool("s3spill_read_artifact", args)
        if page.isError:
            raise RuntimeError(f"reading {found[-1]} failed: {page.content}")
        pages.append(page.content[0].text)  # type: ignore[union-attr]
        data: Any = page.structuredContent
        if data["eof"]:
            return pages
        args = {**args, "offset": data["next_offset"], "char_offset": data["next_char_offset"]}


async def main() -> None:
    command = PLAN["command"]
    handlers = ExperimentalTaskHandlers(get_task=get_task, get_task_result=get_task_result,
                                        augmented_sampling=task_sampling,
                                        augmented_elicitation=task_elicitation)
    server = StdioServerParameters(command=command[0], args=command[1:], env=PLAN["env"])
    async with stdio_client(server) as (read, write), ClientSession(
            read, write, sampling_callback=sampling, elicitation_callback=elicitation,
            list_roots_callback=roots, experimental_task_handlers=handlers) as session:
        await session.initialize()
        tools = await session.list_tools()
        calls: list[dict[str, Any]] = [{} for _ in PLAN["calls"]]

        async def one(k: int, call: dict[str, Any]) -> None:
            try:
                done = await _call(session, call)
                pages = await _read_back(session, done["result"]) if PLAN.get("read_back") else None
                calls[k] = {"name": call["name"], "ok": True, **done, **({"pages": pages} if pages else {})}
            except Exception as error:  # reported, as the TS client reports what it throws
                calls[k] = {"name": call["name"], "ok": False, "error": f"{type(error).__name__}: {error}"}

        async with anyio.create_task_group() as group:
            for k, call in enumerate(PLAN["calls"]):
                group.start_soon(one, k, call)
    out = {"sdk": version("mcp"), "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                                            for t in tools.tools],
           "calls": [{**c, "result": c["result"].model_dump(mode="json", by_alias=True, exclude_none=True)}
                     if "result" in c else c for c in calls], "requests": REQUESTS}
    STORE.cleanup()
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main)
