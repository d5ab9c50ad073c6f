#!/usr/bin/env python3
"""What sub-agents cost, end to end (called by bench/run.sh with ODEK_BENCH_ONLY=subagents).

A model server in this script (standard library only) answers each conversation by its
first user message: the parent's (`delegate eight`) calls `delegate_tasks` with 8 tasks, then
answers; each child reads `notes.txt` 9 times (10 model calls), then answers. Measured:

  1. one child start: `odek subagent --task FILE` on its own, with a task whose model answers
     at once — wall and CPU (the process, its runtime, its session, one model call, the
     envelope) and peak RSS (GNU time);
  2. the whole: a parent run delegating 8 tasks × 10 iterations (3 at once, the default) —
     wall, CPU of the parent and all children, peak RSS of each child (sampled from
     /proc while they run).

Prints a Markdown table.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402

TASKS = 8
CHILD_ITERATIONS = 10


def call(step, name, args):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{step}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


def answer(request, _size):
    messages = request.get("messages") or []
    first = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    done = sum(1 for m in messages if m.get("role") == "tool")
    if first == "delegate eight":
        if done == 0:
            tasks = [{"goal": f"task {i}: read the notes"} for i in range(1, TASKS + 1)]
            return call(1, "delegate_tasks", {"tasks": tasks})
        return {"role": "assistant", "content": "All eight are done."}
    if first.startswith("quick"):
        return {"role": "assistant", "content": "done at once"}
    if done < CHILD_ITERATIONS - 1:
        return call(done + 1, "read_file", {"path": "notes.txt"})
    return {"role": "assistant", "content": "Read the notes nine times."}


def child_rss_sampler(stop, peaks):
    """Peak RSS (VmHWM, KiB) of every `odek subagent` process seen, by pid."""
    while not stop.is_set():
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"subagent\0--task" not in f.read():
                        continue
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            kib = int(line.split()[1])
                            peaks[pid] = max(peaks.get(pid, 0), kib)
            except OSError:
                continue
        time.sleep(0.002)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    binary = os.path.abspath(args.bin)
    server, port = measure.start_model_server(answer)
    config = {"stream": False, "context_window": 100000,
              "dangerous": {"classes": {"system_write": "allow"}}}
    start, whole = measure.Sample(), measure.Sample()
    peaks = {}
    with tempfile.TemporaryDirectory(prefix="odek-bench-") as root:
        home, odek_home, work = measure.bench_home(root, "subagents", config)
        with open(os.path.join(work, "notes.txt"), "w") as f:
            f.write("".join(f"line {i}: notes for the sub-agents\n" for i in range(1, 61)))
        env = measure.clean_env(home, odek_home, {
            "ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model",
            "TMPDIR": root})
        task = os.path.join(root, "task.json")
        with open(task, "w") as f:
            json.dump({"goal": "quick: answer", "index": 1, "total": 1, "max_iter": 5,
                       "timeout_seconds": 60}, f)
        child = [binary, "subagent", "--task", task]
        parent = [binary, "run", "--ephemeral", "delegate eight"]
        measure.run_once(child, env, cwd=work, check=measure.expect_ok("odek subagent", '"status":"ok"'))
        measure.run_once(parent, env, cwd=work, check=measure.expect_ok("odek run", "All eight"))
        for _ in range(args.reps * 4):
            measure.run_once(child, env, cwd=work, sample=start)
        measure.measure_rss(child, env, cwd=work, sample=start, runs=5)
        stop = threading.Event()
        sampler = threading.Thread(target=child_rss_sampler, args=(stop, peaks), daemon=True)
        sampler.start()
        for _ in range(args.reps):
            measure.run_once(parent, env, cwd=work, sample=whole)
        stop.set()
        sampler.join()
    server.shutdown()
    s, w = start.ms(), whole.ms()
    child_peaks = sorted(peaks.values())
    print(f"\nMachine: {measure.machine()}.\n")
    print("| measurement | figure |")
    print("|---|---|")
    print(f"| one child start (`odek subagent`, one model call), {s['n']} runs | wall median {s['median']:.1f} ms; "
          f"CPU median {statistics.median(start.cpu) * 1000:.1f} ms; peak RSS {measure.rss_text(start)} |")
    print(f"| parent delegating {TASKS} tasks × {CHILD_ITERATIONS} iterations (3 at once), {w['n']} runs | "
          f"wall median {w['median']:.0f} ms; CPU of parent and children median {statistics.median(whole.cpu) * 1000:.0f} ms |")
    if child_peaks:
        print(f"| peak RSS of each child, {len(child_peaks)} children sampled | median "
              f"{statistics.median(child_peaks) / 1024:.1f} MiB, max {child_peaks[-1] / 1024:.1f} MiB |")


if __name__ == "__main__":
    main()
