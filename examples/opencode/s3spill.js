// s3spill for opencode (tested with opencode-ai 1.18.33): a tool result over budget reaches
// the model as s3spill's preview plus a pointer, the whole output stored.
//
// Install: copy this file to .opencode/plugins/ (a project) or ~/.config/opencode/plugins/
// (every project). It runs `s3spill hook opencode` after a tool whose text output is over
// 25,000 characters (below that nothing can be over s3spill's thresholds), or that opencode
// cut itself ("Full output saved to: PATH": the file is stored whole), and puts the answer
// in output.output, which opencode sends to the model in place of the tool's text.
// The store and the session come from S3SPILL_STORE and S3SPILL_SESSION; give `s3spill mcp`
// the same session (docs/harnesses.md), and the pointer names its tools as opencode does
// (s3spill_read_artifact). S3SPILL_HOOK_COMMAND (a JSON array, default ["s3spill"]) names
// the command. Any failure leaves the tool's own output in place.
import { spawnSync } from "node:child_process"

const COMMAND = JSON.parse(process.env.S3SPILL_HOOK_COMMAND || '["s3spill"]')
const FLOOR = 25000

export const S3spill = async () => ({
  "tool.execute.after": async (input, output) => {
    try {
      if (typeof output?.output !== "string") return
      // opencode cuts a long shell output itself and says where it saved the whole of it
      const saved = output.output.startsWith("...output truncated...")
      if (!saved && output.output.length <= FLOOR) return
      const payload = JSON.stringify({
        hook_event_name: "tool.execute.after", tool: input.tool, session_id: input.sessionID,
        callID: input.callID, output: output.output,
      })
      const run = spawnSync(COMMAND[0], [...COMMAND.slice(1), "hook", "opencode"],
                            { input: payload, maxBuffer: 256 * 1024 * 1024, timeout: 60000 })
      if (run.status !== 0 || !run.stdout || run.stdout.length === 0) return
      const answer = JSON.parse(run.stdout.toString("utf8"))
      if (typeof answer.output === "string") output.output = answer.output
    } catch {
      // fail open: the tool's own output goes on
    }
  },
})
