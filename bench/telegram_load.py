#!/usr/bin/env python3
"""End-to-end benchmark of `odek telegram` (called by `ODEK_BENCH_ONLY=telegram bench/run.sh`).

With nothing but the Python standard library, in this one process:

  1. a fake Telegram Bot API on 127.0.0.1 (the behaviour of tests/it/support/telegram.rs):
     `getUpdates` long-polls for up to `timeout` seconds and answers the pending updates
     with `update_id >= offset`, dropping older ones (an offset confirms every update before
     it); `sendMessage` and `editMessageText` record the time of each (chat_id, text) and
     answer a Message (`message_id`, `date`, `chat {id, type}`, `text`);
     `answerCallbackQuery` answers true; a wrong token gets 401;
  2. an OpenAI-protocol model server on 127.0.0.1 that answers every chat completion at
     once (SSE when the request has `stream: true`, one JSON body otherwise) with a short
     text and no tool calls. The text repeats the tag of the chat's message (`chatC msgK`),
     so every answer the bot sends can be matched to the message it answers;
  3. a temporary ODEK_HOME whose config.json points `telegram.api_base` at the fake, allows
     the users of the benchmark's chats and sets `poll_timeout` 5; the release
     `odek telegram` runs in a temporary working directory with ODEK_BASE_URL at the model
     server and ODEK_MODEL=bench-model, and is ready at its `odek telegram ⚡` line.

Then it measures:

  a. idle: --idle-seconds (10) without updates: the bot's CPU time (utime + stime of
     /proc/<pid>/stat) and memory (VmRSS, VmHWM of /proc/<pid>/status);
  b. load: --chats (20) private chats, each sending --messages (10) messages one after the
     other, the next as soon as the answer to the previous one reached the fake's
     sendMessage (a closed loop per chat; the chats run at once). Latency is from putting
     the update in the queue to the answer's sendMessage arriving: p50, p90, p99, max;
     messages per second; the bot's CPU time per message; its peak RSS. Each turn is also
     split where the fake servers can see it: the update waiting for a poll, the bot until
     its model request arrives, the model server, the bot from the model's answer to
     sendMessage;
  c. `/plan_status`: 100 requests, one after another, from one chat after its turns (the
     bot loads the chat's session file for each).

Every update must get exactly one answer: the script counts sendMessage calls, matches
every answer to its message by the tag, and reports missing answers, double answers,
updates delivered twice, "a turn is still running" refusals and unexpected messages
loudly (stderr and the table) and exits 1 on any of them. At the end it stops the bot with
SIGTERM and checks that it exits 0.

Progress goes to stderr, the Markdown tables to stdout. The client (this script: the fake
Bot API, the model server and the driver) shares the machine with the bot; its CPU time is
reported so a reader can see how much of the machine it took.
"""

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from measure import clean_env, log, machine  # noqa: E402

