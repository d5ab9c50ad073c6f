#!/usr/bin/env python3
"""The idle cost of `odek schedule daemon` (called by bench/run.sh with
ODEK_BENCH_ONLY=schedules): a home with 20 jobs that do not fire during the measurement
(`0 3 1 1 *`), the daemon started, then its CPU time (user + system, from /proc/PID/stat)
and RSS sampled over `--seconds` (60). Standard library only. Prints a Markdown table.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=20)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="odek-schedule-idle-")
    home, odek_home, work = measure.bench_home(root, "idle", {})
    env = measure.clean_env(home, odek_home, {"ODEK_BASE_URL": "http://127.0.0.1:9/v1"})
    for i in range(args.jobs):
        subprocess.run(
            [args.bin, "schedule", "add", "--cron", "0 3 1 1 *", "--tz", "UTC", "--name", f"job-{i:02d}", f"task {i}"],
            env=env, cwd=work, check=True, capture_output=True,
        )
    daemon = subprocess.Popen([args.bin, "schedule", "daemon"], env=env, cwd=work,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    start = cpu_seconds(daemon.pid)
    rss = []
    for _ in range(args.seconds):
        time.sleep(1.0)
        rss.append(rss_kib(daemon.pid))
    used = cpu_seconds(daemon.pid) - start
    daemon.terminate()
    daemon.wait(timeout=30)
    print("| daemon, idle | figure |")
    print("|---|---|")
    print(f"| jobs | {args.jobs} (none due) |")
    print(f"| CPU over {args.seconds} s | {used * 1000:.0f} ms ({100 * used / args.seconds:.3f} % of one core) |")
    print(f"| RSS | {max(rss) / 1024:.1f} MiB (max of {len(rss)} samples) |")


if __name__ == "__main__":
    main()
