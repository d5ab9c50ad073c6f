#!/usr/bin/env python3
"""What installed skills cost a run (called by bench/run.sh with ODEK_BENCH_ONLY=skills).

Homes with 0, 10 and 200 skills in `<home>/skills`, each a folder shaped like the public
packs (a `SKILL.md` with a ~230-character description, license, metadata, `allowed-tools`,
a body of ~2 KB; `scripts/` and `references/` beside it). For each home, interleaved:
`odek run --ephemeral` of one model call (wall and CPU from os.wait4: start-up, discovery of
the skills, the request, the answer), and the bytes of its first request (what a provider
bills as input before any cache; the skills block and the two tools included). Also
`odek skill list` with 200 skills. Standard library only. Prints a Markdown table.
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
from weight import spawn  # noqa: E402

DESCRIPTION = (
    "Toolkit for the {n} workflow: reads the project's configuration, runs the checks in "
    "scripts/, and writes a short report. Use when the user asks about {n}, mentions its "
    "files, or wants its checks run before a release."
)


def write_skills(skills_dir, count):
    body = "".join(f"{i}. Step {i} of the workflow: read, check, report.\n" for i in range(1, 40))
    for i in range(count):
        name = f"workflow-{i:03d}"
        d = os.path.join(skills_dir, name)
        os.makedirs(os.path.join(d, "scripts"))
        os.makedirs(os.path.join(d, "references"))
        with open(os.path.join(d, "SKILL.md"), "w") as f:
            f.write(
                f"---\nname: {name}\ndescription: {json.dumps(DESCRIPTION.format(n=name))}\n"
                "license: Apache-2.0\nmetadata:\n  author: bench\n  version: 1.0\n"
                f"allowed-tools: Bash Read\n---\n\n# {name}\n\n{body}"
            )
        with open(os.path.join(d, "scripts", "check.py"), "w") as f:
            f.write("print('ok')\n")
        with open(os.path.join(d, "references", "notes.md"), "w") as f:
            f.write("# Notes\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--counts", default="0,10,200")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]

    first_bytes = {}
    lock = threading.Lock()

    def answer(request, size):
        task = next(m["content"] for m in request["messages"] if m["role"] == "user")
        with lock:
            first_bytes.setdefault(task, size)
        return {"role": "assistant", "content": "done"}

    server, port = measure.start_model_server(answer)
    root = tempfile.mkdtemp(prefix="odek-skills-bench-")
    homes = {}
    for count in counts:
        home, odek_home, work = measure.bench_home(root, f"s{count}", {})
        write_skills(os.path.join(odek_home, "skills"), count)
        env = measure.clean_env(
            home,
            odek_home,
            {"ODEK_BASE_URL": f"http://127.0.0.1:{port}/v1", "ODEK_MODEL": "bench-model"},
        )
        homes[count] = (env, work)

    samples = {c: [] for c in counts}
    for run in range(args.runs):
        for count in counts:
            env, work = homes[count]
            task = f"skills {count} run {run}"
            samples[count].append(spawn([args.bin, "run", "--ephemeral", task], env, work))
    lists = []
    env, work = homes[max(counts)]
    for _ in range(args.runs):
        lists.append(spawn([args.bin, "skill", "list"], env, work))
    server.shutdown()

    print("| skills installed | one-call run, CPU (median) | wall (median) | first request |")
    print("|---|---|---|---|")
    for count in counts:
        s = samples[count]
        sizes = [first_bytes[f"skills {count} run {r}"] for r in range(args.runs)]
        print(
            f"| {count} | {statistics.median(x[1] for x in s) * 1000:.1f} ms "
            f"| {statistics.median(x[0] for x in s) * 1000:.1f} ms "
            f"| {statistics.median(sizes):,.0f} bytes |"
        )
    print(
        f"\n`odek skill list` with {max(counts)} skills: CPU median "
        f"{statistics.median(x[1] for x in lists) * 1000:.1f} ms, wall median "
        f"{statistics.median(x[0] for x in lists) * 1000:.1f} ms."
    )


if __name__ == "__main__":
    main()
