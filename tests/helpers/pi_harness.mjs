// Drives funes's pi extension through pi's own resource loader, as pi does at start-up:
// the packages listed in <agent dir>/settings.json are resolved and their extensions and
// skills loaded.  Prints one JSON object.
//
//   node pi_harness.mjs <pi-coding-agent dir> <agent dir> <cwd> '<request JSON>'
//
// {"action": "describe"}                      → {extensions, tools, events, skills, errors}
// {"action": "call", "calls": [{tool, params}]} → {results: [{text} or {error}]}: each tool's
//                                                 execute(), in order, in one pi process
// {"action": "turn", "session_file", "session_id", "event"?} → {handled}: the handlers of
//                                                 `event` (default agent_end), given its event object
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [piDir, agentDir, cwd, requestText] = process.argv.slice(2);
const request = JSON.parse(requestText);
const pi = await import(pathToFileURL(join(piDir, "dist", "index.js")).href);
const loader = new pi.DefaultResourceLoader({ cwd, agentDir });
await loader.reload();
const { extensions, errors } = loader.getExtensions();

function tool(name) {
  for (const extension of extensions) {
    const found = extension.tools.get(name);
    if (found) return found.definition;
  }
  throw new Error(`no tool ${name}`);
}

const out = {};
if (request.action === "describe") {
  out.extensions = extensions.map((e) => e.path);
  out.tools = extensions.flatMap((e) => [...e.tools.keys()]);
  out.events = extensions.flatMap((e) => [...e.handlers.keys()]);
  out.guidelines = extensions.flatMap((e) => [...e.tools.values()].flatMap((t) => t.definition.promptGuidelines ?? []));
  out.skills = loader.getSkills().skills.map((s) => s.name);
  out.errors = errors;
} else if (request.action === "call") {
  out.results = [];
  for (const call of request.calls) {
    try {
      const result = await tool(call.tool).execute("call-1", call.params ?? {}, undefined, undefined, {});
      out.results.push({ text: result.content.map((part) => part.text).join("\n") });
    } catch (error) {
      out.results.push({ error: String(error?.message ?? error) });
    }
  }
} else if (request.action === "turn") {
  const ctx = {
    cwd,
    sessionManager: { getSessionFile: () => request.session_file, getSessionId: () => request.session_id },
  };
  const started = performance.now();
  let handled = 0;
  for (const extension of extensions) {
    const event = request.event ?? { type: "agent_end", messages: [] };
    for (const handler of extension.handlers.get(event.type) ?? []) {
      await handler(event, ctx);
      handled += 1;
    }
  }
  out.handled = handled;
  out.ms = performance.now() - started;
}
process.stdout.write(JSON.stringify(out) + "\n");
