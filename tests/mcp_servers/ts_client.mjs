// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json),
// for the proxy tests: `node ts_client.mjs PLAN.json` connects over stdio to PLAN.command,
// lists the tools (which caches an output-schema validator per tool, as the SDK does),
// makes each call of PLAN.calls with Client.callTool (which validates structuredContent
// against the tool's outputSchema) and prints one JSON document: the tools and, per call,
// the result or the error thrown. With PLAN.answers ({sampling: {prompt: text}, elicitation: content,
// roots: [...]}) it declares the sampling, elicitation (form and url) and roots capabilities
// and answers the server's requests with them (the SDK validates both ways); the requests it
// got are printed as "requests".
// With PLAN.tasks as well, it also declares client-side tasks for sampling and elicitation
// (2025-11-25, the SDK's experimental tasks API with its InMemoryTaskStore): a request that asks
// for a task is answered with one, whose result the server then fetches by tasks/get and
// tasks/result. A call with `task: true` is made with client.experimental.tasks.callToolStream
// (tools/call as a task, polled by tasks/get, its result by tasks/result, validated as a tool
// result); its "task" lists the statuses seen. With PLAN.read_back, every result that points to
// an artifact (source_id="...") is paged back by s3spill_read_artifact: its "pages" are the texts.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const transport = new StdioClientTransport({
  command: plan.command[0], args: plan.command.slice(1), env: { ...process.env, ...(plan.env ?? {}) },
  stderr: "inherit",
});
const answers = plan.answers;
const tasks = plan.tasks ? { requests: { sampling: { createMessage: {} }, elicitation: { create: {} } } }
  : undefined;
const taskStore = tasks ? new InMemoryTaskStore() : undefined;
const client = new Client({ name: "s3spill-ts-test", version: "1.0.0" }, answers ? {
  capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true },
                  ...(tasks ? { tasks } : {}) },
  ...(taskStore ? { taskStore } : {}),
} : undefined);
const requests = [];
// A request that asks for a task gets one (completed with the answer, as the SDK's example
// client does); the server then reads it by tasks/get and tasks/result.
async function answer(request, extra, result) {
  if (!request.params.task || !extra.taskStore) return result;
  const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl });
  await extra.taskStore.storeTaskResult(task.taskId, "completed", result);
  return { task };
}
// The answer's fields that the requested schema has (one answer set serves several forms).
function formContent(schema) {
  const names = Object.keys(schema?.properties ?? {});
  return Object.fromEntries(Object.entries(answers.elicitation).filter(([k]) => names.includes(k)));
}
if (answers) {
  client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
    requests.push({ method: request.method, params: request.params });
    const prompt = request.params.messages[0].content.text.split("context: ").pop();
    return answer(request, extra, {
      role: "assistant", model: "s3spill-test", content: { type: "text", text: answers.sampling[prompt] } });
  });
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    requests.push({ method: request.method, params: request.params });
    return answer(request, extra, request.params.mode === "url" ? { action: "accept" }
      : { action: "accept", content: formContent(request.params.requestedSchema) });
  });
  client.setRequestHandler(ListRootsRequestSchema, async (request) => {
    requests.push({ method: request.method, params: request.params ?? {} });
    return { roots: answers.roots };
  });
}
await client.connect(transport);
const listed = await client.listTools();
// tools/call as a task: the statuses polled, then the result (or the error the stream ends with).
async function callAsTask(call) {
  const statuses = [];
  const stream = client.experimental.tasks.callToolStream(
    { name: call.name, arguments: call.arguments ?? {} }, undefined, { timeout: 120000, task: { ttl: 300000 } });
  for await (const message of stream) {
    if (message.type === "taskCreated" || message.type === "taskStatus") statuses.push(message.task.status);
    else if (message.type === "result") return { result: message.result, task: { statuses } };
    else if (message.type === "error") throw message.error;
  }
  throw new Error("the task stream ended without a result");
}
// Every page of the artifact a pointer names, by the proxy's read tool (validated like any call).
async function readBack(result) {
  const text = (result.content ?? []).map((b) => b.text ?? "").join("");
  const found = [...text.matchAll(/source_id="([^"]+)"/g)].pop();
  if (!found) return undefined;
  const pages = [];
  let args = { source_id: found[1], offset: 0, char_offset: 0 };
  for (;;) {
    const page = await client.callTool({ name: "s3spill_read_artifact", arguments: args });
    if (page.isError) throw new Error(`reading ${found[1]} failed: ${JSON.stringify(page.content)}`);
    pages.push(page.content[0].text);
    const data = page.structuredContent;
    if (data.eof) return pages;
    args = { source_id: found[1], offset: data.next_offset, char_offset: data.next_char_offset };
  }
}
async function one(call) {
  try {
    const done = call.task ? await callAsTask(call)
      : { result: await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined,
                                        { timeout: 120000 }) };
    const pages = plan.read_back ? await readBack(done.result) : undefined;
    return { name: call.name, ok: true, ...done, ...(pages ? { pages } : {}) };
  } catch (error) {
    return { name: call.name, ok: false, error: String(error?.message ?? error) };
  }
}
// In order, or all at once with PLAN.parallel (tasks wait out the server's poll intervals).
const calls = plan.parallel ? await Promise.all(plan.calls.map(one)) : [];
if (!plan.parallel) for (const call of plan.calls) calls.push(await one(call));
process.stdout.write(JSON.stringify({ tools: listed.tools, calls, requests }));
await client.close();
taskStore?.cleanup();  // its TTL timers would keep node running
