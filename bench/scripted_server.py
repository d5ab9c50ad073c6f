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

With `--scenario cache` (the prompt-cache benchmark, `bench/measure.py --only cache`), runs
are told apart by their task as well. Step 1 creates a 5-step plan (ids s1..s5); every third
step changes it (the next step in progress with the one before done, or a progress note on
the step in progress; `complete` for the last step; a fresh plan after 11 changes); the other
steps alternate `read_file` of `notes.txt` and `shell` `echo N`; the last one answers. A
request without the `plan` tool (a `--no-planning` run) reads `notes.txt` in place of each
plan call, so every run has the same length; a request without tools (a side call) gets a
short text answer. For every request of a run the server builds the prompt as a provider
sees it, `json.dumps(tools)` followed by `json.dumps(m)` for each message in order, and
counts, for every request after the run's first, the UTF-8 bytes of that prompt and those of
its longest common prefix with the run's previous prompt. The usage it returns simulates a
provider's prompt cache: `prompt_tokens` = ceil(prompt bytes / 4),
`prompt_tokens_details.cached_tokens` = common-prefix bytes // 4 (0 on a run's first
request), `completion_tokens` = 40.

`POST /v1/messages` speaks Anthropic's Messages format for the cache scenario and simulates
Anthropic's breakpoint cache besides (see anthropic_wire.py): its requests add `cached_bytes`
and `written_bytes` to the counts.

