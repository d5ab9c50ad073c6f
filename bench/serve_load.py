#!/usr/bin/env python3
"""Load test of `odek serve` (called by `ODEK_BENCH_ONLY=serve bench/run.sh`).

With nothing but the Python standard library:

  1. writes 1,000 sessions of realistic size into a temporary ODEK_HOME: 50–400 messages
     each (a system prompt, user turns, assistant messages with and without tool calls,
     tool results of read_file/shell/search_files/write_file/patch/plan with realistic
     lengths), run records, and a structured plan in about 85 % of them (the others have
     no plan, so their plan view answers `found: false` after scanning the transcript);
  2. checks that `odek session show` loads one of them;
  3. starts `odek serve --addr 127.0.0.1:0` with a global config that raises
     `serve.rate_limits` to 1,000,000 a minute (the limiter stays in the request path but
     never refuses), parses the token URL it prints, checks the index and the plan view;
  4. opens 50 keep-alive connections (asyncio, HTTP/1.1 written by hand so the client
     spends little CPU) for 10 s: half ask `GET /api/sessions/{id}/plan` for random ids,
     half `GET /api/sessions?limit=50&offset=<random multiple of 50>`, each connection one
     request at a time (closed loop);
  5. reports requests/s, p50/p90/p99/max latency per endpoint, every non-200 answer, the
     server's peak RSS (VmHWM of /proc/<pid>/status) and CPU time, the client's CPU time,
     and the size of the sessions directory.

Progress goes to stderr, the Markdown table to stdout. The client shares the machine with
the server: its CPU time is reported so a reader can see how much of the machine it took.
"""

import argparse
import asyncio
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from measure import clean_env, log, machine  # noqa: E402

# ---------------------------------------------------------------------------------------
# 1. sessions

WORDS = (
    "the a an of to in and for with on that this is are was be it as by from at we or "
    "parser request response module function test tests error errors handler session plan "
    "step file files config value values index list read write update check build run "
    "returns return field fields struct type types string bytes buffer line lines path "
    "server client token header headers status code body json cache limit offset page "
    "should would could need needs keep keeps move moved split add added remove removed "
    "instead because when then after before every each only still already first last new "
    "old current next previous small large fast slow safe simple clear exact missing "
    "rename refactor fix fixed failing passes passing compile compiles warning clippy "
    "cargo crate trait impl async await lock locks thread threads queue event events"
).split()

CODE_LINES = [
    "use std::collections::HashMap;",
    "use serde::{Deserialize, Serialize};",
    "pub fn parse(input: &str) -> Result<Request, ParseError> {",
    "    let mut lines = input.lines();",
    "    let head = lines.next().ok_or(ParseError::Empty)?;",
    "    let (method, rest) = head.split_once(' ').ok_or(ParseError::Malformed)?;",
    "    for line in lines.by_ref().take_while(|l| !l.is_empty()) {",
    "        let (name, value) = line.split_once(':').ok_or(ParseError::Header)?;",
    "        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());",
    "    }",
    "    Ok(Request { method: method.parse()?, path: path.to_string(), headers })",
    "}",
    "",
    "#[derive(Debug, Clone, PartialEq, Eq)]",
    "pub struct Request {",
    "    pub method: Method,",
    "    pub path: String,",
    "    pub headers: HashMap<String, String>,",
    "#[cfg(test)]",
    "mod tests {",
    "    use super::*;",
    "    #[test]",
    "    fn a_request_line_without_a_path_is_refused() {",
    "        assert!(matches!(parse(\"GET\"), Err(ParseError::Malformed)));",
    "    let body = serde_json::to_vec(&value).map_err(|e| Error::internal(e.to_string()))?;",
    "    if body.len() > MAX_BODY { return Err(Error::TooLarge(body.len())); }",
    "    match self.state.lock().unwrap().get(&id) {",
    "        Some(entry) => entry.clone(),",
    "        None => return Ok(None),",
    "    tracing::debug!(%id, bytes = body.len(), \"loaded\");",
    "impl fmt::Display for ParseError {",
    "    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {",
]

