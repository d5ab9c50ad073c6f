// A real ACP client from another ecosystem — the official TypeScript SDK, pinned by
// tests/acp/package-lock.json — driving `odek acp` over stdio for the integration tests
// (tests/it/acp.rs).
//
// Usage: node client.mjs ODEK [ARG...] < scenario.json
// scenario.json: {
//   "clientCapabilities": {...},            // sent with initialize
//   "permissions": ["reject_once", ...],    // answers to session/request_permission, in turn
//                                           // ("cancelled" answers as cancelled; "cancel"
//                                           // sends session/cancel first)
//   "files": {"/abs/path": "text"},         // the editor's buffers, for fs/read_text_file
//   "steps": [
//     {"new": "/abs/cwd"},                  // session/new; later steps use its id
//     {"prompt": "text", "cancelOn": "agent_message_chunk"},  // session/prompt, with
//                                           // session/cancel at the first such update
//     {"load": "SESSION_ID" | "$last", "cwd": "/abs/cwd"},    // session/load
//     {"request": "method", "params": {...}}                  // any request ("sessionId":
//                                           // "$session" is the current session's id)
//   ]
// }
// Prints one JSON object: initialize's answer and the log, in order, of every update,
// permission request, file request, answer and error; and odek's exit code.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

const scenario = JSON.parse(await readStdin());
const child = spawn(process.argv[2], process.argv.slice(3), {
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const log = [];
const permissions = [...(scenario.permissions ?? [])];
const files = { ...(scenario.files ?? {}) };
let onUpdate = null;

const app = acp
  .client({ name: "odek-acp-test" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, agent }) => {
    log.push({ permission: params });
    const answer = permissions.shift() ?? "cancelled";
    // "cancel": the user stops the prompt while it asks (session/cancel, then the
    // pending request answered as cancelled, as the protocol says).
    if (answer === "cancel") await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
    if (answer === "cancelled" || answer === "cancel") return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: answer } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    log.push({ readTextFile: params });
    if (!(params.path in files)) throw new acp.RequestError(-32002, `no buffer ${params.path}`);
    return { content: files[params.path] };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    log.push({ writeTextFile: params });
    files[params.path] = params.content;
    return {};
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    log.push({ session: params.sessionId, update: params.update });
    if (onUpdate) onUpdate(params);
  });

function failure(e) {
  return { code: e?.code ?? null, message: String(e?.message ?? e) };
}

const out = {};
await app.connectWith(stream, async (ctx) => {
  out.initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: scenario.clientCapabilities ?? {},
    clientInfo: { name: "odek-acp-test", version: "1.0.0" },
  });
  let session = null;
  let last = null;
  for (const step of scenario.steps) {
    try {
      if (step.new !== undefined) {
        const res = await ctx.request(acp.methods.agent.session.new, { cwd: step.new, mcpServers: step.mcpServers ?? [] });
        session = res.sessionId;
        last = session;
        log.push({ new: res });
      } else if (step.prompt !== undefined) {
        if (step.cancelOn) {
          onUpdate = (params) => {
            if (params.update.sessionUpdate === step.cancelOn) {
              onUpdate = null;
              ctx.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
            }
          };
        }
        const res = await ctx.request(acp.methods.agent.session.prompt, {
          sessionId: session,
          prompt: step.blocks ?? [{ type: "text", text: step.prompt }],
        });
        onUpdate = null;
        // The SDK hands notifications to their handler a few microtasks after it read them,
        // and a response at once: let the updates sent before the answer reach the log first.
        await new Promise((resolve) => setImmediate(resolve));
        log.push({ stop: res });
      } else if (step.load !== undefined) {
        const id = step.load === "$last" ? last : step.load;
        const res = await ctx.request(acp.methods.agent.session.load, { sessionId: id, cwd: step.cwd, mcpServers: [] });
        session = id;
        await new Promise((resolve) => setImmediate(resolve));
        log.push({ loaded: res });
      } else if (step.request !== undefined) {
        const params = { ...(step.params ?? {}) };
        if (params.sessionId === "$session") params.sessionId = session;
        const res = await ctx.request(step.request, params);
        log.push({ answer: res });
      }
    } catch (e) {
      onUpdate = null;
      log.push({ error: failure(e) });
    }
  }
});
child.stdin.end();
out.log = log;
out.files = files;
out.exit = await exited;
process.stdout.write(JSON.stringify(out) + "\n");
