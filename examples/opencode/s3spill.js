// s3spill for opencode (tested with opencode-ai 1.18.33): a tool result over budget reaches
// the model as s3spill's preview plus a pointer, the whole output stored.
//
// Install: copy this file to .opencode/plugins/ (a project) or ~/.config/opencode/plugins/
// (every project). It runs `s3spill hook opencode` after a tool whose text output is over
// 25,000 characters (below that nothing can be over s3spill's thresholds), or that opencode
// cut itself ("Full output saved to: PATH": the file is stored whole), and puts the answer
// in output.output, which opencode sends to the model in place of the tool's text (for an
// MCP tool, whose result the plugin gets whole as output.content, in one text block there).
// The store and the session come from S3SPILL_STORE and S3SPILL_SESSION; give `s3spill mcp`
// the same session (docs/harnesses.md), and the pointer names its tools as opencode does
// (s3spill_read_artifact). S3SPILL_HOOK_COMMAND (a JSON array, default ["s3spill"]) names
// the command. Any failure leaves the tool's own output in place.
import { spawnSync } from "node:child_process"

const COMMAND = JSON.parse(process.env.S3SPILL_HOOK_COMMAND || '["s3spill"]')
const FLOOR = 25000
// How long the hook may take (milliseconds; S3SPILL_HOOK_TIMEOUT_MS): past it, the tool's
// own output goes on.
const TIMEOUT = Number(process.env.S3SPILL_HOOK_TIMEOUT_MS) || 60000

export const S3spill = async () => ({
  "tool.execute.after": async (input, output) => {
    try {
      // A built-in tool's text is output.output; an MCP tool's result is output.content
      // (its blocks, before opencode cuts it): only one whose blocks are all text is sent.
      const blocks = Array.isArray(output?.content) ? output.content : undefined
      const text = typeof output?.output === "string" ? output.output
        : blocks && blocks.length > 0 && blocks.every((b) => b?.type === "text" && typeof b.text === "string")
          ? blocks.map((b) => b.text).join("\n") : undefined
      if (text === undefined) return
      // opencode cuts a long output itself and says where it saved the whole of it: at the
      // top for a shell command, at the end for its other tools
      const saved = text.startsWith("...output truncated...") ||
        text.slice(-2000).includes("Full output saved to: ")
      if (!saved && text.length <= FLOOR) return
      const payload = JSON.stringify({
        hook_event_name: "tool.execute.after", tool: input.tool, session_id: input.sessionID,
        callID: input.callID, output: text,
      })
      const run = spawnSync(COMMAND[0], [...COMMAND.slice(1), "hook", "opencode"],
                            { input: payload, maxBuffer: 256 * 1024 * 1024, timeout: TIMEOUT })
      if (run.status !== 0 || !run.stdout || run.stdout.length === 0) return
      const answer = JSON.parse(run.stdout.toString("utf8"))
      if (typeof answer.output !== "string") return
      if (typeof output.output === "string") output.output = answer.output
      else output.content = [{ type: "text", text: answer.output }]
    } catch {
      // fail open: the tool's own output goes on
    }
  },
})