SHELL_OUTPUT = [
    "   Compiling odek v0.4.0 (/home/dev/odek)",
    "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 6.41s",
    "     Running unittests src/lib.rs (target/debug/deps/odek-3f0c2a9d1b7e4c55)",
    "running 214 tests",
    "test parser::tests::a_request_line_without_a_path_is_refused ... ok",
    "test parser::tests::headers_are_case_insensitive ... ok",
    "test session::tests::the_index_is_rebuilt_when_a_file_is_missing ... ok",
    "test result: ok. 214 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
    "warning: unused variable: `rest`",
    "  --> src/parser.rs:14:22",
    "error[E0308]: mismatched types",
    "   |     expected `Result<Request, ParseError>`, found `Option<Request>`",
    " src/parser.rs | 42 +++++++++++++++++++++++++++---------------",
    " 3 files changed, 118 insertions(+), 64 deletions(-)",
    "M  src/parser.rs",
    "?? src/parser/headers.rs",
]

SYSTEM_PROMPT = (
    "You are odek, an autonomous coding agent working in the user's repository. "
    "You have tools to read and search files, write and patch files, run shell commands "
    "and keep a structured plan. Work step by step: read before you change, run the tests "
    "after every change, and keep the plan current (create it for any task of more than "
    "two steps, mark a step in_progress before you start it and done when it is verified, "
    "blocked with a note when you cannot go on). Never invent file contents; quote the "
    "lines you change. Keep answers short and concrete; finish with what changed, what was "
    "verified and what is left. "
) * 6

TOOLS = ["read_file", "shell", "search_files", "write_file", "patch"]


class Corpus:
    """Two long texts (prose and code-like lines) from which messages are cut at random
    offsets, so 140 MB of text are generated in seconds."""

    def __init__(self, rng):
        self.prose = " ".join(rng.choice(WORDS) for _ in range(400_000))
        lines = []
        for n in range(60_000):
            line = rng.choice(CODE_LINES)
            lines.append(f"{n % 400 + 1}|{line}")
        self.code = "\n".join(lines)
        self.shell = "\n".join(rng.choice(SHELL_OUTPUT) for _ in range(40_000))

    @staticmethod
    def cut(text, rng, length):
        length = max(1, min(length, len(text) - 1))
        start = rng.randrange(0, len(text) - length)
        return text[start : start + length]

    def words(self, rng, length):
        text = self.cut(self.prose, rng, length + 12)
        text = text[text.find(" ") + 1 :][:length].rsplit(" ", 1)[0].strip()
        return text[:1].upper() + text[1:] + "."

    def code_block(self, rng, length):
        return self.cut(self.code, rng, length)

    def shell_output(self, rng, length):
        return self.cut(self.shell, rng, length)


def lengths(rng, low, high, mode):
    """A skewed length between low and high (most are short, a few long)."""
    return int(rng.triangular(low, high, mode))


def stamp(t):
    millis = int(round((t - int(t)) * 1000)) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{millis:03}Z"


STEP_TITLES = [
    "Read the request parser and its tests",
    "Move header parsing into src/parser/headers.rs",
    "Return a typed error for malformed request lines",
    "Add tests for empty and oversized headers",
    "Run cargo test and cargo clippy",
    "Update docs/ARCHITECTURE.md",
    "Check the session index after the rename",
    "Benchmark the list endpoint",
]


