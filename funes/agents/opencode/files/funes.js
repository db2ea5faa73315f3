// funes for OpenCode (and its forks): per-turn indexing.  Written by `funes add
// <agent>`; `funes remove <agent>` deletes it.  The MCP tools are registered in the
// agent's config file.
//
// When a session goes idle (the reply is complete, its rows written) it runs the
// funes hook with the session id on stdin; the hook hands the session to a
// background worker and returns at once.  With a Hub memory it also runs the
// publish hook when a session is created.  Spawn errors are ignored, and nothing
// runs inside a process a funes hook started (FUNES_HOOK is set there).
import { spawn } from "node:child_process"

const BINDING = __FUNES_BINDING__

function run(command, payload) {
  if (!command || process.env.FUNES_HOOK) return
  try {
    const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "ignore", "ignore"], detached: true })
    child.on("error", () => {})
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
    child.unref()
  } catch {}
}

export const FunesPlugin = async ({ directory }) => ({
  event: async ({ event }) => {
    const sessionID = event?.properties?.sessionID ?? event?.properties?.info?.id
    if (typeof sessionID !== "string") return
    const payload = { session_id: sessionID, hook_event_name: event.type, cwd: directory }
    if (event.type === "session.idle") run(BINDING.index, payload)
    else if (event.type === "session.created") run(BINDING.publish, payload)
  },
})
