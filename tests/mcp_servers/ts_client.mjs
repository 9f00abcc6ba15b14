// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json),
// for the proxy tests: `node ts_client.mjs PLAN.json` connects over stdio to PLAN.command,
// lists the tools (which caches an output-schema validator per tool, as the SDK does),
// makes each call of PLAN.calls with Client.callTool (which validates structuredContent
// against the tool's outputSchema) and prints one JSON document: the tools and, per call,
// the result or the error thrown. With PLAN.answers ({sampling: {prompt: text}, elicitation: content,
// roots: [...]}) it declares the sampling, elicitation (form and url) and roots capabilities
// and answers the server's requests with them (the SDK validates both ways); the requests it
// got are printed as "requests".
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const transport = new StdioClientTransport({
  command: plan.command[0], args: plan.command.slice(1), env: { ...process.env, ...(plan.env ?? {}) },
  stderr: "inherit",
});
const answers = plan.answers;
const client = new Client({ name: "s3spill-ts-test", version: "1.0.0" }, answers ? {
  capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } },
} : undefined);
const requests = [];
if (answers) {
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    requests.push({ method: request.method, params: request.params });
    const prompt = request.params.messages[0].content.text.split("context: ").pop();
    return { role: "assistant", model: "s3spill-test", content: { type: "text", text: answers.sampling[prompt] } };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    requests.push({ method: request.method, params: request.params });
    return request.params.mode === "url" ? { action: "accept" }
      : { action: "accept", content: answers.elicitation };
  });
  client.setRequestHandler(ListRootsRequestSchema, async (request) => {
    requests.push({ method: request.method, params: request.params ?? {} });
    return { roots: answers.roots };
  });
}
await client.connect(transport);
const listed = await client.listTools();
const calls = [];
for (const call of plan.calls) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined,
                                          { timeout: 120000 });
    calls.push({ name: call.name, ok: true, result });
  } catch (error) {
    calls.push({ name: call.name, ok: false, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify({ tools: listed.tools, calls, requests }));
await client.close();