class Conversation:
    """Builds one session's transcript, run records and plan."""

    def __init__(self, rng, corpus, n, planned):
        self.rng, self.corpus, self.n = rng, corpus, n
        self.messages = [{"role": "system", "content": SYSTEM_PROMPT}]
        self.call = 0
        self.planned = planned
        self.plan = None
        self.plan_calls = {"create": 0, "update": 0, "blocked": 0}
        if planned:
            count = rng.randint(3, 8)
            steps = [
                {"id": f"s{i + 1}", "title": t, "status": "pending", "note": ""}
                for i, t in enumerate(rng.sample(STEP_TITLES, count))
            ]
            self.plan = {"version": 0, "steps": steps}

    def user(self, first):
        rng, c = self.rng, self.corpus
        if first:
            text = c.words(rng, lengths(rng, 60, 1200, 200))
        else:
            text = c.words(rng, lengths(rng, 10, 500, 60))
        self.messages.append({"role": "user", "content": text})
        return text

    def assistant_text(self):
        rng = self.rng
        self.messages.append(
            {"role": "assistant", "content": self.corpus.words(rng, lengths(rng, 60, 1500, 300))}
        )

    def plan_call(self):
        """Arguments and result of one plan call (create first, then updates)."""
        rng, plan = self.rng, self.plan
        if plan["version"] == 0:
            args = {"verb": "create", "steps": [{"id": s["id"], "title": s["title"]} for s in plan["steps"]]}
            self.plan_calls["create"] += 1
        else:
            step = rng.choice(plan["steps"])
            status = rng.choices(["in_progress", "done", "blocked"], [4, 5, 1])[0]
            step["status"] = status
            update = {"id": step["id"], "status": status}
            if status == "blocked":
                step["note"] = self.corpus.words(rng, lengths(rng, 30, 160, 60))
                update["note"] = step["note"]
                self.plan_calls["blocked"] += 1
            args = {"verb": "update", "updates": [update]}
            self.plan_calls["update"] += 1
        plan["version"] += 1
        done = sum(s["status"] == "done" for s in plan["steps"])
        lines = [f"Plan v{plan['version']} ({done}/{len(plan['steps'])} done):"]
        lines += [f"[{s['status']}] {s['id']}: {s['title']}" for s in plan["steps"]]
        return args, "\n".join(lines)

    def tool_group(self, calls):
        """An assistant message with `calls` tool calls and their results."""
        rng, c = self.rng, self.corpus
        content = "" if rng.random() < 0.5 else c.words(rng, lengths(rng, 20, 400, 60))
        tool_calls, results = [], []
        for _ in range(calls):
            self.call += 1
            call_id = f"call_{self.call:02}_{rng.getrandbits(40):010x}"
            if self.planned and (self.plan["version"] == 0 or rng.random() < 0.08):
                name = "plan"
                args, result = self.plan_call()
            else:
                name = rng.choices(TOOLS, [5, 4, 2, 1, 1])[0]
                if name == "read_file":
                    path = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.rs"
                    args = {"path": path}
                    if rng.random() < 0.3:
                        args.update({"offset": rng.randint(1, 300), "limit": 120})
                    result = c.code_block(rng, lengths(rng, 100, 3000, 400))
                elif name == "shell":
                    cmd = rng.choice(
                        ["cargo test --locked", "cargo clippy --all-targets -- -D warnings",
                         "git status --short", "git diff --stat", "ls -la src/parser",
                         "rg -n 'fn parse' src"]
                    )
                    args = {"command": cmd, "description": c.words(rng, 40)}
                    result = c.shell_output(rng, lengths(rng, 40, 2000, 200))
                elif name == "search_files":
                    args = {"pattern": rng.choice(WORDS), "path": "src"}
                    result = c.code_block(rng, lengths(rng, 60, 1500, 200))
                elif name == "write_file":
                    body = c.code_block(rng, lengths(rng, 100, 1500, 300))
                    args = {"path": f"src/{rng.choice(WORDS)}.rs", "content": body}
                    result = f"wrote {len(body)} bytes to {args['path']}"
                else:
                    old = c.code_block(rng, lengths(rng, 30, 400, 80))
                    new = c.code_block(rng, lengths(rng, 30, 500, 100))
                    args = {"path": f"src/{rng.choice(WORDS)}.rs", "old": old, "new": new}
                    result = f"patched {args['path']}: 1 hunk, +{new.count(chr(10)) + 1} -{old.count(chr(10)) + 1}"
            tool_calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args, separators=(",", ":"))},
                }
            )
            results.append({"role": "tool", "content": result, "name": name, "tool_call_id": call_id})
        self.messages.append({"role": "assistant", "content": content, "tool_calls": tool_calls})
        self.messages.extend(results)

    def build(self):
        rng = self.rng
        task = self.user(first=True)
        # Leave one slot for the final answer.
        while len(self.messages) < self.n - 1:
            room = self.n - 1 - len(self.messages)
            roll = rng.random()
            if roll < 0.03 and room >= 2:
                self.assistant_text()
                self.user(first=False)
            elif room == 1:
                self.assistant_text()
            else:
                calls = min(room - 1, rng.choices([1, 2, 3], [7, 2, 1])[0])
                self.tool_group(calls)
        self.assistant_text()
        assert len(self.messages) == self.n, (len(self.messages), self.n)
        return task


