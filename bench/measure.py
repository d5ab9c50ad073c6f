#!/usr/bin/env python3
"""End-to-end measurements of a built odek binary (called by bench/run.sh).

Measures, with nothing but the Python standard library:

  1. the size of the binary;
  2. `odek --version` start-up time;
  3. a 20-iteration `odek run` against bench/scripted_server.py (streamed and buffered):
     wall time, CPU time and peak RSS (through GNU time when it is installed);
  4. `odek session list` with 10,000 sessions on disk, interleaved with `odek --version`;
  5. what saving costs: 400-iteration runs with autosave against the same runs with
     `--ephemeral` — one that keeps a plan current (a change every ~3 iterations) and trims
     its context from about iteration 50, and a plain read-only one;
  6. the prompt cache (`--only cache`, part of `all`): 36-iteration runs that keep a 5-step
     plan current (a change every 3 iterations, no trimming), with the plan message last
     (`planning.placement` `tail`, the default), where the transcript keeps it (`head`) and
     with `--no-planning`: the share of request bytes that are a byte-identical prefix of
     the run's previous request (counted by the server, see scripted_server.py's `cache`
     scenario) and the cached-token share `odek usage --json` reports from the usage the
     server returns (it simulates a provider's prompt cache).

Every timing spawns the process from Python (`subprocess.Popen` + `os.wait4`), so the fixed
cost of spawning is in every figure alike; the comparisons interleave their commands so
that a busy neighbour slows both sides equally. Prints the figures as it goes and a
Markdown table at the end.
"""

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def log(*args):
    print(*args, file=sys.stderr, flush=True)


class Sample:
    """Wall times and CPU times (s) of repeated runs, and peak RSS (KiB) of a few more."""

    def __init__(self):
        self.wall, self.cpu, self.rss = [], [], []

    def add(self, wall, rusage):
        self.wall.append(wall)
        self.cpu.append(rusage.ru_utime + rusage.ru_stime)

    def ms(self, values=None):
        v = [x * 1000 for x in (values if values is not None else self.wall)]
        return {
            "n": len(v),
            "mean": statistics.fmean(v),
            "median": statistics.median(v),
            "min": min(v),
            "max": max(v),
        }


def fmt_ms(stats):
    return f"{stats['median']:.2f} ms (mean {stats['mean']:.2f}, min {stats['min']:.2f}, n={stats['n']})"


