#!/usr/bin/env python3
"""`batch_read` of 10 files against 10 `read_file` iterations, end to end (called by
bench/run.sh with ODEK_BENCH_ONLY=batch).

A model server in this script (standard library only) answers each run by its task: the
`batch` run calls `batch_read` once with the 10 files, then answers; the `single` run calls
`read_file` for one file per model call, 10 calls, then answers. Both read the same 10 files
of 60 lines. Measured, runs interleaved: model calls, request bytes the model was sent in
all (what a provider bills as input), wall time, and odek's CPU time. Prints a Markdown table.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402

FILES = [f"src/module_{i}.py" for i in range(10)]


class Counts:
    lock = threading.Lock()
    calls = {}  # task -> model calls
    bytes = {}  # task -> request bytes


def call(step, name, args):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{step}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        ],
    }


def answer(request, size):
    task = next((m.get("content") or "" for m in request.get("messages") or [] if m.get("role") == "user"), "")
    done = sum(1 for m in request.get("messages") or [] if m.get("role") == "tool")
    with Counts.lock:
        Counts.calls[task] = Counts.calls.get(task, 0) + 1
        Counts.bytes[task] = Counts.bytes.get(task, 0) + size
    if task.startswith("batch"):
        if done == 0:
            return call(1, "batch_read", {"files": [{"path": f} for f in FILES]})
    elif done < len(FILES):
        return call(done + 1, "read_file", {"path": FILES[done]})
    return {"role": "assistant", "content": "Read all ten modules; nothing is missing."}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    binary = os.path.abspath(args.bin)
    server, port = measure.start_model_server(answer)
    samples = {"batch": measure.Sample(), "single": measure.Sample()}
    with tempfile.TemporaryDirectory(prefix="odek-bench-") as root:
        home, odek_home, work = measure.bench_home(root, "batch")
        os.makedirs(os.path.join(work, "src"))
        for f in FILES:
            with open(os.path.join(work, f), "w") as out:
                out.write("".join(f"def function_{i}(x):\n    return x * {i}\n" for i in range(30)))
        env = measure.clean_env(home, odek_home, {
            "ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model"})
        argv = {
            name: [binary, "run", "--ephemeral", "--no-stream", "--no-planning", f"{name} read the modules"]
            for name in samples
        }
        for name in samples:  # a checked run of each first
            measure.run_once(argv[name], env, cwd=work, check=measure.expect_ok(name, "Read all ten"))
        for _ in range(args.reps):
            for name in samples:
                measure.run_once(argv[name], env, cwd=work, sample=samples[name])
    server.shutdown()
    runs = args.reps + 1
    print(f"\nMachine: {measure.machine()}.\n")
    print("| 10 files of 60 lines | model calls per run | request bytes per run | wall (median) | odek CPU (median) |")
    print("|---|---|---|---|---|")
    for name, label in (("batch", "one `batch_read`"), ("single", "ten `read_file` iterations")):
        task = f"{name} read the modules"
        s = samples[name]
        print(
            f"| {label} | {Counts.calls[task] // runs} | {Counts.bytes[task] // runs:,} | "
            f"{statistics.median(s.wall) * 1000:.1f} ms | {statistics.median(s.cpu) * 1000:.1f} ms |"
        )


if __name__ == "__main__":
    main()