def write_sessions(odek_home, count, seed, min_messages, max_messages):
    """Writes `count` sessions in the format of src/session/ (Session, serde field order)
    and returns (ids, ids with a structured plan, total bytes)."""
    rng = random.Random(seed)
    corpus = Corpus(rng)
    sessions = os.path.join(odek_home, "sessions")
    os.makedirs(sessions, mode=0o700)
    ids, planned_ids, total = [], [], 0
    now = time.time()
    for n in range(count):
        created = now - (n + 1) * 3_600 - rng.uniform(0, 3_000)  # one an hour back from now
        day = time.strftime("%Y%m%d", time.gmtime(created))
        sid = f"{day}-{rng.getrandbits(128):032x}"
        planned = rng.random() < 0.85
        conv = Conversation(rng, corpus, rng.randint(min_messages, max_messages), planned)
        task = conv.build()
        turns = sum(m["role"] == "user" for m in conv.messages)
        tool_calls = sum(len(m.get("tool_calls", ())) for m in conv.messages)
        iterations = sum(m["role"] == "assistant" for m in conv.messages)
        updated = created + iterations * rng.uniform(2, 9)
        # One run record per turn, splitting the figures evenly.
        runs, input_total, output_total, cached_total = [], 0, 0, 0
        for t in range(turns):
            share_iter = max(1, iterations // turns)
            inp = share_iter * rng.randint(8_000, 40_000)
            out = share_iter * rng.randint(150, 900)
            cached = int(inp * rng.uniform(0.5, 0.9))
            input_total += inp
            output_total += out
            cached_total += cached
            record = {
                "at": stamp(created + (updated - created) * (t + 1) / turns),
                "input_tokens": inp,
                "output_tokens": out,
                "cached_tokens": cached,
                "iterations": share_iter,
                "tool_calls": tool_calls // turns,
                "plans_created": conv.plan_calls["create"] if t == 0 else 0,
                "plans_updated": conv.plan_calls["update"] // turns,
                "plans_blocked": conv.plan_calls["blocked"] // turns,
                "blocked_streaks": 0,
                "steps_done": 0,
                "steps_total": 0,
                "plan_bytes": share_iter * 420 if planned else 0,
            }
            if planned:
                record["steps_done"] = sum(s["status"] == "done" for s in conv.plan["steps"])
                record["steps_total"] = len(conv.plan["steps"])
            runs.append(record)
        session = {
            "id": sid,
            "created_at": stamp(created),
            "updated_at": stamp(updated),
            "model": rng.choice(["deepseek-v4-flash", "deepseek-v4-flash", "gpt-5-mini"]),
            "origin": "cli",
            "turns": turns,
            "task": task,
            "messages": conv.messages,
            "input_tokens": input_total,
            "output_tokens": output_total,
            "cached_tokens": cached_total,
            "runs": runs,
        }
        if planned and conv.plan["version"] > 0:
            session["plan"] = conv.plan
            planned_ids.append(sid)
        path = os.path.join(sessions, f"{sid}.json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            text = json.dumps(session, separators=(",", ":"))
            f.write(text)
        total += len(text.encode())
        ids.append(sid)
    return sessions, ids, planned_ids, total


def dir_size(path):
    """Apparent size and allocated size (du) of the files in `path`."""
    apparent = allocated = files = 0
    for entry in os.scandir(path):
        if entry.is_file(follow_symlinks=False):
            st = entry.stat(follow_symlinks=False)
            apparent += st.st_size
            allocated += st.st_blocks * 512
            files += 1
    return apparent, allocated, files


# ---------------------------------------------------------------------------------------
# 2–3. the server


def check_show(binary, env, sid):
    out = subprocess.run(
        [binary, "session", "show", sid],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0 or sid not in out.stdout + out.stderr:
        raise SystemExit(
            f"odek session show {sid}: exit {out.returncode}\n--- stdout ---\n{out.stdout[:2000]}"
            f"\n--- stderr ---\n{out.stderr[:2000]}"
        )
    log(f"odek session show {sid}: ok ({len(out.stdout)} bytes of output)")


URL_LINE = re.compile(r"odek serve ⚡  http://(127\.0\.0\.1:\d+)/\?token=([0-9a-f]{64})\s*$")


class Server:
    def __init__(self, binary, env):
        self.proc = subprocess.Popen(
            [binary, "serve", "--addr", "127.0.0.1:0"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.lines = []
        found = threading.Event()
        self.addr = self.token = None

        def drain():
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                self.lines.append(line)
                m = URL_LINE.match(line)
                if m and not found.is_set():
                    self.addr, self.token = m.group(1), m.group(2)
                    found.set()

        threading.Thread(target=drain, daemon=True).start()
        if not found.wait(30):
            self.stop()
            raise SystemExit("odek serve printed no token URL:\n" + "\n".join(self.lines))
        self.port = int(self.addr.rsplit(":", 1)[1])

    def status(self):
        """VmRSS and VmHWM (KiB) from /proc/<pid>/status."""
        values = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    values[key] = int(rest.split()[0])
        return values

    def cpu(self):
        """User + system CPU seconds of the server so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def threads(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def get_json(server, path):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("GET", path, headers={"X-Odek-Token": server.token})
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise SystemExit(f"GET {path}: {r.status} {body[:500]!r}")
        return json.loads(body)
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------
# 4. the load


class Endpoint:
    def __init__(self, name):
        self.name = name
        self.latencies = []  # seconds, 200 answers only
        self.statuses = {}
        self.bytes = 0
        self.errors = []


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = None
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        return status, bytes(body)
    return status, await reader.readexactly(length or 0)


async def connection(n, server, endpoint, make_path, deadline, seed):
    rng = random.Random(seed)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    prefix = b"GET "
    suffix = (
        f" HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Odek-Token: {server.token}\r\n"
        "Accept: application/json\r\n\r\n"
    ).encode()
    clock = time.perf_counter
    try:
        while clock() < deadline:
            path = make_path(rng)
            start = clock()
            writer.write(prefix + path.encode() + suffix)
            status, body = await read_response(reader)
            elapsed = clock() - start
            endpoint.statuses[status] = endpoint.statuses.get(status, 0) + 1
            endpoint.bytes += len(body)
            if status == 200:
                endpoint.latencies.append(elapsed)
            elif len(endpoint.errors) < 5:
                endpoint.errors.append(f"{status} {path}: {body[:300]!r}")
    except (OSError, asyncio.IncompleteReadError) as e:
        endpoint.errors.append(f"connection {n}: {e!r}")
    finally:
        writer.close()


async def load(server, ids, sessions, connections, duration, seed):
    plan = Endpoint("GET /api/sessions/{id}/plan")
    listing = Endpoint("GET /api/sessions?limit=50&offset=…")
    offsets = list(range(0, sessions, 50))
    make_plan = lambda rng: f"/api/sessions/{rng.choice(ids)}/plan"
    make_list = lambda rng: f"/api/sessions?limit=50&offset={rng.choice(offsets)}"
    deadline = time.perf_counter() + duration
    tasks = []
    for n in range(connections):
        endpoint, make = (plan, make_plan) if n % 2 == 0 else (listing, make_list)
        tasks.append(connection(n, server, endpoint, make, deadline, seed * 1000 + n))
    start = time.perf_counter()
    await asyncio.gather(*tasks)
    return [plan, listing], time.perf_counter() - start


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = math.ceil(p / 100 * len(sorted_values)) - 1  # nearest rank
    return sorted_values[max(0, min(len(sorted_values) - 1, k))]


# ---------------------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(description="load test of odek serve")
    p.add_argument("--bin", required=True, help="the odek binary")
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--min-messages", type=int, default=50)
    p.add_argument("--max-messages", type=int, default=400)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--duration", type=float, default=10.0, help="seconds of load")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--keep", action="store_true", help="keep the temporary ODEK_HOME")
    args = p.parse_args()
    binary = os.path.abspath(args.bin)

    host = machine()
    log(f"machine: {host}")
    root = tempfile.mkdtemp(prefix="odek-bench-serve-")
    try:
        home = os.path.join(root, "home")
        odek_home = os.path.join(home, ".odek")
        os.makedirs(odek_home, mode=0o700)
        config = os.path.join(odek_home, "config.json")
        fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(
                {"serve": {"rate_limits": {"reads_per_minute": 1_000_000, "prompts_per_minute": 1_000_000}}},
                f,
            )
        started = time.perf_counter()
        sessions_dir, ids, planned_ids, _ = write_sessions(
            odek_home, args.sessions, args.seed, args.min_messages, args.max_messages
        )
        apparent, allocated, files = dir_size(sessions_dir)
        log(
            f"wrote {len(ids)} sessions ({len(planned_ids)} with a plan) in "
            f"{time.perf_counter() - started:.1f} s: {apparent / 1e6:.1f} MB"
        )
        # The model endpoint is never called (no prompt is sent); a loopback URL needs no key.
        env = clean_env(
            home, odek_home, {"ODEK_BASE_URL": "http://127.0.0.1:9/v1", "ODEK_MODEL": "bench-model"}
        )
        check_show(binary, env, planned_ids[0])

        server = Server(binary, env)
        try:
            log(f"odek serve on {server.addr} (pid {server.proc.pid})")
            idle = server.status()
            first = get_json(server, "/api/sessions?limit=50&offset=0")
            if first["count"] != len(ids) or len(first["sessions"]) != 50:
                raise SystemExit(f"list: count {first['count']}, page {len(first['sessions'])}")
            view = get_json(server, f"/api/sessions/{planned_ids[0]}/plan")
            if not view["found"] or not view["steps"]:
                raise SystemExit(f"plan view of {planned_ids[0]}: {view}")
            unplanned = sorted(set(ids) - set(planned_ids))
            if unplanned:
                view = get_json(server, f"/api/sessions/{unplanned[0]}/plan")
                if view["found"]:
                    raise SystemExit(f"plan view of {unplanned[0]} (no plan): {view}")
            apparent, allocated, files = dir_size(sessions_dir)  # index.json included now
            before = server.status()
            log(
                f"index built; server RSS {before['VmRSS'] / 1024:.1f} MiB "
                f"(at start {idle['VmRSS'] / 1024:.1f}); {args.connections} connections for "
                f"{args.duration:g} s…"
            )
            cpu0, usage0 = server.cpu(), resource.getrusage(resource.RUSAGE_SELF)
            results, wall = asyncio.run(
                load(server, ids, args.sessions, args.connections, args.duration, args.seed)
            )
            cpu1, usage1 = server.cpu(), resource.getrusage(resource.RUSAGE_SELF)
            after = server.status()
            threads = server.threads()
        finally:
            server.stop()
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    server_cpu = cpu1 - cpu0
    client_cpu = (usage1.ru_utime + usage1.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    total = sum(len(e.latencies) for e in results)
    non200 = {}
    for e in results:
        for status, count in e.statuses.items():
            if status != 200:
                non200[status] = non200.get(status, 0) + count
        for err in e.errors:
            log(f"{e.name}: {err}")

    print(f"\nMachine: {host}.\n")
    print(
        f"{args.sessions:,} sessions of {args.min_messages}–{args.max_messages} messages "
        f"({len(planned_ids)} with a plan), sessions directory {apparent / 1e6:.1f} MB "
        f"({allocated / 2**20:.1f} MiB on disk, {files} files with index.json); "
        f"{args.connections} keep-alive connections for {wall:.1f} s, one request at a time each, "
        f"half on each endpoint.\n"
    )
    ms = lambda v: f"{v * 1000:.1f} ms"
    print("| endpoint | requests (200) | req/s | p50 | p90 | p99 | max | non-200 | mean body |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in results:
        lat = sorted(e.latencies)
        n = len(lat)
        bad = sum(c for s, c in e.statuses.items() if s != 200)
        body = e.bytes / max(1, sum(e.statuses.values()))
        print(
            f"| `{e.name}` | {n:,} | {n / wall:,.0f} | {ms(percentile(lat, 50))} | "
            f"{ms(percentile(lat, 90))} | {ms(percentile(lat, 99))} | {ms(lat[-1]) if lat else '–'} | "
            f"{bad} | {body / 1024:.1f} KiB |"
        )
    lat = sorted(x for e in results for x in e.latencies)
    print(
        f"| **total** | {total:,} | **{total / wall:,.0f}** | {ms(percentile(lat, 50))} | "
        f"{ms(percentile(lat, 90))} | {ms(percentile(lat, 99))} | {ms(lat[-1]) if lat else '–'} | "
        f"{sum(non200.values())} | |"
    )
    print(
        f"\nServer: peak RSS (VmHWM) {after['VmHWM'] / 1024:.1f} MiB (VmRSS {idle['VmRSS'] / 1024:.1f} MiB "
        f"at start, {before['VmRSS'] / 1024:.1f} after the first list, {after['VmRSS'] / 1024:.1f} at the end); "
        f"{threads} threads; CPU {server_cpu:.1f} s in {wall:.1f} s ({100 * server_cpu / wall:.0f} % of one core, "
        f"{1000 * server_cpu / max(1, total):.2f} ms a request). Client (this script): CPU {client_cpu:.1f} s "
        f"({100 * client_cpu / wall:.0f} % of one core)."
        + (f" Non-200 answers: {non200}." if non200 else " No non-200 answers.")
    )
    if non200:
        sys.exit(1)


if __name__ == "__main__":
    main()