def run_once(argv, env, cwd=None, sample=None, check=None):
    """Runs argv to completion; records wall time and the child's rusage in `sample`."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if check else subprocess.DEVNULL,
        stderr=subprocess.PIPE if check else subprocess.DEVNULL,
    )
    out = err = b""
    if check:
        out, err = proc.communicate()
        # communicate() reaped the child; its rusage is the delta of RUSAGE_CHILDREN, so
        # checked runs are not timed. Callers time unchecked runs only.
        rc = proc.returncode
        check(rc, out.decode(errors="replace"), err.decode(errors="replace"))
        return
    _, status, rusage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    if sample is not None:
        sample.add(wall, rusage)


def gnu_time():
    """`/usr/bin/time` when it is GNU time (it can write `%M`, the peak RSS in KiB)."""
    try:
        with tempfile.NamedTemporaryFile() as out:
            subprocess.run(
                ["/usr/bin/time", "-f", "%M", "-o", out.name, "true"],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            int(open(out.name).read().split()[-1])
        return "/usr/bin/time"
    except (OSError, ValueError, IndexError, subprocess.CalledProcessError):
        return None


GNU_TIME = gnu_time()


def measure_rss(argv, env, cwd=None, sample=None, runs=3):
    """Peak RSS (KiB) of `runs` runs, added to `sample.rss`.

    Measured through GNU time, whose own RSS (~2 MiB) is what the child inherits before it
    execs odek. Without GNU time the fallback is the rusage from `os.wait4`, but Linux counts
    the pre-exec address space of a child forked from this Python process (~20-30 MiB here)
    in its peak, so the fallback is an upper bound and is labelled as such."""
    for _ in range(runs):
        if GNU_TIME:
            with tempfile.NamedTemporaryFile() as out:
                subprocess.run(
                    [GNU_TIME, "-f", "%M", "-o", out.name] + argv,
                    env=env,
                    cwd=cwd,
                    check=True,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                kib = int(open(out.name).read().split()[-1])
        else:
            proc = subprocess.Popen(
                argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            _, status, rusage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            kib = rusage.ru_maxrss
        sample.rss.append(kib)


def rss_text(sample):
    """Median and max peak RSS in MiB, marked as an upper bound without GNU time."""
    bound = "" if GNU_TIME else "≤ "
    return (
        f"{bound}{statistics.median(sample.rss) / 1024:.1f} MiB "
        f"(max {max(sample.rss) / 1024:.1f}, {len(sample.rss)} runs)"
    )


def expect_ok(what, needle=None):
    def check(rc, out, err):
        if rc != 0 or (needle is not None and needle not in out):
            raise SystemExit(f"{what}: exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}")

    return check


def clean_env(home, odek_home, extra=None):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "ODEK_HOME": odek_home,
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }
    env.update(extra or {})
    return env


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()
    return (
        f"{os.cpu_count()} × {cpu}, Linux {platform.release()}, "
        f"load average at start {load[0]:.2f}"
    )


# ---------------------------------------------------------------------------------------
# 1–2. size and start-up


def has_symbol_table(binary):
    """True when the ELF file has a SHT_SYMTAB section, i.e. it was not stripped. The release
    profile strips; `cargo bench` links an unstripped bench-profile binary to the same path."""
    import struct

    with open(binary, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:  # ELF64 only
            return False
        shoff = struct.unpack_from("<Q", header, 0x28)[0]
        shentsize, shnum = struct.unpack_from("<HH", header, 0x3A)
        f.seek(shoff)
        table = f.read(shentsize * shnum)
    return any(
        struct.unpack_from("<I", table, i * shentsize + 4)[0] == 2 for i in range(shnum)
    )


def binary_size(binary):
    size = os.path.getsize(binary)
    if has_symbol_table(binary):
        log(
            f"warning: {binary} is not stripped: it is probably the bench-profile binary "
            "that `cargo bench` leaves there; rebuild with `cargo build --release --locked`"
        )
    log(f"binary: {binary}: {size} bytes ({size / 2**20:.2f} MiB)")
    return size


def version_startup(binary, runs, env):
    run_once([binary, "--version"], env, check=expect_ok("odek --version", "odek"))
    sample = Sample()
    for _ in range(5):
        run_once([binary, "--version"], env)
    for _ in range(runs):
        run_once([binary, "--version"], env, sample=sample)
    measure_rss([binary, "--version"], env, sample=sample)
    log(f"odek --version: {fmt_ms(sample.ms())}, peak RSS {rss_text(sample)}")
    return sample


# ---------------------------------------------------------------------------------------
# 3. a 20-iteration run against the scripted server


def start_server(iterations, scenario="plain"):
    server = subprocess.Popen(
        [
            sys.executable,
            os.path.join(HERE, "scripted_server.py"),
            "--iterations",
            str(iterations),
            "--scenario",
            scenario,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    port = int(server.stdout.readline())
    return server, port


def server_stats(port):
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as r:
        return json.load(r)


def server_requests(port):
    return server_stats(port)["chat_requests"]


def server_reset(port):
    import urllib.request

    request = urllib.request.Request(f"http://127.0.0.1:{port}/reset", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=5) as r:
        r.read()


def start_model_server(answer):
    """A model server on 127.0.0.1 (port 0) in a thread: `POST` bodies go to
    `answer(request, body_bytes)`, which returns the assistant message (sent as one JSON
    answer with a fixed usage); `GET` lists no model. Returns (server, port); stop it with
    `server.shutdown()`."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply({"data": []})

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            message = answer(json.loads(raw), len(raw))
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            self.reply({"choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def write_config(odek_home, config):
    """The global config.json of a benchmark's ODEK_HOME, private as odek requires."""
    path = os.path.join(odek_home, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    os.chmod(path, 0o600)


def bench_home(root, name, config=None):
    """(home, odek_home, work) under `root` for one benchmark, created, with `config` as the
    global config when given."""
    home = os.path.join(root, f"{name}-home")
    odek_home = os.path.join(home, ".odek")
    work = os.path.join(root, f"{name}-work")
    os.makedirs(odek_home)
    os.makedirs(work)
    if config is not None:
        write_config(odek_home, config)
    return home, odek_home, work


def agent_run(binary, reps, iterations, root):
    home, odek_home, work = bench_home(root, "run", {"dangerous": {"action": "allow"}})
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write("".join(f"line {i}: notes for the benchmark run\n" for i in range(1, 41)))

    server, port = start_server(iterations)
    try:
        env = clean_env(
            home,
            odek_home,
            {"ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model"},
        )
        task = "Run the scripted steps and report."
        variants = {
            "streamed": [binary, "run", "--ephemeral", task],
            "buffered": [binary, "run", "--ephemeral", "--no-stream", task],
        }
        samples = {name: Sample() for name in variants}
        for name, argv in variants.items():
            before = server_requests(port)
            run_once(argv, env, cwd=work, check=expect_ok(f"odek run ({name})", "Finished: ran"))
            made = server_requests(port) - before
            if made != iterations:
                raise SystemExit(f"odek run ({name}) made {made} model calls, expected {iterations}")
        before = server_requests(port)
        for _ in range(reps):
            for name, argv in variants.items():
                run_once(argv, env, cwd=work, sample=samples[name])
        made = server_requests(port) - before
        if made != iterations * reps * len(variants):
            raise SystemExit(f"timed runs made {made} model calls, expected {iterations * reps * 2}")
        for name, argv in variants.items():
            measure_rss(argv, env, cwd=work, sample=samples[name], runs=5)
        sessions = os.path.join(odek_home, "sessions")
        if os.path.isdir(sessions) and os.listdir(sessions):
            raise SystemExit("--ephemeral runs saved a session")
    finally:
        server.terminate()
        server.wait()
    for name, s in samples.items():
        log(
            f"{iterations}-iteration run, {name}: wall {fmt_ms(s.ms())}; "
            f"CPU {statistics.median(s.cpu) * 1000:.1f} ms; peak RSS {rss_text(s)}"
        )
    return samples


# ---------------------------------------------------------------------------------------
# 4. session list with many sessions


def write_sessions(odek_home, count):
    """Writes `count` session files and a consistent index.json, in the format of
    src/session/ (Session and SessionSummary, serde field order)."""
    sessions = os.path.join(odek_home, "sessions")
    os.makedirs(sessions, mode=0o700)
    index = []
    base = 1_767_225_600  # 2026-01-01T00:00:00Z
    for n in range(count):
        created = base + n * 2_917  # spread over about a year
        updated = created + (n % 50) * 60
        stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        day = time.strftime("%Y%m%d", time.gmtime(created))
        sid = f"{day}-{hashlib.md5(str(n).encode()).hexdigest()}"
        task = f"task number {n}: refactor the request parser into its own module and add tests"
        messages = [
            {"role": "system", "content": "You are odek, an autonomous agent. " * 8},
            {"role": "user", "content": task},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"src/parser.rs"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "content": "1|fn parse(input: &str) -> Result<Request, Error> {\n" * 10,
                "name": "read_file",
                "tool_call_id": f"call_{n}",
            },
            {"role": "assistant", "content": "Done: the parser lives in src/parser/ now."},
        ]
        session = {
            "id": sid,
            "created_at": stamp(created),
            "updated_at": stamp(updated),
            "model": "deepseek-v4-flash",
            "turns": 1,
            "task": task,
            "messages": messages,
            "input_tokens": 12000 + n,
            "output_tokens": 900,
        }
        path = os.path.join(sessions, f"{sid}.json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(session, f, separators=(",", ":"))
        index.append(
            {
                "id": sid,
                "title": task,
                "created_at": session["created_at"],
                "updated_at": session["updated_at"],
                "turns": 1,
                "model": session["model"],
            }
        )
    index.sort(key=lambda e: (e["updated_at"], e["created_at"], e["id"]), reverse=True)
    path = os.path.join(sessions, "index.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(index, f, separators=(",", ":"))
    return sessions


def session_list(binary, count, runs, root):
    home = os.path.join(root, "list-home")
    odek_home = os.path.join(home, ".odek")
    os.makedirs(odek_home)
    start = time.perf_counter()
    sessions = write_sessions(odek_home, count)
    index = os.path.join(sessions, "index.json")
    log(
        f"wrote {count} sessions in {time.perf_counter() - start:.1f} s "
        f"(index.json {os.path.getsize(index)} bytes)"
    )
    env = clean_env(home, odek_home)
    mtime = os.stat(index).st_mtime_ns
    more = f"and {count - 20} more" if count > 20 else None
    run_once([binary, "session", "list"], env, check=expect_ok("odek session list", more))
    if os.stat(index).st_mtime_ns != mtime:
        raise SystemExit("odek session list rewrote index.json: the generated index is not consistent")
    # That first list checked the index against the directory and recorded the index stamp.
    # The stamp is trusted once the directory has been unchanged for 2 s (as it is in real use
    # between sessions); then `list` reads only the index head.
    time.sleep(2.2)
    commands = {
        "version": [binary, "--version"],
        "list": [binary, "session", "list"],
        "list_all": [binary, "session", "list", "--all"],
    }
    samples = {name: Sample() for name in commands}
    for _ in range(3):
        for argv in commands.values():
            run_once(argv, env)
    for _ in range(runs):
        for name, argv in commands.items():
            run_once(argv, env, sample=samples[name])
    for name, argv in commands.items():
        measure_rss(argv, env, sample=samples[name])
    if os.stat(index).st_mtime_ns != mtime:
        raise SystemExit("index.json was rewritten during the timed runs")
    for name, s in samples.items():
        log(
            f"{' '.join(commands[name][1:])} ({count} sessions): {fmt_ms(s.ms())}, "
            f"peak RSS {rss_text(s)}"
        )
    return samples



# ---------------------------------------------------------------------------------------
# 5. what saving costs on long runs


def first_trim_iteration(events_path):
    """The iteration whose model call first followed a trim, and the plan events seen."""
    iterations = 0
    first_trim = None
    plan_events = 0
    with open(events_path) as f:
        for line in f:
            kind = json.loads(line)["type"]
            if kind == "iteration_completed":
                iterations += 1
            elif kind == "context_trimmed" and first_trim is None:
                first_trim = iterations + 1
            elif kind in ("plan_created", "plan_updated"):
                plan_events += 1
    return first_trim, plan_events, iterations


def saving_cost(binary, reps, iterations, window, root, go=None):
    """CPU of `odek run` with autosave against `--ephemeral`, for the `long` and `readonly`
    scenarios of scripted_server.py (see its docstring). With `go`, the Go original's binary,
    its `odek run --session` against its plain run (which saves nothing) too, interleaved."""
    home, odek_home, work = bench_home(root, "saving")
    with open(os.path.join(work, "big.txt"), "w") as f:
        # ~4 KB, as a typical tool result: source-like lines.
        f.write("".join(f"{i:03}: let value_{i} = compute(input, {i}); // keep going\n" for i in range(80)))
    results = {}
    for scenario in ("long", "readonly"):
        config = {"dangerous": {"action": "allow"}, "max_iterations": iterations + 10}
        if scenario == "long":
            config["context_window"] = window
        write_config(odek_home, config)
        server, port = start_server(iterations, scenario)
        n = 0

        def argv(save, extra=()):
            nonlocal n
            n += 1
            task = f"bench {scenario} run {n}: work through the steps"
            return [binary, "run"] + ([] if save else ["--ephemeral"]) + list(extra) + [task]

        def go_argv(save):
            task = f"bench {scenario} go run {n}: work through the steps"
            return [go, "run", "--max-iter", str(iterations + 10)] + (["--session"] if save else []) + [task]

        try:
            env = clean_env(
                home,
                odek_home,
                {"ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model"},
            )
            # The Go original wants a key; odek's runs go without one, as before.
            go_env = {**env, "ODEK_API_KEY": "bench-key"}
            events = os.path.join(root, f"{scenario}-events.jsonl")
            run_once(
                argv(True, ["--events-jsonl", events]),
                env,
                cwd=work,
                check=expect_ok(f"odek run ({scenario}, calibration)", "Finished"),
            )
            trim, plan_events, made = first_trim_iteration(events)
            if made != iterations:
                raise SystemExit(f"{scenario}: {made} iterations, expected {iterations}")
            names = ["autosave", "ephemeral"] + (["go-session", "go"] if go else [])
            samples = {name: Sample() for name in names}
            for rep in range(reps):
                # Alternate which goes first, so neither side always follows the other.
                for name in names if rep % 2 == 0 else reversed(names):
                    save = name in ("autosave", "go-session")
                    if name.startswith("go"):
                        run_once(go_argv(save), go_env, cwd=work, sample=samples[name])
                    else:
                        run_once(argv(save), env, cwd=work, sample=samples[name])
            sessions = os.path.join(odek_home, "sessions")
            journals = [p for p in os.listdir(sessions) if p.endswith(".journal")]
            if journals:
                raise SystemExit(f"journals left after the runs: {journals}")
        finally:
            server.terminate()
            server.wait()
        auto, eph = (statistics.median(samples[k].cpu) for k in ("autosave", "ephemeral"))
        if go:
            go_save, go_plain = (statistics.median(samples[k].cpu) for k in ("go-session", "go"))
            log(f"{scenario}: the Go original {go_save * 1000:.0f} ms saving, {go_plain * 1000:.0f} ms "
                f"not; odek's autosave {auto / go_save:.2f}× its CPU")
        log(
            f"{iterations}-iteration {scenario} run: CPU autosave {auto * 1000:.0f} ms, "
            f"ephemeral {eph * 1000:.0f} ms ({auto / eph:.2f}×); first trim before iteration "
            f"{trim}; {plan_events} plan events"
        )
        results[scenario] = (samples, trim, plan_events)
    return results


# ---------------------------------------------------------------------------------------
# 6. the prompt cache: where the plan message goes


CACHE_VARIANTS = {
    # name: (extra environment, extra `odek run` flags)
    "tail": ({}, []),
    "head": ({"ODEK_PLANNING_PLACEMENT": "head"}, []),
    "no-planning": ({}, ["--no-planning"]),
    # `tail` with a memory block of 12 facts (~1.3 KB) in every request (docs/MEMORY.md).
    "memory": ({}, []),
    # `memory` with 20 skills installed: the skills block (~4.6 KB) and skill_load/skill_list
    # in every request too (docs/SKILLS.md).
    "skills": ({}, []),
    # `tail` on Anthropic's Messages wire: the server also simulates its breakpoint cache.
    "anthropic": ({"ODEK_PROVIDER": "anthropic"}, []),
}

# What the `memory` variant remembers: (store flag, fact), added with `odek memory add`.
MEMORY_FACTS = [
    ([], "Prefers short answers with the reasoning stated once"),
    ([], "Writes British English; dates as 2026-12-01"),
    ([], "Reviews diffs before commits; wants a test with every fix"),
] + [
    (["--project"], f"Convention {i}: the request parser keeps per-connection state in conn_{i}.rs; test with make test-{i}")
    for i in range(1, 10)
]


def cache_share(binary, reps, iterations, root):
    """Identical-prefix share of the requests of `iterations`-call runs, per plan placement
    (the `cache` scenario of scripted_server.py), and the cached-token share odek reports."""
    work = os.path.join(root, "cache-work")
    os.makedirs(work)
    with open(os.path.join(work, "notes.txt"), "w") as f:
        # ~1.5 KB of notes, read at most iterations.
        f.write("".join(f"note {i:02}: the request parser keeps its state per connection\n" for i in range(1, 26)))
    task = "Work through the notes in notes.txt step by step, keep your plan current, and report."
    results = {}
    for name, (extra_env, flags) in CACHE_VARIANTS.items():
        home = os.path.join(root, f"cache-home-{name}")
        odek_home = os.path.join(home, ".odek")
        os.makedirs(odek_home)
        write_config(odek_home, {"dangerous": {"action": "allow"}})
        server, port = start_server(iterations, "cache")
        try:
            env = clean_env(
                home,
                odek_home,
                dict(
                    {"ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model"},
                    **extra_env,
                ),
            )
            if name == "skills":
                import skills as skills_bench

                skills_bench.write_skills(os.path.join(odek_home, "skills"), 20)
            if name in ("memory", "skills"):
                for flags_, fact in MEMORY_FACTS:
                    run_once([binary, "memory", "add"] + flags_ + [fact], env, cwd=work, check=expect_ok("odek memory add"))
            argv = [binary, "run", "--max-iter", str(iterations + 4)] + flags + [task]
            per_rep = []
            for rep in range(reps):
                server_reset(port)
                run_once(argv, env, cwd=work, check=expect_ok(f"odek run ({name}, rep {rep + 1})", "Finished"))
                stats = server_stats(port)
                if stats["chat_requests"] != iterations:
                    raise SystemExit(
                        f"odek run ({name}) made {stats['chat_requests']} model calls, expected {iterations}"
                    )
                per_rep.append(stats["cache"])
        finally:
            server.terminate()
            server.wait()
        usage = {}

        def read_usage(rc, out, err):
            expect_ok(f"odek usage --json ({name})")(rc, out, err)
            usage.update(json.loads(out))

        run_once([binary, "usage", "--json"], env, check=read_usage)
        if usage.get("runs") != reps or usage.get("iterations") != reps * iterations:
            raise SystemExit(f"odek usage ({name}): expected {reps} runs of {iterations} iterations, got {usage}")
        first = per_rep[0]
        share = 100 * first["prefix_bytes"] / first["bytes"]
        same = all(r == first for r in per_rep)
        if "cached_bytes" in first:
            log(
                f"cache, {name}: breakpoint cache read {first['cached_bytes']}/{first['bytes']} bytes "
                f"= {100 * first['cached_bytes'] / first['bytes']:.1f} %, wrote {first['written_bytes']}"
            )
        log(
            f"cache, {name}: {first['requests'] + first['runs']} requests/run, "
            f"prefix {first['prefix_bytes']}/{first['bytes']} bytes = {share:.1f} % "
            f"({'identical in all' if same else 'DIFFERENT across'} {reps} runs); odek usage: "
            f"{usage['cached_tokens']}/{usage['input_tokens']} cached tokens, plan_bytes {usage['plan_bytes']}"
        )
        results[name] = (per_rep, usage)
    return results


def print_cache_table(cache, iterations):
    print(
        "| variant | requests per run | request bytes | identical-prefix bytes | share | plan bytes "
        "| cached tokens / input tokens (`odek usage`) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, (per_rep, usage) in cache.items():
        first = per_rep[0]
        share = 100 * first["prefix_bytes"] / first["bytes"]
        spread = ""
        if any(r != first for r in per_rep):
            shares = [100 * r["prefix_bytes"] / r["bytes"] for r in per_rep]
            spread = f" (runs: {min(shares):.1f}–{max(shares):.1f} %)"
        label = {
            "tail": "`tail` (default)",
            "head": "`head`",
            "no-planning": "`--no-planning`",
            "memory": "`tail`, memory block of 12 facts",
            "skills": "`tail`, 12 facts and 20 skills",
            "anthropic": "`tail`, Anthropic's Messages wire",
        }[name]
        cached = 100 * usage["cached_tokens"] / usage["input_tokens"] if usage["input_tokens"] else 0.0
        if "cached_bytes" in first:
            read = 100 * first["cached_bytes"] / first["bytes"]
            spread += f"; read from Anthropic's breakpoint cache: {first['cached_bytes']:,} bytes = {read:.1f} %"
        print(
            f"| {label} | {first['requests'] + first['runs']} | {first['bytes']:,} | "
            f"{first['prefix_bytes']:,} | **{share:.1f} %**{spread} | {first['plan_bytes']:,} "
            f"(odek: {usage['plan_bytes'] // len(per_rep):,}) | "
            f"{usage['cached_tokens']:,} / {usage['input_tokens']:,} = {cached:.1f} % |"
        )
    reps = len(next(iter(cache.values()))[0])
    print(
        f"\nRequest and prefix bytes: the {iterations - 1} requests after each run's first, per run; "
        f"plan bytes: the `[Current plan:` messages of all {iterations} requests of a run (the server's "
        f"count, then odek's `plan_bytes`); `odek usage` sums {reps} runs per variant, first "
        "requests (never cached) included."
    )


# ---------------------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(description="end-to-end measurements of the odek binary")
    p.add_argument("--bin", required=True, help="the odek binary")
    p.add_argument("--version-runs", type=int, default=200)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--run-reps", type=int, default=20)
    p.add_argument("--sessions", type=int, default=10_000)
    p.add_argument("--list-runs", type=int, default=100)
    p.add_argument("--saving-iterations", type=int, default=400)
    p.add_argument("--saving-reps", type=int, default=15)
    p.add_argument(
        "--saving-window",
        type=int,
        default=56_000,
        help="context window of the long saving run (trimming starts near iteration 50)",
    )
    p.add_argument("--cache-iterations", type=int, default=36, help="model calls per cache run")
    p.add_argument("--cache-reps", type=int, default=3, help="runs per plan placement")
    p.add_argument(
        "--only",
        choices=["all", "saving", "cache"],
        default="all",
        help="measure everything, or only the saving cost (section 5) or the prompt cache (section 6)",
    )
    p.add_argument("--go", help="the Go original's binary, measured beside odek where given")
    args = p.parse_args()
    binary = os.path.abspath(args.bin)
    go = os.path.abspath(args.go) if args.go else None

    host = machine()
    log(f"machine: {host}")
    if args.only == "saving":
        with tempfile.TemporaryDirectory(prefix="odek-bench-") as root:
            saving = saving_cost(
                binary, args.saving_reps, args.saving_iterations, args.saving_window, root, go
            )
        print(f"\nMachine: {host}.\n")
        print_saving_table(saving, args.saving_iterations)
        return
    if args.only == "cache":
        with tempfile.TemporaryDirectory(prefix="odek-bench-") as root:
            cache = cache_share(binary, args.cache_reps, args.cache_iterations, root)
        print(f"\nMachine: {host}.\n")
        print_cache_table(cache, args.cache_iterations)
        return
    size = binary_size(binary)
    with tempfile.TemporaryDirectory(prefix="odek-bench-") as root:
        version = version_startup(binary, args.version_runs, clean_env(root, os.path.join(root, "v")))
        runs = agent_run(binary, args.run_reps, args.iterations, root)
        listing = session_list(binary, args.sessions, args.list_runs, root)
        saving = saving_cost(
            binary, args.saving_reps, args.saving_iterations, args.saving_window, root, go
        )
        cache = cache_share(binary, args.cache_reps, args.cache_iterations, root)

    v, lv, l, la = (
        version.ms(),
        listing["version"].ms(),
        listing["list"].ms(),
        listing["list_all"].ms(),
    )
    rows = [
        ("binary size (the static release binary)", f"{size:,} bytes ({size / 2**20:.2f} MiB)"),
        (
            f"`odek --version`, {v['n']} runs",
            f"median {v['median']:.2f} ms, mean {v['mean']:.2f} ms, min {v['min']:.2f} ms; "
            f"peak RSS {rss_text(version)}",
        ),
    ]
    for name, s in runs.items():
        w = s.ms()
        cpu = s.ms(s.cpu)
        rows.append(
            (
                f"`odek run --ephemeral{' --no-stream' if name == 'buffered' else ''}`, "
                f"{args.iterations} iterations ({args.iterations - 1} tool calls), {w['n']} runs",
                f"median {w['median']:.1f} ms, mean {w['mean']:.1f} ms, min {w['min']:.1f} ms; "
                f"CPU (odek + tools) median {cpu['median']:.1f} ms; peak RSS {rss_text(s)}",
            )
        )
    rows += [
        (
            f"`odek session list`, {args.sessions:,} sessions, {l['n']} runs",
            f"median {l['median']:.2f} ms, mean {l['mean']:.2f} ms, min {l['min']:.2f} ms; "
            f"peak RSS {rss_text(listing['list'])}",
        ),
        (
            f"`odek session list --all` (prints all {args.sessions:,}), {la['n']} runs",
            f"median {la['median']:.2f} ms, mean {la['mean']:.2f} ms, min {la['min']:.2f} ms",
        ),
        (
            f"`odek --version`, interleaved with the two above, {lv['n']} runs",
            f"median {lv['median']:.2f} ms, mean {lv['mean']:.2f} ms, min {lv['min']:.2f} ms",
        ),
        (
            "`session list` minus `--version` (medians)",
            f"{l['median'] - lv['median']:.2f} ms ({l['median'] / lv['median']:.1f}×)",
        ),
    ]
    print(f"\nMachine: {host}.\n")
    print("| measurement | figure |")
    print("|---|---|")
    for what, figure in rows:
        print(f"| {what} | {figure} |")
    print()
    print_saving_table(saving, args.saving_iterations)
    print()
    print_cache_table(cache, args.cache_iterations)


def print_saving_table(saving, iterations):
    print("| run | CPU with autosave | CPU with `--ephemeral` | ratio |")
    print("|---|---|---|---|")
    for scenario, (samples, trim, plan_events) in saving.items():
        auto = samples["autosave"].ms(samples["autosave"].cpu)
        eph = samples["ephemeral"].ms(samples["ephemeral"].cpu)
        what = (
            f"{iterations} iterations, plan changed {plan_events} times, trimming from iteration {trim}"
            if scenario == "long"
            else f"{iterations} iterations, read-only (no plan, no trimming)"
        )
        print(
            f"| {what}, {auto['n']} runs each | median {auto['median']:.0f} ms "
            f"(min {auto['min']:.0f}) | median {eph['median']:.0f} ms (min {eph['min']:.0f}) "
            f"| {auto['median'] / eph['median']:.2f}× |"
        )
        if "go" in samples:
            gs, gp = (samples[k].ms(samples[k].cpu)["median"] for k in ("go-session", "go"))
            print(f"| the Go original, the same run: `--session` / without | median {gs:.0f} ms "
                  f"({auto['median'] / gs:.2f}× is odek's) | median {gp:.0f} ms | {gs / gp:.2f}× |")


if __name__ == "__main__":
    main()
