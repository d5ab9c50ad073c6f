#!/usr/bin/env python3
"""The loop's own cost per iteration (issue 48), end to end: a model server in this script
(standard library only) has each run call `read_file` of a small file once per model call,
ITERATIONS-1 times, then answer — no child processes, so the CPU is odek's own work. Each run
is `odek run --ephemeral --no-stream`, with every default feature on (memory, skills,
sub-agents' tool, planning) and with `--no-memory --no-skills --no-subagents`, interleaved.
Prints CPU per iteration (median of --reps runs) and peak RSS (GNU time, median of 5).

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


def answerer(iterations):
    def answer(request, size):
        done = sum(1 for m in request.get("messages") or [] if m.get("role") == "tool")
        if done < iterations - 1:
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"call_{done}", "type": "function",
                                "function": {"name": "read_file", "arguments": json.dumps({"path": "notes.txt"})}}],
            }
        return {"role": "assistant", "content": "Read them all."}
    return answer


VARIANTS = {
    "default": [],
    "lean": ["--no-memory", "--no-skills", "--no-subagents"],
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--perf", metavar="DIR")
    args = p.parse_args()
    binary = os.path.abspath(args.bin)
    server, port = measure.start_model_server(answerer(args.iterations))
    with tempfile.TemporaryDirectory(prefix="odek-bench-") as root:
        home, odek_home, work = measure.bench_home(root, "loop")
        with open(os.path.join(work, "notes.txt"), "w") as out:
            out.write("".join(f"line {i}: notes for the benchmark run\n" for i in range(1, 41)))
        env = measure.clean_env(home, odek_home, {
            "ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model"})
        argv = {name: [binary, "run", "--ephemeral", "--no-stream", "--max-iter", str(args.iterations + 1),
                      *flags, "read the notes"]
                for name, flags in VARIANTS.items()}
        for name in VARIANTS:
            measure.run_once(argv[name], env, cwd=work, check=measure.expect_ok(name, "Read them all"))
        if args.perf:
            os.makedirs(args.perf, exist_ok=True)
            data = os.path.join(os.path.abspath(args.perf), "perf.data")
            subprocess.run(["perf", "record", "-F", "4999", "--call-graph", "dwarf,16384", "-o", data,
                            "--", *argv["default"]], env=env, cwd=work, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            server.shutdown()
            print(data)
            return
        samples = {name: measure.Sample() for name in VARIANTS}
        for _ in range(args.reps):
            for name in VARIANTS:
                measure.run_once(argv[name], env, cwd=work, sample=samples[name])
        for name in VARIANTS:
            measure.measure_rss(argv[name], env, cwd=work, sample=samples[name], runs=5)
    server.shutdown()
    print(f"\nMachine: {measure.machine()}.\n")
    print(f"| {args.iterations} iterations | CPU (median) | per iteration | peak RSS |")
    print("|---|---|---|---|")
    for name, label in (("default", "every default feature"), ("lean", "`--no-memory --no-skills --no-subagents`")):
        s = samples[name]
        cpu = statistics.median(s.cpu)
        print(f"| {label} | {cpu * 1000:.1f} ms | {cpu / args.iterations * 1000:.3f} ms | {measure.rss_text(s)} |")


if __name__ == "__main__":
    main()