`"stream": true` is answered with SSE (`data: {...}` chunks: role, content pieces, tool-call
fragments, finish reason, usage, `data: [DONE]`), otherwise with one JSON body. `GET
/v1/models` lists the model without a context window (so odek never trims). `GET /stats`
returns the number of chat requests served so far, to check each run made the expected
number of calls, and the prefix counts of the cache scenario: `{"chat_requests": N, "cache":
{"runs": ..., "requests": R, "bytes": B, "prefix_bytes": P, "plan_bytes": ..., "side_calls":
...}}` (`requests`, `bytes` and `prefix_bytes` cover the requests after each run's first;
`plan_bytes` is the content bytes of the `[Current plan:` messages of all requests). `POST
/reset` sets all counts and runs back to zero.
"""

import argparse
import json
import os
import math
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anthropic_wire  # noqa: E402

USAGE = {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}


class State:
    iterations = 20
    scenario = "plain"
    chat_requests = 0
    steps = {}  # task -> requests served so far (long/readonly/cache scenarios)
    prompts = {}  # task -> the run's previous prompt as a provider sees it (cache scenario)
    written = {}  # task -> the prefixes its Anthropic requests wrote to the simulated cache
    cache = {}  # the prefix counts of the cache scenario (see new_cache_counts)
    lock = threading.Lock()


def new_cache_counts():
    return {"runs": 0, "requests": 0, "bytes": 0, "prefix_bytes": 0, "plan_bytes": 0, "side_calls": 0}


State.cache = new_cache_counts()


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


CACHE_TITLES = [
    "Read the notes and list the open questions",
    "Check each question against the code base",
    "Write down the answers with their sources",
    "Run the checks and record what they print",
    "Summarise the findings for the final report",
]


def cache_plan_call(step):
    """Plan work of the cache scenario for `step` (1 or a multiple of 3): create the 5-step
    plan, then 11 changes (in progress, a progress note, done + next in progress, ...,
    `complete` of s5), then a fresh plan."""
    change = (step // 3) % 12  # 0: (re)create
    if step == 1 or change == 0:
        steps = [{"id": f"s{i}", "title": t} for i, t in enumerate(CACHE_TITLES, 1)]
        return call(step, "plan", {"verb": "create", "steps": steps})
    current = (change + 1) // 2  # s1 for changes 1-2, s2 for 3-4, ..., s5 for 9-10
    if change == 11:
        return call(step, "plan", {"verb": "complete", "step_id": "s5"})
    if change % 2 == 0:
        note = f"checked {change * 3} of the notes so far; nothing unexpected"
        return call(step, "plan", {"verb": "update", "updates": [{"id": f"s{current}", "note": note}]})
    updates = [{"id": f"s{current}", "status": "in_progress"}]
    if current > 1:
        updates.insert(0, {"id": f"s{current - 1}", "status": "done"})
    return call(step, "plan", {"verb": "update", "updates": updates})


def common_prefix_len(a, b):
    """Length of the longest common prefix of two byte strings (binary search on slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def provider_prompt(request):
    """The prompt as a provider sees it: tool definitions first (chat templates put them
    first), then every message in order, as UTF-8 bytes."""
    parts = [json.dumps(request.get("tools") or [])]
    parts.extend(json.dumps(m) for m in request.get("messages") or [])
    return "".join(parts).encode()


def plan_message_bytes(request):
    total = 0
    for m in request.get("messages") or []:
        content = m.get("content")
        if m.get("role") == "system" and isinstance(content, str) and content.startswith("[Current plan:"):
            total += len(content.encode())
    return total


def cache_turn(key, prompt, plan_bytes, has_plan, extra=None):
    """One request of the cache scenario, whatever its wire: the run's step, the counts (the
    identical prefix with the run's previous prompt; `extra` adds wire-specific counts), and
    the assistant message. Returns (message, identical-prefix bytes)."""
    with State.lock:
        step = State.steps.get(key, 0) + 1
        State.steps[key] = step
        previous = State.prompts.get(key)
        State.prompts[key] = prompt
        prefix = 0
        State.cache["plan_bytes"] += plan_bytes
        if previous is None:
            State.cache["runs"] += 1
        else:
            prefix = common_prefix_len(previous, prompt)
            State.cache["requests"] += 1
            State.cache["bytes"] += len(prompt)
            State.cache["prefix_bytes"] += prefix
            for name, value in (extra or {}).items():
                State.cache[name] = State.cache.get(name, 0) + value
    if step >= State.iterations:
        return {"role": "assistant", "content": f"Finished: {step} steps done, the plan is complete."}, prefix
    if step == 1 or step % 3 == 0:
        if has_plan:
            return cache_plan_call(step), prefix
        return call(step, "read_file", {"path": "notes.txt"}), prefix
    if step % 2 == 0:
        return call(step, "read_file", {"path": "notes.txt"}), prefix
    return call(step, "shell", {"command": f"echo {step}", "description": f"step {step}"}), prefix


def side_call():
    with State.lock:
        State.cache["side_calls"] += 1
    return {"role": "assistant", "content": "Noted."}


def cache_message(request):
    """The cache scenario on Chat Completions: the assistant message, and the usage with
    simulated cache hits (the identical prefix)."""
    tools = request.get("tools")
    if not tools:
        return side_call(), dict(USAGE)
    prompt = provider_prompt(request)
    has_plan = any((t.get("function") or {}).get("name") == "plan" for t in tools)
    message, prefix = cache_turn(first_user(request), prompt, plan_message_bytes(request), has_plan)
    prompt_tokens = math.ceil(len(prompt) / 4)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": 40,
        "total_tokens": prompt_tokens + 40,
        "prompt_tokens_details": {"cached_tokens": prefix // 4},
    }
    return message, usage


def anthropic_cache_message(request):
    """The cache scenario on Anthropic's Messages: the message, and the usage of the
    simulated breakpoint cache (see anthropic_wire.py)."""
    if not request.get("tools"):
        return side_call(), anthropic_wire.usage(4800, 0, 0)
    key = anthropic_wire.first_user(request)
    with State.lock:
        written = State.written.setdefault(key, set())
        first = key not in State.prompts
        total, cached, added = anthropic_wire.simulate_cache(request, written)
    extra = {} if first else {"cached_bytes": cached, "written_bytes": added}
    message, _ = cache_turn(
        key,
        anthropic_wire.prompt_bytes(request),
        anthropic_wire.plan_bytes(request),
        "plan" in anthropic_wire.tool_names(request),
        extra,
    )
    return message, anthropic_wire.usage(total, cached, added)


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


def sse_body(message, usage):
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
    chunks.append({"choices": [], "usage": usage})
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
                stats = {"chat_requests": State.chat_requests, "cache": dict(State.cache)}
            self.send(200, "application/json", json.dumps(stats).encode())
        else:
            self.send(404, "text/plain", b"not found")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path == "/reset":
            with State.lock:
                State.chat_requests = 0
                State.steps.clear()
                State.prompts.clear()
                State.written.clear()
                State.cache = new_cache_counts()
            self.send(200, "application/json", b"{}")
            return
        if self.path not in ("/v1/chat/completions", "/v1/messages"):
            self.send(404, "text/plain", b"not found")
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self.send(400, "application/json", b'{"error":{"message":"invalid JSON"}}')
            return
        with State.lock:
            State.chat_requests += 1
        if self.path == "/v1/messages":
            self.answer_anthropic(request)
            return
        usage = USAGE
        if State.scenario == "plain":
            message = script_message(request)
        elif State.scenario == "cache":
            message, usage = cache_message(request)
        else:
            message = counted_message(request)
        if request.get("stream"):
            self.send(200, "text/event-stream", sse_body(message, usage))
        else:
            body = {
                "id": "cmpl-bench",
                "object": "chat.completion",
                "choices": [
                    {"index": 0, "message": message, "finish_reason": finish_reason(message)}
                ],
                "usage": usage,
            }
            self.send(200, "application/json", json.dumps(body).encode())


    def answer_anthropic(self, request):
        if State.scenario != "cache":
            self.send(404, "application/json", b'{"type":"error","error":{"type":"not_found_error","message":"only the cache scenario speaks Anthropic"}}')
            return
        message, usage = anthropic_cache_message(request)
        if request.get("stream"):
            self.send(200, "text/event-stream", anthropic_wire.sse_body(message, usage))
        else:
            self.send(200, "application/json", json.dumps(anthropic_wire.body(message, usage)).encode())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20, help="model calls per run")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--scenario", choices=["plain", "long", "readonly", "cache"], default="plain")
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
