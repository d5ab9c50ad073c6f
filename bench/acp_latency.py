#!/usr/bin/env python3
"""What `odek acp` adds between the model and the editor (issue 47's figures), end to end,
with the Python standard library only.

A model server in this script streams each answer in PIECES pieces of 16 bytes, GAP ms
apart, and notes when it sent each; a client in this script speaks ACP to `odek acp` over
its stdio (initialize, session/new, then PROMPTS prompts) and notes when each
`agent_message_chunk` arrives. odek holds a stream's last word back — and its last 192
bytes while a credential keyword is in view (`--word token`) — until it can tell they hold
no secret (src/redact/stream.rs), so a chunk goes out when a piece completes what it may let
out: its latency is its arrival less the sending of the last piece before it. Also the RSS of `odek acp` (from /proc): just after initialize and
session/new, idle 3 s later (it gives the binary's code pages back after 2 s idle), at its
peak after the prompts and idle after them.

Usage: bench/acp_latency.py --bin target/…/odek [--prompts 20] [--pieces 40] [--gap 20]
"""

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def model_server(pieces, gap, sent, word):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("content-length", 0))
            self.rfile.read(length)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            times = []
            for i in range(pieces):
                delta = {"choices": [{"index": 0, "delta": {"content": f"{word} {i:03d} of text "[:16]}}]}
                # Noted before it goes: the client may hear odek's chunk before this thread
                # runs again.
                times.append(time.perf_counter())
                self.chunk(f"data: {json.dumps(delta)}\n\n")
                time.sleep(gap / 1000)
            done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": pieces}}
            self.chunk(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            sent.append(times)

        def chunk(self, text):
            data = text.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Acp:
    """odek acp over pipes: requests by id, every line timed as it arrives."""

    def __init__(self, argv, env, cwd):
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()
        self.next_id = 0

    def read(self):
        for line in self.proc.stdout:
            at = time.perf_counter()
            with self.cond:
                self.lines.append((at, json.loads(line)))
                self.cond.notify_all()

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        with self.cond:
            while True:
                for _, m in self.lines:
                    if m.get("id") == rid and "method" not in m:
                        if "error" in m:
                            raise RuntimeError(m["error"])
                        return m["result"]
                self.cond.wait(30)

    def rss(self, field):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        return None


# Long enough for an idle `odek acp` to give its code pages back (2 s after the last answer).
IDLE_WAIT = 3.0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--prompts", type=int, default=20)
    p.add_argument("--pieces", type=int, default=40)
    p.add_argument("--gap", type=float, default=20.0, help="ms between pieces")
    p.add_argument("--word", default="piece",
                   help="each piece's first word (`token`, a credential keyword, brings the 192-byte hold back)")
    args = p.parse_args()
    sent = []
    server = model_server(args.pieces, args.gap, sent, args.word)
    with tempfile.TemporaryDirectory() as tmp:
        home, work = os.path.join(tmp, "home"), os.path.join(tmp, "work")
        os.makedirs(home)
        os.makedirs(work)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp, "ODEK_HOME": home,
               "ODEK_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
               "ODEK_MODEL": "bench", "ODEK_MEMORY_EPISODES": "false"}
        acp = Acp([os.path.abspath(args.bin), "acp"], env, work)
        acp.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = acp.request("session/new", {"cwd": work, "mcpServers": []})["sessionId"]
        time.sleep(0.2)
        busy_rss = acp.rss("VmRSS"), acp.rss("RssFile"), acp.rss("RssAnon")
        time.sleep(IDLE_WAIT)
        idle_rss, idle_hwm = acp.rss("VmRSS"), acp.rss("VmHWM")
        idle_file, idle_anon = acp.rss("RssFile"), acp.rss("RssAnon")
        latencies, firsts = [], []
        for n in range(args.prompts):
            start = len(acp.lines)
            acp.request("session/prompt", {"sessionId": session,
                                           "prompt": [{"type": "text", "text": f"answer {n}"}]})
            times = sent[-1]
            chunks = [at for at, m in acp.lines[start:]
                      if m.get("method") == "session/update"
                      and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"]
            for i, at in enumerate(chunks):
                before = [t for t in times if t <= at]
                if not before:
                    continue
                latency = (at - before[-1]) * 1000
                if i < len(chunks) - 1:  # the last one waits for the stream's end, not a piece
                    latencies.append(latency)
                if i == 0:
                    firsts.append(((at - times[0]) * 1000, latency))
        hwm = acp.rss("VmHWM")
        time.sleep(IDLE_WAIT)
        after_rss = acp.rss("VmRSS"), acp.rss("RssFile"), acp.rss("RssAnon")
        acp.proc.stdin.close()
        acp.proc.wait(timeout=10)
    server.shutdown()
    lat = sorted(latencies)
    print(f"| `odek acp` ({args.prompts} prompts, {args.pieces} pieces of 16 bytes {args.gap:g} ms apart) | value |")
    print("|---|---|")
    print(f"| a chunk after the piece that let it out: median | {statistics.median(lat):.2f} ms |")
    print(f"| … 95th percentile / max | {lat[int(len(lat) * 0.95)]:.2f} / {lat[-1]:.2f} ms |")
    print(f"| first chunk after the piece that let it out: median | {statistics.median(f[1] for f in firsts):.2f} ms |")
    print(f"| first chunk after the stream's first piece: median | {statistics.median(f[0] for f in firsts):.2f} ms |")
    print(f"| first prompt's first chunk after the piece that let it out | {firsts[0][1]:.2f} ms |")
    rss = lambda r: f"{r[0]:.1f} MiB: {r[1]:.1f} MiB of the binary's pages, {r[2]:.1f} MiB anonymous"
    print(f"| RSS 0.2 s after initialize and session/new | {rss(busy_rss)} |")
    print(f"| RSS idle, {IDLE_WAIT:g} s later | {rss((idle_rss, idle_file, idle_anon))} (peak so far {idle_hwm:.1f}) |")
    print(f"| peak RSS after the prompts | {hwm:.1f} MiB |")
    print(f"| RSS idle, {IDLE_WAIT:g} s after the prompts | {rss(after_rss)} |")


if __name__ == "__main__":
    sys.exit(main())
