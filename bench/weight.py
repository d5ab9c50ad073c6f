#!/usr/bin/env python3
"""Weight of odek binaries side by side (docs/PERFORMANCE.md, "Weight"):

  1. the file's size;
  2. start-up: CPU time (user + system) of `odek --version`, and of a one-call
     `odek run --ephemeral` against bench/scripted_server.py (start, one model call, the
     answer, exit);
  3. a 100-iteration run (shell and read_file calls): its CPU and peak RSS.

Each measurement alternates the binaries (A, B, A, B, …) so a busy neighbour slows both
alike; medians are reported. Standard library only; reuses measure.py's helpers.

    bench/weight.py --bin before=/tmp/odek-old --bin after=target/x86_64-unknown-linux-musl/release/odek

The same binary twice with different `odek run` flags compares settings:

    bench/weight.py --bin memory=$BIN --bin no-memory=$BIN --run-flag no-memory=--no-memory
"""

import argparse
import os
import statistics
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402


def spawn(argv, env, cwd):
    """(wall s, cpu s) of one run, from `os.wait4` (its RSS would count this Python's
    pre-exec pages; measure.measure_rss goes through GNU time for that)."""
    import subprocess
    import time

    start = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {p.stderr.read().decode()[-2000:]}")
    p.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", action="append", required=True, help="NAME=PATH, two or more")
    parser.add_argument("--version-runs", type=int, default=100)
    parser.add_argument("--start-runs", type=int, default=30)
    parser.add_argument("--long-runs", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument(
        "--run-flag", action="append", default=[], help="NAME=FLAG: an extra `odek run` flag for one binary"
    )
    args = parser.parse_args()
    bins = [b.split("=", 1) for b in args.bin]
    run_flags = {}
    for item in args.run_flag:
        name, flag = item.split("=", 1)
        run_flags.setdefault(name, []).append(flag)

    rows = {name: {"size": os.path.getsize(path)} for name, path in bins}
    root = tempfile.mkdtemp(prefix="odek-weight-")
    home, odek_home, work = measure.bench_home(
        root, "weight", {"dangerous": {"action": "allow"}, "max_iterations": 1000}
    )
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write("".join(f"line {i}: notes for the benchmark run\n" for i in range(1, 41)))

    def series(key, runs, argv_of, env):
        samples = {name: [] for name, _ in bins}
        rss = {name: types.SimpleNamespace(rss=[]) for name, _ in bins}
        for _ in range(runs):
            for name, path in bins:
                samples[name].append(spawn(argv_of(name, path), env, work))
                measure.measure_rss(argv_of(name, path), env, cwd=work, sample=rss[name], runs=1)
        for name, _ in bins:
            s = samples[name]
            rows[name][key] = {
                "cpu_ms": statistics.median(x[1] for x in s) * 1000,
                "wall_ms": statistics.median(x[0] for x in s) * 1000,
                "rss_mib": statistics.median(rss[name].rss) / 1024,
            }

    base_env = measure.clean_env(home, odek_home, {})
    series("version", args.version_runs, lambda n, p: [p, "--version"], base_env)
    for key, iterations, runs in [
        ("one_call", 1, args.start_runs),
        ("long", args.iterations, args.long_runs),
    ]:
        server, port = measure.start_server(iterations)
        try:
            env = measure.clean_env(
                home,
                odek_home,
                {"ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model"},
            )
            task = "Run the scripted steps and report."
            series(key, runs, lambda n, p: [p, "run", "--ephemeral"] + run_flags.get(n, []) + [task], env)
        finally:
            server.terminate()
            server.wait()

    print("| | " + " | ".join(name for name, _ in bins) + " |")
    print("|---|" + "---|" * len(bins))
    def line(label, get):
        print(f"| {label} | " + " | ".join(get(rows[name]) for name, _ in bins) + " |")
    line("binary size", lambda r: f"{r['size']:,} bytes ({r['size'] / 1048576:.2f} MiB)")
    line("`odek --version`, CPU (median)", lambda r: f"{r['version']['cpu_ms']:.2f} ms")
    line("`odek --version`, peak RSS (median)", lambda r: f"{r['version']['rss_mib']:.1f} MiB")
    line("one-call run, CPU (median)", lambda r: f"{r['one_call']['cpu_ms']:.1f} ms")
    line("one-call run, wall (median)", lambda r: f"{r['one_call']['wall_ms']:.1f} ms")
    line("one-call run, peak RSS (median)", lambda r: f"{r['one_call']['rss_mib']:.1f} MiB")
    line(f"{args.iterations}-iteration run, CPU (median)", lambda r: f"{r['long']['cpu_ms']:.0f} ms")
    line(f"{args.iterations}-iteration run, peak RSS (median)", lambda r: f"{r['long']['rss_mib']:.1f} MiB")


if __name__ == "__main__":
    main()
