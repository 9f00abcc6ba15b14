// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json),
// for the proxy tests: `node ts_client.mjs PLAN.json` connects over stdio to PLAN.command,
// lists the tools (which caches an output-schema validator per tool, as the SDK does),
// makes each call of PLAN.calls with Client.callTool (which validates structuredContent
// against the tool's outputSchema) and prints one JSON document: the tools and, per call,
// the result or the error thrown.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const transport = new StdioClientTransport({
  command: plan.command[0], args: plan.command.slice(1), env: { ...process.env, ...(plan.env ?? {}) },
  stderr: "inherit",
});
const client = new Client({ name: "s3spill-ts-test", version: "1.0.0" });
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
process.stdout.write(JSON.stringify({ tools: listed.tools, calls }));
await client.close();
