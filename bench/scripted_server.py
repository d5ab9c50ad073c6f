#!/usr/bin/env python3
"""A tiny scripted OpenAI-protocol server for bench/run.sh (standard library only).

Listens on 127.0.0.1 (port 0 unless --port is given) and prints the port on the first line
of stdout. `POST /v1/chat/completions` answers from the request itself, so any number of
runs (one after another or at once) each get the same script:

  - while the request holds fewer than ITERATIONS-1 tool results, one tool call: `shell`
    `echo N` on even steps, `read_file` of `notes.txt` on odd ones;
  - then a final text answer.

With `--scenario long` or `--scenario readonly` (the saving benchmark), each run is told
apart by its task (the first user message), and the server counts that run's requests, so
trimming — which drops old tool results — cannot confuse it:

  - `readonly`: every step reads `big.txt`; the last one answers.
  - `long`: step 1 creates a 12-step plan; every third step updates it (the next step in
    progress, the one before done; a fresh plan once all are done); the other steps read
    `big.txt`; the last one answers. A request without tools (the compaction side call that
    trimming makes) is answered with a short digest.

`"stream": true` is answered with SSE (`data: {...}` chunks: role, content pieces, tool-call
fragments, finish reason, usage, `data: [DONE]`), otherwise with one JSON body. `GET
/v1/models` lists the model without a context window (so odek never trims). `GET /stats`
returns the number of chat requests served so far, to check each run made the expected
number of calls.
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

USAGE = {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}


class State:
    iterations = 20
    scenario = "plain"
    chat_requests = 0
    steps = {}  # task -> requests served so far (long/readonly scenarios)
    lock = threading.Lock()


def call(step, name, args):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{step}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }


def first_user(request):
    for m in request.get("messages") or []:
        if m.get("role") == "user":
            return m.get("content") or ""
    return ""


def plan_call(step):
    """Plan work for `step` (a multiple of 3, or 1): create, or move the plan along."""
    changes = step // 3  # how many updates so far, 1-based
    done = changes % 13  # 12 steps: after 12 updates start over
    if step == 1 or done == 0:
        steps = [{"id": f"s{i}", "title": f"step {i} of the long task: read and check"} for i in range(1, 13)]
        return call(step, "plan", {"verb": "create", "steps": steps})
    updates = [{"id": f"s{done}", "status": "in_progress"}]
    if done > 1:
        updates.insert(0, {"id": f"s{done - 1}", "status": "done"})
    return call(step, "plan", {"verb": "update", "updates": updates})


def counted_message(request):
    """The long/readonly scenarios: the step is this run's request count."""
    if not request.get("tools"):
        return {"role": "assistant", "content": "Digest: the agent read big.txt many times and kept its plan current."}
    key = first_user(request)
    with State.lock:
        step = State.steps.get(key, 0) + 1
        State.steps[key] = step
    if step >= State.iterations:
        return {"role": "assistant", "content": f"Finished: {step} steps done."}
    if State.scenario == "long" and (step == 1 or step % 3 == 0):
        return plan_call(step)
    return call(step, "read_file", {"path": "big.txt"})


def script_message(request):
    """The assistant message for this point of the conversation."""
    messages = request.get("messages") or []
    done = sum(1 for m in messages if m.get("role") == "tool")
    if done >= State.iterations - 1:
        return {
            "role": "assistant",
            "content": f"Finished: ran {done} tool calls and read their results. "
            "Everything the task asked for is done.",
        }
    step = done + 1
    if step % 2 == 0:
        return call(step, "read_file", {"path": "notes.txt"})
    return call(step, "shell", {"command": f"echo {step}", "description": f"step {step}"})


def finish_reason(message):
    return "tool_calls" if message.get("tool_calls") else "stop"


def sse_body(message):
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    content = message.get("content") or ""
    for i in range(0, len(content), 16):
        chunks.append({"choices": [{"index": 0, "delta": {"content": content[i : i + 16]}}]})
    for i, call in enumerate(message.get("tool_calls") or []):
        args = call["function"]["arguments"]
        half = len(args) // 2
        first = {
            "index": i,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": args[:half]},
        }
        second = {"index": i, "function": {"arguments": args[half:]}}
        for part in (first, second):
            chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [part]}}]})
    chunks.append(
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason(message)}]}
    )
    chunks.append({"choices": [], "usage": USAGE})
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return body.encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server
    # Headers and body go out in separate writes; without TCP_NODELAY the body waits for
    # the client's delayed ACK (~40 ms a response), which would be the server's cost.
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet
        pass

    def send(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.rstrip("/") == "/v1/models":
            listing = {"object": "list", "data": [{"id": "bench-model", "object": "model"}]}
            self.send(200, "application/json", json.dumps(listing).encode())
        elif self.path == "/stats":
            with State.lock:
                stats = {"chat_requests": State.chat_requests}
            self.send(200, "application/json", json.dumps(stats).encode())
        else:
            self.send(404, "text/plain", b"not found")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path != "/v1/chat/completions":
            self.send(404, "text/plain", b"not found")
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self.send(400, "application/json", b'{"error":{"message":"invalid JSON"}}')
            return
        with State.lock:
            State.chat_requests += 1
        if State.scenario == "plain":
            message = script_message(request)
        else:
            message = counted_message(request)
        if request.get("stream"):
            self.send(200, "text/event-stream", sse_body(message))
        else:
            body = {
                "id": "cmpl-bench",
                "object": "chat.completion",
                "choices": [
                    {"index": 0, "message": message, "finish_reason": finish_reason(message)}
                ],
                "usage": USAGE,
            }
            self.send(200, "application/json", json.dumps(body).encode())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20, help="model calls per run")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--scenario", choices=["plain", "long", "readonly"], default="plain")
    args = parser.parse_args()
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    State.iterations = args.iterations
    State.scenario = args.scenario
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
