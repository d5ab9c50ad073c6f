#!/usr/bin/env python3
"""What a `PreToolUse` hook on every call costs a run, end to end (called by bench/run.sh with
ODEK_BENCH_ONLY=hooks).

A model server in this script (standard library only) has each run call `read_file` 20
times, one call per model call, then answer. The same run is measured without hooks and
with one `PreToolUse` hook on every call that exits at once (`exit 0`), runs interleaved:
wall time and CPU time (odek's and its hooks'). Prints a Markdown table and the cost per
call.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402

CALLS = 20


def answer(request, size):
    done = sum(1 for m in request.get("messages") or [] if m.get("role") == "tool")
    if done < CALLS:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"call_{done}", "type": "function",
                            "function": {"name": "read_file", "arguments": json.dumps({"path": "notes.txt"})}}],
        }
    return {"role": "assistant", "content": "Read it twenty times."}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--reps", type=int, default=15)
    args = p.parse_args()
    binary = os.path.abspath(args.bin)
    server, port = measure.start_model_server(answer)
    samples = {"plain": measure.Sample(), "hook": measure.Sample()}
    with tempfile.TemporaryDirectory(prefix="odek-bench-") as root:
        envs, works = {}, {}
        for name in samples:
            home, odek_home, work = measure.bench_home(root, name)
            with open(os.path.join(work, "notes.txt"), "w") as out:
                out.write("a line of notes\n" * 40)
            if name == "hook":
                with open(os.path.join(odek_home, "config.json"), "w") as cfg:
                    json.dump({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "exit 0"}]}]}}, cfg)
            envs[name] = measure.clean_env(home, odek_home, {
                "ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model"})
            works[name] = work
        argv = [binary, "run", "--ephemeral", "--no-stream", "--no-planning", "read the notes"]
        for name in samples:  # a checked run of each first
            measure.run_once(argv, envs[name], cwd=works[name], check=measure.expect_ok(name, "twenty"))
        for _ in range(args.reps):
            for name in samples:
                measure.run_once(argv, envs[name], cwd=works[name], sample=samples[name])
    server.shutdown()
    print(f"\nMachine: {measure.machine()}.\n")
    print(f"| {CALLS} `read_file` calls | wall (median) | CPU, odek and its hooks (median) |")
    print("|---|---|---|")
    for name, label in (("plain", "no hooks"), ("hook", "a `PreToolUse` hook on every call")):
        s = samples[name]
        print(f"| {label} | {statistics.median(s.wall) * 1000:.1f} ms | {statistics.median(s.cpu) * 1000:.1f} ms |")
    extra_wall = (statistics.median(samples["hook"].wall) - statistics.median(samples["plain"].wall)) / CALLS
    extra_cpu = (statistics.median(samples["hook"].cpu) - statistics.median(samples["plain"].cpu)) / CALLS
    print(f"\nPer call: +{extra_wall * 1000:.2f} ms wall, +{extra_cpu * 1000:.2f} ms CPU.")


if __name__ == "__main__":
    main()
