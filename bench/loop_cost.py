#!/usr/bin/env python3
"""The loop's own cost per iteration (issue 48), end to end: a model server in this script
(standard library only) has each run call `read_file` of a small file once per model call,
ITERATIONS-1 times, then answer — no child processes, so the CPU is odek's own work. Each run
is `odek run --ephemeral --no-stream`, with every default feature on (memory, skills,
sub-agents' tool, planning) and with `--no-memory --no-skills --no-subagents`, interleaved.
Prints CPU per iteration (median of --reps runs) and peak RSS (GNU time, median of 5).

--wire responses|anthropic speaks OpenAI's Responses or Anthropic's Messages instead of Chat
Completions (the built-in `openai` and `anthropic` providers pointed at the script's server).

--compare NAME=PATH (repeatable) adds another odek binary (every default feature), run
interleaved with the others — a before and an after measured in one session. --go PATH adds
the Go original (`odek run --max-iter N TASK`: it saves nothing without `--session` and does
not stream by default), on the chat wire only; each row then says its CPU and peak RSS as a
share of the Go original's. The script's server closes every connection (HTTP/1.0), so each
request opens a new one, for every binary alike.

With --perf DIR it instead records one run of the default variant with `perf record
--call-graph dwarf` into DIR/perf.data (use a binary built with `--profile profiling`).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402


def tool_results(request):
    """How many tool results the request carries, on any of the three wires."""
    if "input" in request:  # Responses
        return sum(1 for item in request["input"] if item.get("type") == "function_call_output")
    done = 0
    for m in request.get("messages") or []:
        if m.get("role") == "tool":  # Chat Completions
            done += 1
        elif isinstance(m.get("content"), list):  # Messages: tool_result blocks
            done += sum(1 for b in m["content"] if b.get("type") == "tool_result")
    return done


def reply(path, done, iterations):
    """The answer on the wire of `path`: a read_file call, or the final text."""
    call = done < iterations - 1
    arguments = json.dumps({"path": "notes.txt"})
    if path.endswith("/responses"):
        item = ({"type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done}",
                 "name": "read_file", "arguments": arguments} if call else
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Read them all."}]})
        return {"id": f"resp_{done}", "object": "response", "status": "completed", "output": [item],
                "usage": {"input_tokens": 100, "output_tokens": 10}}
    if path.endswith("/messages"):
        block = ({"type": "tool_use", "id": f"toolu_{done}", "name": "read_file",
                  "input": {"path": "notes.txt"}} if call else {"type": "text", "text": "Read them all."})
        return {"id": f"msg_{done}", "type": "message", "role": "assistant", "content": [block],
                "stop_reason": "tool_use" if call else "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 10}}
    message = ({"role": "assistant", "content": None,
                "tool_calls": [{"id": f"call_{done}", "type": "function",
                                "function": {"name": "read_file", "arguments": arguments}}]} if call else
               {"role": "assistant", "content": "Read them all."})
    return {"choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if call else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}}


def start_server(iterations):
    """A model server on 127.0.0.1 (port 0) answering each wire at its path."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.send({"data": []})

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send(reply(self.path, tool_results(json.loads(raw)), iterations))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


WIRES = {
    "chat": {},
    "responses": {"ODEK_PROVIDER": "openai", "OPENAI_API_KEY": "bench-key"},
    "anthropic": {"ODEK_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": "bench-key"},
}


VARIANTS = {
    "default": [],
    "lean": ["--no-memory", "--no-skills", "--no-subagents"],
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--wire", choices=sorted(WIRES), default="chat")
    p.add_argument("--perf", metavar="DIR")
    p.add_argument("--compare", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--go", metavar="PATH", help="the Go original's binary, measured beside")
    args = p.parse_args()
    if args.go and args.wire != "chat":
        p.error("--go measures the chat wire only (the Go original speaks Chat Completions)")
    binary = os.path.abspath(args.bin)
    server, port = start_server(args.iterations)
    with tempfile.TemporaryDirectory(prefix="odek-bench-") as root:
        home, odek_home, work = measure.bench_home(root, "loop")
        with open(os.path.join(work, "notes.txt"), "w") as out:
            out.write("".join(f"line {i}: notes for the benchmark run\n" for i in range(1, 41)))
        env = measure.clean_env(home, odek_home, {
            "ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model",
            **WIRES[args.wire]})
        argv = {name: [binary, "run", "--ephemeral", "--no-stream", "--max-iter", str(args.iterations + 1),
                      *flags, "read the notes"]
                for name, flags in VARIANTS.items()}
        labels = {"default": "every default feature", "lean": "`--no-memory --no-skills --no-subagents`"}
        for spec in args.compare:
            name, _, path = spec.partition("=")
            argv[name] = [os.path.abspath(path), *argv["default"][1:]]
            labels[name] = f"{name} (`{path}`), every default feature"
        if args.go:
            argv["go"] = [os.path.abspath(args.go), "run", "--max-iter", str(args.iterations + 1), "read the notes"]
            labels["go"] = "the Go original"
        # The Go original wants a key; odek's runs go without one, as before.
        envs = {name: {**env, "ODEK_API_KEY": "bench-key"} if name == "go" else env for name in argv}
        for name in argv:
            measure.run_once(argv[name], envs[name], cwd=work, check=measure.expect_ok(name, "Read them all"))
        if args.perf:
            os.makedirs(args.perf, exist_ok=True)
            data = os.path.join(os.path.abspath(args.perf), "perf.data")
            subprocess.run(["perf", "record", "-F", "4999", "--call-graph", "dwarf,16384", "-o", data,
                            "--", *argv["default"]], env=env, cwd=work, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            server.shutdown()
            print(data)
            return
        samples = {name: measure.Sample() for name in argv}
        for rep in range(args.reps):
            # Alternate which binary goes first, so none always runs on a cold cache.
            order = list(argv) if rep % 2 == 0 else list(reversed(argv))
            for name in order:
                measure.run_once(argv[name], envs[name], cwd=work, sample=samples[name])
        for name in argv:
            measure.measure_rss(argv[name], envs[name], cwd=work, sample=samples[name], runs=5)
    server.shutdown()
    print(f"\nMachine: {measure.machine()}.\n")
    go = samples.get("go")
    share = " | × Go's CPU | × Go's peak RSS" if go else ""
    print(f"| {args.iterations} iterations ({args.wire}) | CPU (median) | per iteration | peak RSS{share} |")
    print("|---|---|---|---|" + ("---|---|" if go else ""))
    for name, label in labels.items():
        s = samples[name]
        cpu = statistics.median(s.cpu)
        row = f"| {label} | {cpu * 1000:.1f} ms | {cpu / args.iterations * 1000:.3f} ms | {measure.rss_text(s)} |"
        if go:
            row += f" {cpu / statistics.median(go.cpu):.2f}× | {statistics.median(s.rss) / statistics.median(go.rss):.2f}× |"
        print(row)


if __name__ == "__main__":
    main()