TOKEN = "123456:ABCdefGhIJKlmNoPQRsTUVwxyZ0123456789"
DATE = 1_764_547_200
TAG = re.compile(r"chat(\d+) msg(\d+)")
BUSY = "A turn is still running"
NO_PLAN = "No active plan in this session."
READY = "odek telegram ⚡"
FIRST_CHAT = 1001  # chat k (0-based) is private chat FIRST_CHAT + k with user FIRST_CHAT + k
clock = time.perf_counter


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 would make the bot's parallel sends wait for SYN retries.
    request_queue_size = 256


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real servers
    disable_nagle_algorithm = True  # no delayed-ACK wait between headers and body

    def log_message(self, *args):  # quiet
        pass

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length)

    def send(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()


# ---------------------------------------------------------------------------------------
# 1. the fake Bot API


class FakeTelegram:
    def __init__(self):
        self.cond = threading.Condition()
        self.updates = []  # pending updates, oldest first
        self.next_update = 1000
        self.next_message = 1
        self.polls = 0  # getUpdates calls
        self.batches = []  # sizes of the non-empty getUpdates answers
        self.delivered = {}  # update_id -> times it was handed out
        self.sent = []  # (time, chat_id, text, parse_mode)
        self.edits = []  # (time, chat_id, message_id, text)
        self.answered = 0  # answerCallbackQuery calls
        self.refused = []  # (status, method, description)
        self.on_sent = None  # callback(time, chat, text) for sendMessage
        fake = self

        class H(Handler):
            def do_POST(self):
                raw = self.body()
                arrived = clock()
                parts = self.path.strip("/").split("/")
                if len(parts) != 2 or parts[0] != f"bot{TOKEN}":
                    return self.error(401, "?", "Unauthorized")
                method = parts[1]
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    return self.error(400, method, "Bad Request: invalid JSON")
                if method == "getUpdates":
                    return self.ok(fake.get_updates(body))
                if method in ("sendMessage", "editMessageText"):
                    text = body.get("text") or ""
                    if not text.strip():
                        return self.error(400, method, "Bad Request: message text is empty")
                    if len(text.encode("utf-16-le")) // 2 > 4096:
                        return self.error(400, method, "Bad Request: message is too long")
                    chat = body.get("chat_id")
                    if method == "sendMessage":
                        message_id = fake.record_sent(arrived, chat, text, body.get("parse_mode"))
                    else:
                        message_id = body.get("message_id")
                        with fake.cond:
                            fake.edits.append((arrived, chat, message_id, text))
                    return self.ok(
                        {
                            "message_id": message_id,
                            "date": DATE,
                            "chat": {"id": chat, "type": "private"},
                            "text": text,
                        }
                    )
                if method == "answerCallbackQuery":
                    with fake.cond:
                        fake.answered += 1
                    return self.ok(True)
                return self.error(404, method, "Not Found: method not found")

            def ok(self, result):
                self.send(200, "application/json", json.dumps({"ok": True, "result": result}).encode())

            def error(self, status, method, description):
                with fake.cond:
                    fake.refused.append((status, method, description))
                body = {"ok": False, "error_code": status, "description": description}
                self.send(status, "application/json", json.dumps(body).encode())

        self.server = Server(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def message(self, chat, user, text, before_notify=None):
        """Queues a text message; returns (update_id, time queued). `before_notify(update_id,
        time)` runs before a waiting poll can see the update."""
        with self.cond:
            update_id = self.next_update
            self.next_update += 1
            message_id = self.next_message
            self.next_message += 1
            self.updates.append(
                {
                    "update_id": update_id,
                    "message": {
                        "message_id": message_id,
                        "date": DATE,
                        "chat": {"id": chat, "type": "private"},
                        "from": {"id": user, "is_bot": False, "first_name": "Ada", "username": f"u{user}"},
                        "text": text,
                    },
                }
            )
            queued = clock()
            if before_notify:
                before_notify(update_id, queued)
            self.cond.notify_all()
        return update_id, queued

    def get_updates(self, body):
        offset = int(body.get("offset") or 0)
        timeout = min(50, max(0, int(body.get("timeout") or 0)))
        deadline = clock() + timeout
        with self.cond:
            self.polls += 1
            while True:
                # Like Telegram: an offset confirms every update before it.
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
                if self.updates:
                    now = clock()
                    for u in self.updates:
                        self.delivered.setdefault(u["update_id"], []).append(now)
                    self.batches.append(len(self.updates))
                    return list(self.updates)
                left = deadline - clock()
                if left <= 0:
                    return []
                self.cond.wait(left)

    def record_sent(self, arrived, chat, text, parse_mode):
        with self.cond:
            message_id = self.next_message
            self.next_message += 1
            self.sent.append((arrived, chat, text, parse_mode))
            callback = self.on_sent
        if callback:
            callback(arrived, chat, text)
        return message_id

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------------------------------
# 2. the model server


class ModelServer:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.streamed = 0
        self.untagged = 0  # chat completions without a benchmark tag
        self.gets = 0
        self.times = {}  # (chat, k) -> [(request read, answer written)]
        model = self

        class H(Handler):
            def do_GET(self):
                with model.lock:
                    model.gets += 1
                if self.path.rstrip("/") == "/v1/models":
                    listing = {"object": "list", "data": [{"id": "bench-model", "object": "model"}]}
                    self.send(200, "application/json", json.dumps(listing).encode())
                else:
                    self.send(404, "text/plain", b"not found")

            def do_POST(self):
                raw = self.body()
                arrived = clock()
                if self.path != "/v1/chat/completions":
                    return self.send(404, "text/plain", b"not found")
                try:
                    request = json.loads(raw)
                except ValueError:
                    return self.send(400, "application/json", b'{"error":{"message":"invalid JSON"}}')
                tag = last_tag(request)
                content = f"Done: chat{tag[0]} msg{tag[1]}." if tag else "Done."
                if request.get("stream"):
                    self.send(200, "text/event-stream", sse_body(content))
                else:
                    self.send(200, "application/json", json.dumps(completion(content)).encode())
                answered = clock()
                with model.lock:
                    model.requests += 1
                    model.streamed += bool(request.get("stream"))
                    if tag:
                        model.times.setdefault(tag, []).append((arrived, answered))
                    else:
                        model.untagged += 1

        self.server = Server(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


USAGE = {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912}


def last_tag(request):
    """The (chat, k) tag of the newest user message that has one."""
    for m in reversed(request.get("messages") or []):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        found = TAG.search(content or "")
        if found:
            return int(found[1]), int(found[2])
    return None


def completion(content):
    return {
        "id": "cmpl-bench",
        "object": "chat.completion",
        "model": "bench-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": USAGE,
    }


def sse_body(content):
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
        {"choices": [{"index": 0, "delta": {"content": content}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": USAGE},
    ]
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


# ---------------------------------------------------------------------------------------
# 3. the bot


class Bot:
    def __init__(self, binary, env, cwd):
        self.proc = subprocess.Popen(
            [binary, "telegram"],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.lines = []
        ready = threading.Event()

        def drain():
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                self.lines.append(line)
                if line.startswith(READY):
                    ready.set()

        self.drainer = threading.Thread(target=drain, daemon=True)
        self.drainer.start()
        if not ready.wait(30):
            self.stop()
            raise SystemExit("odek telegram did not start:\n" + "\n".join(self.lines))

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
        """User + system CPU seconds of the bot so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def threads(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))

    def stop(self):
        """SIGTERM; returns the exit code (None when it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(45)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.drainer.join(5)
                return None
        self.drainer.join(5)
        return self.proc.returncode


def client_cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


# ---------------------------------------------------------------------------------------
# 4b. the load


class Load:
    """C chats, each a closed loop of N messages: message k+1 is queued the moment the
    answer to message k reaches sendMessage."""

    def __init__(self, tg, chats, messages):
        self.tg, self.chats, self.n = tg, chats, messages
        self.lock = threading.RLock()
        self.current = {}  # chat -> index of the message waiting for its answer
        self.queued = {}  # (chat, k) -> [(update_id, time queued)]
        self.answers = {}  # (chat, k) -> [time]
        self.busy = []  # (chat, k, time): "a turn is still running" refusals
        self.other = []  # (chat, text): sendMessage calls that answer no message
        self.finished = 0
        self.done = threading.Event()
        self.last_progress = clock()
        self.started = self.ended = None

    def send(self, chat, k):
        text = f"Task chat{chat} msg{k}: reply with one short line."
        with self.lock:
            self.tg.message(
                chat, chat, text, lambda uid, t: self.queued.setdefault((chat, k), []).append((uid, t))
            )

    def on_sent(self, t, chat, text):
        with self.lock:
            self.last_progress = t
            m = TAG.search(text)
            if m:
                tag = (int(m[1]), int(m[2]))
                answers = self.answers.setdefault(tag, [])
                answers.append(t)
                if tag[0] != chat:
                    self.other.append((chat, f"answer for chat {tag[0]}: {text}"))
                elif len(answers) == 1 and self.current.get(chat) == tag[1]:
                    self.advance(chat, t)
            elif text.startswith(BUSY):
                k = self.current.get(chat)
                self.busy.append((chat, k, t))
                log(f"  !! chat {chat}: message {k} refused with {text!r}; sending it again in 50 ms")
                threading.Timer(0.05, self.send, (chat, k)).start()
            else:
                self.other.append((chat, text))

    def advance(self, chat, t):
        k = self.current[chat] + 1
        if k < self.n:
            self.current[chat] = k
            self.send(chat, k)
        else:
            del self.current[chat]
            self.finished += 1
            if self.finished % max(1, len(self.chats) // 4) == 0 or self.finished == len(self.chats):
                log(f"  {self.finished}/{len(self.chats)} chats done")
            if self.finished == len(self.chats):
                self.ended = t
                self.done.set()

    def run(self, stall=60.0):
        self.tg.on_sent = self.on_sent
        with self.lock:
            self.started = clock()
            for chat in self.chats:
                self.current[chat] = 0
                self.send(chat, 0)
        while not self.done.wait(1.0):
            with self.lock:
                if clock() - self.last_progress > stall:
                    log(f"  !! no answer for {stall:g} s; {len(self.current)} chats still waiting")
                    self.ended = self.last_progress
                    break
        time.sleep(2.0)  # late (double) answers
        self.tg.on_sent = None


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = -(-p * len(sorted_values) // 100) - 1  # nearest rank
    return sorted_values[max(0, min(len(sorted_values) - 1, int(k)))]


# ---------------------------------------------------------------------------------------
# 4c. /plan_status


def plan_status(tg, chat, count):
    """`count` requests, each after the previous answer; returns (latencies, texts, stray)."""
    got = []
    arrived = threading.Event()

    def on_sent(t, c, text):
        got.append((t, c, text))
        arrived.set()

    tg.on_sent = on_sent
    latencies, texts = [], []
    for _ in range(count):
        arrived.clear()
        before = len(got)
        _, queued = tg.message(chat, chat, "/plan_status")
        if not arrived.wait(30):
            log("  !! /plan_status: no answer in 30 s")
            break
        t, c, text = got[before]
        latencies.append(t - queued)
        texts.append((c, text))
    time.sleep(1.0)
    tg.on_sent = None
    stray = got[len(latencies):]
    return latencies, texts, stray


# ---------------------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(description="end-to-end benchmark of odek telegram")
    p.add_argument("--bin", required=True, help="the odek binary")
    p.add_argument("--chats", type=int, default=20)
    p.add_argument("--messages", type=int, default=10, help="messages per chat")
    p.add_argument("--idle-seconds", type=float, default=10.0)
    p.add_argument("--plan-requests", type=int, default=100)
    p.add_argument("--keep", action="store_true", help="keep the temporary ODEK_HOME")
    args = p.parse_args()
    if args.chats < 1 or args.messages < 1:
        p.error("--chats and --messages must be at least 1")
    binary = os.path.abspath(args.bin)
    host = machine()
    log(f"machine: {host}")

    chats = [FIRST_CHAT + i for i in range(args.chats)]
    tg, model = FakeTelegram(), ModelServer()
    log(f"fake Bot API on 127.0.0.1:{tg.port}, model server on 127.0.0.1:{model.port}")
    root = tempfile.mkdtemp(prefix="odek-bench-telegram-")
    problems = []
    try:
        home = os.path.join(root, "home")
        odek_home = os.path.join(home, ".odek")
        work = os.path.join(root, "work")
        os.makedirs(odek_home, mode=0o700)
        os.makedirs(work)
        config = {
            "telegram": {
                "api_base": f"http://127.0.0.1:{tg.port}",
                "bot_token": TOKEN,
                "allowed_users": chats,
                "poll_timeout": 5,
            }
        }
        fd = os.open(os.path.join(odek_home, "config.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(config, f)
        env = clean_env(
            home,
            odek_home,
            {
                "ODEK_BASE_URL": f"http://127.0.0.1:{model.port}/v1",
                "ODEK_MODEL": "bench-model",
                "TMPDIR": os.path.join(root, "tmp"),
            },
        )
        os.makedirs(env["TMPDIR"])

        launched = clock()
        bot = Bot(binary, env, work)
        ready = clock() - launched
        exit_code = "not stopped"
        try:
            # (a) idle, once the first long poll is waiting.
            for _ in range(500):
                if tg.polls:
                    break
                time.sleep(0.01)
            time.sleep(1.0)
            start = bot.status()
            polls0, cpu0 = tg.polls, bot.cpu()
            log(f"odek telegram ready in {ready * 1000:.0f} ms (pid {bot.proc.pid}); idle {args.idle_seconds:g} s…")
            time.sleep(args.idle_seconds)
            idle_cpu = bot.cpu() - cpu0
            idle_polls = tg.polls - polls0
            idle = bot.status()

            # (b) load.
            log(f"load: {args.chats} chats × {args.messages} messages…")
            load = Load(tg, chats, args.messages)
            polls0, batches0 = tg.polls, len(tg.batches)
            cpu0, ccpu0 = bot.cpu(), client_cpu()
            load.run()
            load_cpu, load_ccpu = bot.cpu() - cpu0, client_cpu() - ccpu0
            load_polls, batches = tg.polls - polls0, tg.batches[batches0:]
            after_load = bot.status()
            threads = bot.threads()

            # (c) /plan_status from the first chat.
            log(f"/plan_status × {args.plan_requests} from chat {chats[0]}…")
            cpu0 = bot.cpu()
            plan_started = clock()
            plan_lat, plan_texts, plan_stray = plan_status(tg, chats[0], args.plan_requests)
            plan_wall = clock() - plan_started
            plan_cpu = bot.cpu() - cpu0
            end = bot.status()
        finally:
            exit_code = bot.stop()
        log(f"odek telegram stopped: exit {exit_code}")
        with open(os.path.join(odek_home, "telegram", "state.json")) as f:
            state = json.load(f)
        sessions_dir = os.path.join(odek_home, "sessions")
        session_files = sorted(
            e.name for e in os.scandir(sessions_dir) if e.is_file() and re.match(r"^\d{8}-[0-9a-f]{32}\.json$", e.name)
        )
    finally:
        tg.stop()
        model.stop()
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    # ----- checks
    total_updates = tg.next_update - 1000
    expected = {(c, k) for c in chats for k in range(args.messages)}
    missing = sorted(t for t in expected if not load.answers.get(t))
    double = sorted((t, len(v)) for t, v in load.answers.items() if len(v) > 1)
    unknown = sorted(t for t in load.answers if t not in expected)
    redelivered = sorted(uid for uid, times in tg.delivered.items() if len(times) > 1)
    undelivered = [uid for uid in range(1000, tg.next_update) if uid not in tg.delivered]
    plan_bad = [(c, t) for c, t in plan_texts if c != chats[0] or t != NO_PLAN]
    if missing:
        problems.append(f"{len(missing)} message(s) never answered: {missing[:10]}")
    if double:
        problems.append(f"{len(double)} message(s) answered more than once: {double[:10]}")
    if unknown:
        problems.append(f"answers for messages never sent: {unknown[:10]}")
    if load.busy:
        problems.append(
            f"{len(load.busy)} message(s) refused with '{BUSY}…' although the previous answer had "
            f"arrived (each sent again 50 ms later): {[(c, k) for c, k, _ in load.busy][:10]}"
        )
    if load.other:
        problems.append(f"{len(load.other)} unexpected message(s) during the load: {load.other[:5]}")
    if redelivered:
        problems.append(f"{len(redelivered)} update(s) handed out more than once: {redelivered[:10]}")
    if undelivered:
        problems.append(f"{len(undelivered)} update(s) never fetched: {undelivered[:10]}")
    if len(plan_lat) != args.plan_requests or plan_bad or plan_stray:
        problems.append(
            f"/plan_status: {len(plan_lat)}/{args.plan_requests} answered, {len(plan_bad)} unexpected "
            f"({plan_bad[:3]}), {len(plan_stray)} extra message(s) ({plan_stray[:3]})"
        )
    if len(tg.sent) != total_updates:
        problems.append(f"{len(tg.sent)} sendMessage call(s) for {total_updates} update(s)")
    if tg.edits:
        problems.append(f"{len(tg.edits)} editMessageText call(s) (no tool calls ran, so none expected)")
    if tg.refused:
        problems.append(f"{len(tg.refused)} Bot API call(s) refused: {tg.refused[:5]}")
    if model.requests != len(expected) or model.untagged:
        problems.append(
            f"model server: {model.requests} chat completion(s) ({model.untagged} without a tag) "
            f"for {len(expected)} turns"
        )
    if exit_code != 0:
        problems.append(f"odek telegram exited with {exit_code} after SIGTERM (expected 0)")
    if state.get("offset") != tg.next_update:
        problems.append(f"state.json offset {state.get('offset')}, expected {tg.next_update}")
    if len(state.get("chats", {})) != args.chats or len(session_files) != args.chats:
        problems.append(
            f"{len(state.get('chats', {}))} chat(s) in state.json and {len(session_files)} session file(s) "
            f"for {args.chats} chats"
        )
    expected_lines = (READY, "odek telegram: stopping (0 running turn(s)", "odek telegram: stopped")
    odd = [line for line in bot.lines if not line.startswith(expected_lines)]
    if odd:
        problems.append(f"{len(odd)} unexpected stderr line(s) from the bot: {odd[:5]}")

    # ----- figures
    latencies, parts = [], {"wait": [], "before": [], "model": [], "after": []}
    by_batch = {}  # time handed out -> model request times of the batch's turns
    for tag, answers in load.answers.items():
        if tag not in expected:
            continue
        first = answers[0]
        tries = [(uid, t) for uid, t in load.queued.get(tag, []) if t <= first]
        if not tries:
            continue
        uid, queued = tries[-1]
        latencies.append(first - queued)
        delivered = tg.delivered.get(uid, [None])[0]
        calls = [c for c in model.times.get(tag, []) if delivered is not None and c[0] >= delivered]
        if delivered is not None and calls:
            arrived, answered = calls[0]
            parts["wait"].append(delivered - queued)
            parts["before"].append(arrived - delivered)
            parts["model"].append(answered - arrived)
            parts["after"].append(first - answered)
            by_batch.setdefault(delivered, []).append(arrived)
    # The poll loop takes a batch's updates one after another and each turn sends its model
    # request as soon as it is started, so the model requests of one batch come about one
    # update's loop time apart.
    parts["first"], parts["gap"] = [], []
    for delivered, arrivals in by_batch.items():
        arrivals.sort()
        parts["first"].append(arrivals[0] - delivered)
        parts["gap"].extend(b - a for a, b in zip(arrivals, arrivals[1:]))
    latencies.sort()
    for v in parts.values():
        v.sort()
    wall = (load.ended or clock()) - load.started
    answered = len(latencies)
    plan_sorted = sorted(plan_lat)

    ms = lambda v: f"{v * 1000:.1f} ms" if v == v else "–"
    mib = lambda kib: f"{kib / 1024:.1f} MiB"

    print(f"\nMachine: {host}.\n")
    print(
        f"`odek telegram` against a fake Bot API and a model server that answers at once (both "
        f"in the benchmark's Python process); {args.chats} private chats × {args.messages} "
        f"messages, each chat sending its next message as soon as the answer to the previous "
        f"one reached sendMessage; `poll_timeout` 5 s. Model calls: {model.requests} "
        f"({model.streamed} streamed).\n"
    )
    print("| measure | value |")
    print("|---|---|")
    print(f"| start (launch → `odek telegram ⚡` line) | {ms(ready)} |")
    tick = 1 / os.sysconf("SC_CLK_TCK")
    idle_text = f"{idle_cpu:.2f} s" if idle_cpu else f"0 (under one {tick * 1000:g} ms clock tick)"
    print(f"| idle {args.idle_seconds:g} s: CPU | {idle_text}; {idle_polls} long polls |")
    print(f"| idle: RSS | {mib(idle['VmRSS'])} (VmHWM {mib(idle['VmHWM'])}) |")
    print(f"| messages answered | {answered:,} of {len(expected):,} in {wall:.2f} s |")
    print(f"| throughput | **{answered / wall:.1f} messages/s** |")
    print(
        f"| latency p50 / p90 / p99 / max | **{ms(percentile(latencies, 50))}** / "
        f"{ms(percentile(latencies, 90))} / {ms(percentile(latencies, 99))} / "
        f"{ms(latencies[-1]) if latencies else '–'} |"
    )
    print(
        f"| bot CPU under load | {load_cpu:.2f} s in {wall:.1f} s ({100 * load_cpu / wall:.0f} % of one core), "
        f"**{1000 * load_cpu / max(1, answered):.1f} ms a message** |"
    )
    print(
        f"| bot memory | peak RSS (VmHWM) **{mib(after_load['VmHWM'])}**; VmRSS {mib(after_load['VmRSS'])} "
        f"after the load, {mib(end['VmRSS'])} at the end; {threads} threads |"
    )
    print(
        f"| long polls under load | {load_polls} getUpdates, {len(batches)} with updates, "
        f"{sum(batches) / max(1, len(batches)):.2f} updates each on average (max {max(batches, default=0)}) |"
    )
    print(
        f"| `/plan_status` × {len(plan_lat)} p50 / p90 / p99 / max | **{ms(percentile(plan_sorted, 50))}** / "
        f"{ms(percentile(plan_sorted, 90))} / {ms(percentile(plan_sorted, 99))} / "
        f"{ms(plan_sorted[-1]) if plan_sorted else '–'} (bot CPU {1000 * plan_cpu / max(1, len(plan_lat)):.1f} ms "
        f"each, {len(plan_lat) / plan_wall:.0f}/s) |"
    )
    print(
        f"| sendMessage calls / updates | {len(tg.sent):,} / {total_updates:,} ({len(load.busy)} busy refusals, "
        f"{len(double)} double and {len(missing)} missing answers) |"
    )
    print(
        f"| client CPU (this script) under load | {load_ccpu:.2f} s ({100 * load_ccpu / wall:.0f} % of one core) |"
    )
    print(f"| exit after SIGTERM | {exit_code} |")

    print("\nWhere a turn's time goes (from the fake servers' clocks):\n")
    print("| part | p50 | p90 | max |")
    print("|---|---|---|---|")
    names = {
        "wait": "queued update → handed out by getUpdates",
        "before": "handed out → model request read (the bot: offset saved, session opened, request built)",
        "model": "model server (request read → answer written)",
        "after": "model answer written → sendMessage read (the bot: session saved, reply sent)",
        "first": "handed out → the batch's first model request (one update through the poll loop)",
        "gap": "between the model requests of one batch (the poll loop's time per update)",
    }
    for key, name in names.items():
        v = parts[key]
        print(f"| {name} | {ms(percentile(v, 50))} | {ms(percentile(v, 90))} | {ms(v[-1]) if v else '–'} |")

    if problems:
        print("\n**Problems:**\n")
        for line in problems:
            print(f"- {line}")
        for line in problems:
            log(f"!! {line}")
        sys.exit(1)
    print("\nEvery message got exactly one answer; no stray messages, no refused calls.")


if __name__ == "__main__":
    main()
