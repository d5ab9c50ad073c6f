#!/usr/bin/env python3
"""What MCP servers cost odek, end to end (bench/run.sh with ODEK_BENCH_ONLY=mcp).

Runs `odek run --ephemeral` against a local model server (standard library only) whose
script is: CALLS tool calls one after the other, then a final answer. Three setups:

  - `builtin`: no MCP server; each step calls `read_file` of a small file (the baseline);
  - `stdio`: @modelcontextprotocol/server-everything as a child process; each step calls
    `everything__echo` (auto-approved);
  - `http`: the same server started once with `streamableHttp` on a free loopback port.

For each run it reports the time from starting odek to the first model request (start-up,
MCP servers included), the median and p95 gap between answering a tool call and receiving
the next request (one tool round trip through odek), the whole run, and odek's peak RSS
(VmHWM, sampled every 5 ms; MCP child processes not included). Needs node and the server
installed by `make mcp-deps`. Markdown to stdout, progress to stderr.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVERYTHING = os.path.join(
    ROOT, "tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)


class Model:
    """Answers chat requests: CALLS tool calls of TOOL, then a final answer."""

    def __init__(self, calls, tool, args):
        self.calls, self.tool, self.args = calls, tool, args
        self.reset()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def setup(self):
                super().setup()
                # Headers and body go out in two writes: without this, Nagle's algorithm
                # and the client's delayed ACK add ~40 ms to every answer.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self):
                self.reply({"object": "list", "data": [{"id": "bench", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self.reply(model.answer(body))

            def reply(self, obj):
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reset(self):
        self.arrivals, self.answered, self.step = [], [], 0

    def answer(self, body):
        self.arrivals.append(time.perf_counter())
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < self.calls:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{
                    "id": f"call_{done}",
                    "type": "function",
                    "function": {"name": self.tool, "arguments": json.dumps(self.args)},
                }],
            }
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": "done"}, "stop"
        self.answered.append(time.perf_counter())
        return {
            "id": "x", "object": "chat.completion", "model": "bench",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss_kib(pid, stop):
    peak = 0
    while not stop.is_set():
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            break
        time.sleep(0.005)
    return peak


def run_once(binary, home, work, model):
    model.reset()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": home,
        "ODEK_HOME": home,
        "ODEK_BASE_URL": model.url,
        "ODEK_MODEL": "bench",
        "ODEK_STREAM": "false",
    }
    started = time.perf_counter()
    proc = subprocess.Popen(
        [binary, "run", "--ephemeral", "-q", "bench"], env=env, cwd=work,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    stop = threading.Event()
    result = {}
    sampler = threading.Thread(target=lambda: result.update(rss=peak_rss_kib(proc.pid, stop)))
    sampler.start()
    _, err = proc.communicate()
    ended = time.perf_counter()
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        sys.exit(f"odek failed ({proc.returncode}): {err.decode()}")
    if len(model.arrivals) != model.calls + 1:
        sys.exit(f"expected {model.calls + 1} model requests, got {len(model.arrivals)}")
    gaps = [(b - a) * 1000 for a, b in zip(model.answered[:-1], model.arrivals[1:])]
    return {
        "startup_ms": (model.arrivals[0] - started) * 1000,
        "gaps_ms": gaps,
        "run_ms": (ended - started) * 1000,
        "rss_kib": result.get("rss", 0),
    }


def measure(binary, setup, calls, reps):
    home = tempfile.mkdtemp(prefix="odek-bench-mcp-")
    work = os.path.join(home, "work")
    os.makedirs(work)
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write("a small file\n")
    http = None
    servers = {}
    if setup == "builtin":
        model = Model(calls, "read_file", {"path": "notes.txt"})
    else:
        model = Model(calls, "everything__echo", {"message": "hello"})
        if setup == "stdio":
            servers = {"everything": {"command": "node", "args": [EVERYTHING, "stdio"],
                                      "auto_approve": ["echo"]}}
        else:
            port = free_port()
            http = subprocess.Popen(["node", EVERYTHING, "streamableHttp"],
                                    env={**os.environ, "PORT": str(port)},
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(1000):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.01)
            servers = {"everything": {"url": f"http://127.0.0.1:{port}/mcp",
                                      "auto_approve": ["echo"]}}
    config = os.path.join(home, "config.json")
    with open(config, "w") as f:
        json.dump({"mcp_servers": servers, "sessions": {"autosave": False}}, f)
    os.chmod(config, 0o600)
    try:
        runs = []
        for i in range(reps):
            runs.append(run_once(binary, home, work, model))
            print(f"  {setup} run {i + 1}/{reps}: {runs[-1]['run_ms']:.0f} ms", file=sys.stderr)
        return runs
    finally:
        if http:
            http.kill()
            http.wait()
        model.server.shutdown()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    if not os.path.exists(EVERYTHING):
        sys.exit("bench/mcp_calls.py: run `make mcp-deps` first")
    print(f"| setup | start-up to 1st model request (median) | tool round trip p50 | p95 | "
          f"run of {a.calls} calls (median) | odek peak RSS |")
    print("|---|---|---|---|---|---|")
    for setup in ["builtin", "stdio", "http"]:
        runs = measure(a.bin, setup, a.calls, a.reps)
        gaps = sorted(g for r in runs for g in r["gaps_ms"])
        p95 = gaps[int(len(gaps) * 0.95) - 1]
        print(f"| {setup} | {statistics.median(r['startup_ms'] for r in runs):.0f} ms "
              f"| {statistics.median(gaps):.2f} ms | {p95:.2f} ms "
              f"| {statistics.median(r['run_ms'] for r in runs):.0f} ms "
              f"| {max(r['rss_kib'] for r in runs) / 1024:.1f} MiB |")


if __name__ == "__main__":
    main()
